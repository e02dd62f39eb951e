"""`imprint hooks install|status --client codex` and what Codex says of the hooks: the
feature flag's name, each hook's trust, `--trust`, and a Codex that is missing or hangs.

A stand-in `codex` on PATH answers `features list` and `app-server` (`hooks/list`,
`config/batchWrite`) the way Codex 0.171 does, keeping its trust in a file, so these run
without Node; tests/integration/test_two_sessions_clients.py runs the real Codex with
hooks that `--trust` trusted (and no bypass flag)."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

import pytest

from imprint.hooklib.settings import HookSettings
from imprint.hooklib.state import record_run
from imprint.hooks import codex as codex_module
from imprint.hooks.install import install_hooks
from imprint.hooks.status import status_lines

FAKE_CODEX = """\
import hashlib, json, os, sys, time
home = os.environ["CODEX_HOME"]
trust_file = os.path.join(home, "fake-trust.json")
if sys.argv[1:] == ["features", "list"]:
    for name in os.environ.get("FAKE_CODEX_FEATURES", "hooks").split(","):
        print(f"{name:40s} stable             true")
    sys.exit(0)
assert sys.argv[1:] == ["app-server"], sys.argv
if os.environ.get("FAKE_CODEX_HANG"):
    for line in sys.stdin:
        pass  # reads, never answers
    sys.exit(0)

def listed():
    trusted = json.load(open(trust_file)) if os.path.exists(trust_file) else {}
    path = os.path.join(home, "hooks.json")
    hooks = json.load(open(path)).get("hooks", {}) if os.path.exists(path) else {}
    out = []
    for native, groups in hooks.items():
        snake = "".join("_" + c.lower() if c.isupper() else c for c in native).lstrip("_")
        for g, group in enumerate(groups):
            for h, handler in enumerate(group["hooks"]):
                key = f"{path}:{snake}:{g}:{h}"
                digest = "sha256:" + hashlib.sha256(handler["command"].encode()).hexdigest()
                status = "untrusted"
                if key in trusted:
                    status = "trusted" if trusted[key] == digest else "modified"
                out.append({"key": key, "eventName": native[0].lower() + native[1:],
                            "command": handler["command"], "enabled": True,
                            "currentHash": digest, "trustStatus": status})
    return out

for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    result = {}
    if message["method"] == "hooks/list":
        result = {"data": [{"cwd": message["params"]["cwds"][0], "hooks": listed()}]}
    elif message["method"] == "config/batchWrite":
        (edit,) = message["params"]["edits"]
        assert edit["keyPath"] == "hooks.state" and edit["mergeStrategy"] == "upsert"
        trusted = json.load(open(trust_file)) if os.path.exists(trust_file) else {}
        trusted.update({k: v["trusted_hash"] for k, v in edit["value"].items()})
        json.dump(trusted, open(trust_file, "w"))
    print(json.dumps({"id": message["id"], "result": result}), flush=True)
"""


@pytest.fixture
def codex_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """CODEX_HOME in the scratch home, and a PATH with no `codex` on it."""
    home = tmp_path / "home" / ".codex"
    home.mkdir(parents=True)
    monkeypatch.setenv("CODEX_HOME", str(home))
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    return home


def _fake_codex(tmp_path: Path) -> Path:
    """The stand-in `codex`, put on PATH."""
    exe = tmp_path / "bin" / "codex"
    exe.write_text(f"#!{sys.executable}\n{FAKE_CODEX}")
    exe.chmod(0o755)
    return exe


def _install(tmp_path: Path, trust: bool = False) -> list[str]:
    return install_hooks(
        "codex",
        "user",
        HookSettings(),
        home=tmp_path / "home",
        project=tmp_path,
        trust=trust,
    )


def _trusted(codex_home: Path) -> dict[str, str]:
    path = codex_home / "fake-trust.json"
    return json.loads(path.read_text()) if path.exists() else {}


def test_without_codex_on_path_the_current_feature_name_is_written_and_said(
    tmp_path: Path, codex_home: Path
) -> None:
    """No `codex` to ask: `[features] hooks = true` (the name Codex uses since the rename;
    an old `codex_hooks` line becomes it, comments kept), and install says that whether
    Codex trusts the hooks is unknown and how to review them."""
    config = codex_home / "config.toml"
    config.write_text("# mine\n[features]\ncodex_hooks = false\nother = true\n")
    report = _install(tmp_path)
    text = config.read_text()
    assert text.startswith("# mine\n[features]\nhooks = true\nother = true\n")
    assert tomllib.loads(text)["features"] == {"hooks": True, "other": True}
    assert any(line.startswith("codex is not on PATH") and "--trust" in line for line in report)


def test_an_old_codex_gets_the_old_feature_name(
    tmp_path: Path, codex_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Codex whose feature list still says `codex_hooks`: that key is set, `hooks` is not."""
    _fake_codex(tmp_path)
    monkeypatch.setenv("FAKE_CODEX_FEATURES", "codex_hooks,apps")
    _install(tmp_path)
    assert tomllib.loads((codex_home / "config.toml").read_text())["features"] == {
        "codex_hooks": True
    }


