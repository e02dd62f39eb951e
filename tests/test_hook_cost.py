"""What a Claude Code session pays for Imprint's hooks (issue 45, "added wall time per
`claude -p` run"): each hook starts as `hooks install` wrote it, `python -I -S launcher.py`
(no site-packages on its path), and answers from the standard library and the daemon's
light client alone."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from imprint.hooklib.state import read_state
from imprint.hooks.install import hook_command, hook_launcher
from tests.support.daemon import StartDaemon


def _run_installed(
    event: str, data: Path, cwd: Path, *options: str
) -> subprocess.CompletedProcess[str]:
    words = shlex.split(hook_command(hook_launcher(), event, "claude-code", data))
    words[1:1] = options  # interpreter options, before the launcher
    payload = {"session_id": "s1", "transcript_path": str(cwd / "none.jsonl"), "cwd": str(cwd)}
    return subprocess.run(
        words, input=json.dumps(payload), capture_output=True, text=True, timeout=120
    )


def test_installed_hooks_beside_a_warm_daemon_run_without_site_packages(
    serve: StartDaemon,
    tmp_path: Path,
) -> None:
    """The session-start and stop hooks, run exactly as installed (`-I -S`) beside a running
    daemon, each end in an answer, not a failure: the daemon package's own `__init__` no
    longer pulls the owner's logging stack (structlog, from site-packages) into the hook
    (before: every run failed with "No module named 'structlog'", the stop hook after
    queueing and before poking the daemon, and Claude Code still waited for each)."""
    d, _ = serve(warm_embedder=False)
    for event in ("session-start", "stop"):
        done = _run_installed(event, d.data_dir, tmp_path)
        assert done.returncode == 0, done.stderr
        row = read_state(d.data_dir)["claude-code"][event]
        assert row["runs"] == 1 and "last_error" not in row, row


def test_the_daemon_package_names_its_owner_lazily() -> None:
    """`imprint.daemon.Daemon` and `run_daemon` still resolve (the command line's
    `serve`), and importing the client half leaves the owner unloaded."""
    script = (
        "import sys, imprint.daemon.client; "
        "print('imprint.daemon.owner' in sys.modules); "
        "from imprint.daemon import Daemon, run_daemon; "
        "print(Daemon.__name__, callable(run_daemon))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.split() == ["False", "Daemon", "True"], out.stdout + out.stderr


# What the hook process no longer loads beside a daemon: tempfile, with its shutil, random
# and compressors, only where a file is written atomically (a few ms of CPU of the 45 a
# hook took).
_LEFT_OUT = ("tempfile", "shutil", "random", "bz2", "lzma")


def test_installed_hooks_beside_a_warm_daemon_load_no_tempfile(
    serve: StartDaemon,
    tmp_path: Path,
) -> None:
    """The session-start and stop hooks as installed, beside a running daemon, answer
    without importing tempfile, shutil, random or the compressors (`python -X importtime`
    names every module the process loaded)."""
    d, _ = serve(warm_embedder=False)
    for event in ("session-start", "stop"):
        done = _run_installed(event, d.data_dir, tmp_path, "-X", "importtime")
        loaded = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
        assert "imprint.hooks.entry" in loaded, done.stderr[-2000:]
        assert not loaded & set(_LEFT_OUT), sorted(loaded & set(_LEFT_OUT))
        assert "last_error" not in read_state(d.data_dir)["claude-code"][event]


def test_the_socket_folder_root_is_the_one_tempfile_picks(
    private_env: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The socket folder's root, found without tempfile, is tempfile.gettempdir()'s: for
    $TMPDIR, for $TMPDIR naming no folder (then the next candidate), and with none set."""
    import tempfile

    from imprint.daemon.security import _temp_root

    def found() -> str:  # as a fresh process finds it (tempfile caches its first pick)
        monkeypatch.setattr(tempfile, "tempdir", None)
        return _temp_root()

    def picked() -> str:
        monkeypatch.setattr(tempfile, "tempdir", None)
        return tempfile.gettempdir()

    assert found() == picked() == str(private_env)
    monkeypatch.setenv("TMPDIR", str(private_env / "missing"))
    assert found() == picked()
    for name in ("TMPDIR", "TEMP", "TMP"):
        monkeypatch.delenv(name, raising=False)
    assert found() == picked() == "/tmp"


