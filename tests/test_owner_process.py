"""The owning process's housekeeping: its run file is believed only for a live imprint
process of ours, its stderr log rotates, and SIGTERM ends it even while a call holds the
interpreter lock."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import imprint.daemon as daemon_mod
from imprint.daemon import client as client_mod
from imprint.daemon import runfile


def _run_file(data_dir: Path, **info: object) -> None:
    run = data_dir / "run"
    run.mkdir(parents=True, mode=0o700, exist_ok=True)
    (run / "daemon.json").write_text(json.dumps(info))


@pytest.mark.slow
def test_a_run_file_naming_a_dead_foreign_or_reused_pid_is_not_believed(tmp_path: Path) -> None:
    """daemon.json naming an exited process, a live process that is not imprint, or an
    imprint process that started at another time (a reused pid) names no daemon, and
    `imprint stop` signals none of them; the same file with the right start names it."""
    data_dir = tmp_path / "data"
    gone = subprocess.Popen(["true"])
    gone.wait()
    _run_file(data_dir, pid=gone.pid, socket="")
    assert daemon_mod.running_daemon(data_dir) is None
    others = [
        subprocess.Popen(["sleep", "60"]),
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "imprint"]),
    ]
    try:
        _run_file(data_dir, pid=others[0].pid, socket="")
        assert daemon_mod.running_daemon(data_dir) is None
        _run_file(data_dir, pid=others[1].pid, socket="", proc_start="1")
        assert daemon_mod.running_daemon(data_dir) is None
        assert daemon_mod.stop_daemon(data_dir, wait_sec=1).startswith(
            "no imprint daemon is running"
        )
        assert all(p.poll() is None for p in others)  # neither was signalled
        start = runfile.proc_start(others[1].pid)
        assert start is not None
        _run_file(data_dir, pid=others[1].pid, socket="", proc_start=start)
        info = daemon_mod.running_daemon(data_dir)
        assert info is not None and info["pid"] == others[1].pid
    finally:
        for proc in others:
            proc.kill()
            proc.wait()


class _FakePopen:
    def __init__(self, *args: Any, stderr: Any = None, **kwargs: Any) -> None:
        stderr.write(b"a fresh daemon's first line\n")


def test_the_daemon_stderr_log_rotates_at_its_cap_keeping_two(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A spawn finding daemon.stderr.log over its cap moves it to .1 (.1 to .2; never a
    .3) and starts a new 0600 one; a running daemon's own stderr (a descriptor on the file)
    is moved the same way and writes on into the new file."""
    monkeypatch.setattr(client_mod, "STDERR_LOG_MAX_BYTES", 1000)
    monkeypatch.setattr(subprocess, "Popen", _FakePopen)
    data_dir = tmp_path / "data"
    log = data_dir / "run" / "daemon.stderr.log"
    for n in range(3):
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("ab") as out:
            out.write(f"{n}".encode() * 2000)
        client_mod._spawn_daemon(data_dir)
        assert log.read_bytes() == b"a fresh daemon's first line\n"
        assert stat.S_IMODE(log.stat().st_mode) == 0o600
    names = sorted(p.name for p in log.parent.iterdir() if p.name.startswith(log.name))
    assert names == [log.name, f"{log.name}.1", f"{log.name}.2"]
    assert log.with_name(f"{log.name}.1").read_bytes().endswith(b"2" * 2000)
    assert log.with_name(f"{log.name}.2").read_bytes().endswith(b"1" * 2000)

    fd = os.open(log, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, b"x" * 2000)
        assert runfile.rotate_log(log, 1000, 2, fd=fd)
        os.write(fd, b"after\n")
    finally:
        os.close(fd)
    assert log.read_bytes() == b"after\n"
    assert log.with_name(f"{log.name}.1").read_bytes().endswith(b"x" * 2000)
    assert stat.S_IMODE(log.stat().st_mode) == 0o600


CHILD = textwrap.dedent(
    """
    import ctypes, os, signal, sys
    from imprint import _watchdog
    signal.signal(signal.SIGTERM, lambda *_: print("handled", flush=True))
    assert _watchdog.enable()
    os.kill(os.getpid(), signal.SIGTERM)  # outside: the process's own handler
    with _watchdog.sigterm_kills():
        print("inside", flush=True)
        ctypes.PyDLL(None).sleep(60)  # holds the interpreter lock, as Chroma's calls do
    print("survived", flush=True)
    """
)


@pytest.mark.slow
def test_sigterm_ends_the_process_inside_a_call_that_holds_the_interpreter_lock() -> None:
    """Outside `sigterm_kills` SIGTERM goes to the process's handler; inside, while the
    thread holds the interpreter lock (so no Python handler could run), it ends the process
    at once."""
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True, env=dict(os.environ)
    )
    assert child.stdout is not None
    assert child.stdout.readline() == "handled\n"
    assert child.stdout.readline() == "inside\n"
    child.send_signal(signal.SIGTERM)
    try:
        rest, _ = child.communicate(timeout=30)  # it would sleep 60 s on
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        pytest.fail("SIGTERM did not end a process whose thread held the interpreter lock")
    assert child.returncode == -signal.SIGTERM and "survived" not in rest


DEAF = textwrap.dedent(
    """
    import json, os, signal, sys
    from pathlib import Path
    from imprint.daemon import runfile
    data_dir = Path(sys.argv[1])
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a daemon whose handler cannot run
    info = {"pid": os.getpid(), "socket": "", "proc_start": runfile.proc_start(os.getpid()),
            "kind": "daemon", "serves": runfile.identity(data_dir)}
    runfile.run_dir(data_dir)
    (data_dir / "run" / "daemon.json").write_text(json.dumps(info))
    print("ready", flush=True)
    sys.stdin.read()
    """
)


def test_stop_kills_a_daemon_that_does_not_exit_on_sigterm(tmp_path: Path) -> None:
    """`imprint stop` of a daemon that ignores SIGTERM (its Python handler cannot run: a
    thread held the interpreter lock for minutes) sends SIGKILL after the grace and says
    so, instead of failing and leaving it running."""
    data_dir = tmp_path / "data"
    with subprocess.Popen(
        [sys.executable, "-c", DEAF, str(data_dir), "imprint"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as deaf:
        try:
            assert deaf.stdout is not None and deaf.stdout.readline() == "ready\n"
            said = daemon_mod.stop_daemon(data_dir, wait_sec=0)
            assert said.startswith(f"killed the imprint daemon (process {deaf.pid})"), said
            assert "did not exit within 0 s of SIGTERM" in said
            assert deaf.wait(timeout=60) == -signal.SIGKILL
        finally:
            if deaf.poll() is None:
                deaf.kill()
