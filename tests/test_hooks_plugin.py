"""The Claude Code plugin folder (plugin/): its manifest, MCP server and hooks agree with
what `imprint hooks install` writes."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from imprint.hooks.events import NATIVE_EVENTS, canonical_event
from imprint.hooks.settings import HookSettings

PLUGIN = Path(__file__).resolve().parents[1] / "plugin"


def test_the_plugin_runs_imprints_server_and_each_default_hook() -> None:
    """plugin.json names the plugin, the local marketplace lists it, .mcp.json runs
    `imprint serve`, and hooks/hooks.json runs `imprint hook EVENT --client claude-code` for
    the events install adds by default, each within a client timeout past its budget."""
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    market = json.loads((PLUGIN / ".claude-plugin" / "marketplace.json").read_text())
    assert manifest["name"] == "imprint"
    assert [p["name"] for p in market["plugins"]] == ["imprint"]
    server = json.loads((PLUGIN / ".mcp.json").read_text())["mcpServers"]["imprint"]
    assert (server["command"], server["args"]) == ("imprint", ["serve"])
    hooks = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]
    wanted = {n for e, n in NATIVE_EVENTS["claude-code"].items() if e != "prompt-submit"}
    assert set(hooks) == wanted
    for native, groups in hooks.items():
        (handler,) = groups[0]["hooks"]
        words = shlex.split(handler["command"])
        event = canonical_event(native)
        assert event is not None
        assert words == ["imprint", "hook", event, "--client", "claude-code"]
        assert handler["timeout"] * 1000 > HookSettings().budget_ms(event)