def test_a_recall_beside_a_daemon_loads_no_heavy_library(
    serve: StartDaemon,
    tmp_path: Path,
) -> None:
    """`imprint recall` beside a running daemon asks its recall tool over the socket with
    the standard library alone, as `imprint search` does (before: typer, pydantic, MCP and
    the store imported, and the MCP client's session), and prints what the full command
    line prints for the same question, plan, budget and --no-condense; a question the tool
    refuses is one line and exit 2."""
    from imprint.cli._daemon import via_daemon
    from tests.support.client_fit import _HEAVY, _RECORD_MODULES

    d, _ = serve(warm_embedder=False)
    plan = json.dumps([{"tool": "search", "args": {"query": "heron"}}])
    argv = ["recall", "where do herons nest?", "--no-condense", "--max-chars=2000"]
    env = {**os.environ, "IMPRINT_DATA_DIR": str(d.data_dir)}

    def recorded(*args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
        modules = tmp_path / f"modules-{len(list(tmp_path.glob('modules-*')))}.txt"
        done = subprocess.run(
            [sys.executable, "-c", _RECORD_MODULES, str(modules), *args],
            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
        )  # fmt: skip
        return done, set(modules.read_text().split()) if modules.exists() else set()

    for extra in ([], ["--plan", plan]):
        done, modules = recorded(*argv, *extra)
        assert done.returncode == 0, done.stderr
        args: dict[str, object] = {"question": "where do herons nest?", "max_chars": 2000}
        args |= {"condense": False, "workspace": ""} | ({"plan": plan} if extra else {})
        assert done.stdout == via_daemon(d.data_dir, "recall", args) + "\n"
        assert modules and not {m.split(".")[0] for m in modules} & set(_HEAVY), sorted(
            m for m in modules if m.split(".")[0] in _HEAVY
        )
    bad, _ = recorded("recall", "x", "--plan", '[{"tool": "nosuch", "args": {}}]')
    assert bad.returncode == 2 and bad.stdout == "", bad.stdout
    assert len(bad.stderr.strip().splitlines()) == 1 and "nosuch" in bad.stderr, bad.stderr


def test_a_status_beside_a_daemon_is_the_daemons_text_with_no_heavy_library(
    serve: StartDaemon,
    tmp_path: Path,
) -> None:
    """`imprint status` beside a running daemon prints the text the daemon composes, the
    standard library alone loaded (before: the full command line, about 1 s of imports),
    and it is what the full command line prints, with `--workspace` and `--check` too; a
    workspace that does not exist is the same one line and exit 2."""
    from tests.support.client_fit import _HEAVY, _RECORD_MODULES

    d, _ = serve(warm_embedder=False)
    env = {**os.environ, "IMPRINT_DATA_DIR": str(d.data_dir)}

    def run(*args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
        modules = tmp_path / f"modules-{len(list(tmp_path.glob('modules-*')))}.txt"
        done = subprocess.run(
            [sys.executable, "-c", _RECORD_MODULES, str(modules), *args],
            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
        )  # fmt: skip
        return done, set(modules.read_text().split()) if modules.exists() else set()

    def full(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "imprint.cli", *args],
            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
        )  # fmt: skip

    for args in (["status"], ["status", "-w", "default", "--check"], ["status", "--check"]):
        light, modules = run(*args)
        whole = full(*args)
        assert light.returncode == whole.returncode == 0, light.stderr + whole.stderr
        assert light.stdout == whole.stdout and "indexes: consistent" in light.stdout
        assert modules and not {m.split(".")[0] for m in modules} & set(_HEAVY), sorted(
            m for m in modules if m.split(".")[0] in _HEAVY
        )
    light, modules = run("status", "--workspace=nosuch")
    whole = full("status", "--workspace=nosuch")
    assert light.returncode == whole.returncode == 2 and light.stdout == ""
    assert light.stderr == whole.stderr and len(light.stderr.splitlines()) == 1, light.stderr
    assert not {m.split(".")[0] for m in modules} & set(_HEAVY)


def test_status_arguments_the_light_path_reads_and_those_it_leaves() -> None:
    """`status` with `--workspace`/`-w` and `--check` is read as the command line reads
    it; anything else (help, a typo, an argument, a flag missing its value) is not."""
    from imprint.launch import plain_status

    assert plain_status(["status"]) == ("", False)
    assert plain_status(["status", "--check", "-w", "team"]) == ("team", True)
    assert plain_status(["status", "--workspace=a b"]) == ("a b", False)
    for argv in (["status", "--help"], ["status", "x"], ["status", "-w"], ["search", "x"], []):
        assert plain_status(argv) is None, argv
