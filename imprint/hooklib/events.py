"""The hook events every client sends, by their own names, and the form each client takes
added context in.

One event vocabulary for `imprint hook EVENT`: session-start, prompt-submit, stop,
pre-compact and session-end. Each client's own names are accepted too (`SessionStart`,
`UserPromptSubmit`, Gemini's `BeforeAgent`, Cursor's `beforeSubmitPrompt`, ...). The standard
library only: this runs in every hook process.
"""

from __future__ import annotations

import json

__all__ = [
    "CAPTURE_EVENTS",
    "CLIENTS",
    "CONTEXT_EVENTS",
    "DATA_DIR_OPTION",
    "EVENTS",
    "NATIVE_EVENTS",
    "canonical_event",
    "context_output",
]

CLIENTS = ("claude-code", "codex", "cursor", "gemini")
EVENTS = ("session-start", "prompt-submit", "stop", "pre-compact", "session-end")
CONTEXT_EVENTS = frozenset({"session-start", "prompt-submit"})
CAPTURE_EVENTS = frozenset({"stop", "pre-compact", "session-end"})
# The data dir a hook command names: `python -X imprint_data_dir=DIR launcher.py ...`, read
# from sys._xoptions (`hooks install` writes it, the hook entry and `hooks status` read it).
DATA_DIR_OPTION = "imprint_data_dir"

# The events each client fires, by the names its hook configuration uses. Codex: the
# events its hooks.json documents (Stop fires each turn, so capture still sees it all).
# Cursor's beforeSubmitPrompt cannot add context, so it has no prompt-submit hook.
NATIVE_EVENTS: dict[str, dict[str, str]] = {
    "claude-code": {
        "session-start": "SessionStart",
        "prompt-submit": "UserPromptSubmit",
        "stop": "Stop",
        "pre-compact": "PreCompact",
        "session-end": "SessionEnd",
    },
    "codex": {
        "session-start": "SessionStart",
        "prompt-submit": "UserPromptSubmit",
        "stop": "Stop",
    },
    "gemini": {
        "session-start": "SessionStart",
        "prompt-submit": "BeforeAgent",
        "stop": "AfterAgent",
        "pre-compact": "PreCompress",
        "session-end": "SessionEnd",
    },
    "cursor": {
        "session-start": "sessionStart",
        "stop": "stop",
        "pre-compact": "preCompact",
        "session-end": "sessionEnd",
    },
}

_ALIASES = {
    "sessionstart": "session-start",
    "promptsubmit": "prompt-submit",
    "userpromptsubmit": "prompt-submit",
    "beforesubmitprompt": "prompt-submit",
    "beforeagent": "prompt-submit",
    "stop": "stop",
    "afteragent": "stop",
    "precompact": "pre-compact",
    "precompress": "pre-compact",
    "sessionend": "session-end",
}


def canonical_event(name: str) -> str | None:
    """Imprint's name for an event given by any client's name for it; None when unknown."""
    return _ALIASES.get(name.replace("-", "").replace("_", "").lower())


def context_output(client: str, event: str, text: str) -> str:
    """`text` as the added context `client` reads from a hook's stdout for `event`; empty
    when there is nothing to add (or the client takes no context for it)."""
    if not text or event not in CONTEXT_EVENTS:
        return ""
    native = NATIVE_EVENTS.get(client, {}).get(event)
    if client == "cursor":
        return json.dumps({"additional_context": text}) if native else ""
    if native is None:
        return text + "\n"  # no client named: plain text, which Claude Code also takes
    # Claude Code, Codex and Gemini CLI: the hook-specific output's additional context.
    out = {"hookSpecificOutput": {"hookEventName": native, "additionalContext": text}}
    return json.dumps(out)