def test_install_says_codex_skips_the_untrusted_hooks_and_trust_trusts_only_ours(
    tmp_path: Path, codex_home: Path
) -> None:
    """Installed without --trust: each hook of ours reported as not trusted, with how to
    review it, and nothing trusted. With --trust: exactly Imprint's two hooks are trusted
    (a foreign hook in the same hooks.json is not), at the hash Codex reported, and status
    shows them trusted; a hook changed after (installed again from elsewhere) reads as
    changed."""
    _fake_codex(tmp_path)
    foreign = {"type": "command", "command": "echo someone-else"}
    (codex_home / "hooks.json").write_text(json.dumps({"hooks": {"Stop": [{"hooks": [foreign]}]}}))
    report = _install(tmp_path)
    assert "codex, the session-start hook: not trusted by Codex yet: Codex skips it" in report
    assert "codex, the stop hook: not trusted by Codex yet: Codex skips it" in report
    assert any("--trust" in line for line in report) and _trusted(codex_home) == {}

    report = _install(tmp_path, trust=True)
    assert "codex, the session-start hook: trusted by Codex" in report
    assert "codex, the stop hook: trusted by Codex" in report
    trusted = _trusted(codex_home)
    assert sorted(k.split(":")[-3] for k in trusted) == ["session_start", "stop"]
    assert not any(k.endswith(":stop:0:0") for k in trusted)  # the foreign hook, group 0

    lines = status_lines(tmp_path / "data", home=tmp_path / "home", project=tmp_path)
    at = lines.index("codex: user: session-start, stop")
    assert lines[at + 1] == "  session-start: installed, never ran; trusted by Codex"
    assert lines[at + 2] == "  stop: installed, never ran; trusted by Codex"

    hooks = json.loads((codex_home / "hooks.json").read_text())
    hooks["hooks"]["SessionStart"][0]["hooks"][0]["command"] += " "
    (codex_home / "hooks.json").write_text(json.dumps(hooks))
    lines = status_lines(tmp_path / "data", home=tmp_path / "home", project=tmp_path)
    assert lines[at + 1].endswith("; changed since Codex trusted it: Codex skips it")
    assert any("--trust" in line for line in lines[at:])


def test_status_names_a_codex_hooks_key_left_by_an_earlier_install(
    tmp_path: Path, codex_home: Path
) -> None:
    """A config.toml with `codex_hooks = true` (what earlier installs wrote) under a Codex
    that names the feature `hooks`: status says to install again, which renames it."""
    _fake_codex(tmp_path)
    _install(tmp_path)
    config = codex_home / "config.toml"
    config.write_text(config.read_text().replace("hooks = true", "codex_hooks = true"))
    lines = status_lines(tmp_path / "data", home=tmp_path / "home", project=tmp_path)
    assert (
        f"  {config}: [features] codex_hooks is Codex's old name for hooks (it warns of it "
        "on every run): `imprint hooks install --client codex` renames it" in lines
    )
    _install(tmp_path)
    assert tomllib.loads(config.read_text())["features"] == {"hooks": True}
    lines = status_lines(tmp_path / "data", home=tmp_path / "home", project=tmp_path)
    assert not any("old name" in line for line in lines)


def test_a_codex_that_never_answers_is_reported_and_the_install_stands(
    tmp_path: Path, codex_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`codex app-server` that reads and never answers: install and status each end at the
    wait's bound with a line naming it; the hooks are installed all the same."""
    _fake_codex(tmp_path)
    monkeypatch.setenv("FAKE_CODEX_HANG", "1")
    monkeypatch.setattr(codex_module, "CODEX_WAIT", 0.5)
    report = _install(tmp_path, trust=True)
    assert any("did not answer initialize within" in line for line in report), report
    assert "SessionStart" in json.loads((codex_home / "hooks.json").read_text())["hooks"]
    lines = status_lines(tmp_path / "data", home=tmp_path / "home", project=tmp_path)
    assert any("did not answer initialize" in line for line in lines), lines


def test_status_shows_hooks_that_never_ran_and_commands_whose_files_are_gone(
    tmp_path: Path, codex_home: Path
) -> None:
    """Claude Code hooks installed: the one that ran shows its runs, the others say they
    never ran; a hook whose launcher was moved away is named with the fix."""
    home, data = tmp_path / "home", tmp_path / "data"
    install_hooks("claude-code", "user", HookSettings(), home=home, project=tmp_path)
    record_run(data, "claude-code", "stop", elapsed_ms=9)
    lines = status_lines(data, home=home, project=tmp_path)
    assert "  session-start: installed, never ran" in lines
    assert any(line.startswith("  stop: 1 runs, 0 failed") for line in lines)
    assert not any("which is not there" in line for line in lines)

    settings = home / ".claude" / "settings.json"
    gone = str(tmp_path / "old-venv" / "imprint" / "hooks" / "launcher.py")
    data_json = json.loads(settings.read_text())
    for entries in data_json["hooks"].values():
        for entry in entries:
            for hook in entry["hooks"]:
                words = hook["command"].split(" ")
                words[3] = gone
                hook["command"] = " ".join(words)
    settings.write_text(json.dumps(data_json))
    lines = status_lines(data, home=home, project=tmp_path)
    fix = "run `imprint hooks install --client claude-code` again"
    assert (
        f"  its hooks run {gone}, which is not there: the client cannot start them; {fix}" in lines
    )
