"""A data dir copied while its daemon runs gets its own daemon (issue 43, finding 4).

The copy holds the original's run file (`cp -r`, a file-level backup, a synced folder): its
pid lives, its command line and start ticks match. Before, a client of the copy trusted it:
a `store` through the copy answered "stored" and the memory landed in the original's store,
searches of the copy read the original, and `imprint stop` of the copy stopped the
original's daemon.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest

from imprint.daemon import asks as asks_mod
from imprint.daemon import client as client_mod
from imprint.daemon.runfile import exited
from tests.integration.conftest import daemon_pid, imprint_stop, owner_env, wait_gone
from tests.support.copied_data_dir import _call

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def _holds(data_dir: Path, word: bytes) -> bool:
    """Whether any file of the data dir's workspaces (SQLite, its WAL, Chroma) holds `word`."""
    return any(
        word in path.read_bytes()
        for path in (data_dir / "workspaces").rglob("*")
        if path.is_file() and not path.is_symlink()
    )


def test_a_data_dir_copied_while_its_daemon_runs_is_served_by_its_own(tmp_path: Path) -> None:
    """A store through a copy (made with `cp -r` while the original's daemon ran) lands in
    the copy's store and nowhere in the original's; the copy's searches and status read the
    copy; the copy runs its own daemon; `imprint stop` of the copy leaves the original's
    daemon running."""
    original, copy = tmp_path / "original", tmp_path / "copy"
    stored = _call(original, tmp_path, "store", {"content": "the avocet sweeps the mud"})
    assert stored.startswith("stored"), stored
    first = daemon_pid(original)
    assert first is not None and not exited(first)
    subprocess.run(["cp", "-r", str(original), str(copy)], check=True)
    # The copied run file names the original's daemon, alive and matching.
    assert json.loads((copy / "run" / "daemon.json").read_text())["pid"] == first
    try:
        stored = _call(copy, tmp_path, "store", {"content": "the curlew calls over the copy"})
        assert stored.startswith("stored"), stored
        second = daemon_pid(copy)
        assert second is not None and second != first and not exited(second)
        assert not _holds(original, b"curlew")  # before: only the original held it
        assert _holds(copy, b"curlew")
        assert "curlew calls" not in _call(original, tmp_path, "search", {"query": "curlew"})
        assert "curlew calls" in _call(copy, tmp_path, "search", {"query": "curlew"})
        # The CLI's requests (status, hooks, sync...) go the same way as the bridge.
        assert asks_mod.ask_status(copy, "", False)["records"] == 2
        assert asks_mod.ask_status(original, "", False)["records"] == 1
        stopped = imprint_stop(owner_env(copy))
        assert stopped.returncode == 0, stopped.stderr
        assert f"process {second}" in stopped.stdout
        assert wait_gone(second)
        assert not exited(first)  # the original's daemon was not signalled
    finally:
        for data_dir in (copy, original):
            imprint_stop(owner_env(data_dir))


def test_a_daemon_refuses_a_hello_naming_another_data_dir(tmp_path: Path) -> None:
    """A hello naming another data dir (the copy's identity sent to the original's socket)
    is refused with the daemon's own identity, and the request in it never runs: here a
    dashboard, which would otherwise be served while the connection stays open."""
    from imprint.daemon.runfile import identity

    original = tmp_path / "original"
    _call(original, tmp_path, "store", {"content": "the avocet sweeps the mud"})
    pid = daemon_pid(original)
    assert pid is not None
    try:
        info = json.loads((original / "run" / "daemon.json").read_text())
        assert info["serves"] == identity(original)
        wrong = {**identity(original), "data_dir": str(tmp_path / "copy")}
        for hello in (
            {"cwd": "/", "pid": os.getpid(), "roots": [], "serves": wrong},
            {"dashboard": {"port": 0}, "pid": os.getpid(), "serves": wrong},
            {"status": {"workspace": "", "check": False}, "serves": wrong},
        ):
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.connect(info["socket"])
                sock.settimeout(60)  # a bound for a failing test only
                sock.sendall((json.dumps(hello) + "\n").encode())
                with sock.makefile("rb") as reader:
                    answer = json.loads(reader.readline())
                    assert reader.readline() == b""  # closed: nothing ran after it
            assert "error" in answer and "not the data dir" in answer["error"], answer
            assert answer["serves"] == identity(original)
            assert "url" not in answer and "row" not in answer
    finally:
        stopped = imprint_stop(owner_env(original))
        assert f"process {pid}" in stopped.stdout, stopped.stderr


def test_a_run_file_claiming_the_copy_still_leads_to_the_copys_own_daemon(
    tmp_path: Path,
) -> None:
    """The hello is the proof, not the run file: a copy whose run file was rewritten to
    name the copy (its path and id) yet the original's pid and socket still gets its own
    daemon: the original's daemon refuses the copy's hello unrun, and the client starts
    the copy's. The store lands in the copy only."""
    from imprint.daemon.runfile import identity

    original, copy = tmp_path / "original", tmp_path / "copy"
    _call(original, tmp_path, "store", {"content": "the avocet sweeps the mud"})
    first = daemon_pid(original)
    assert first is not None
    subprocess.run(["cp", "-r", str(original), str(copy)], check=True)
    forged = json.loads((copy / "run" / "daemon.json").read_text())
    forged["serves"] = identity(copy)
    (copy / "run" / "daemon.json").write_text(json.dumps(forged))
    try:
        stored = _call(copy, tmp_path, "store", {"content": "the godwit probes the copy"})
        assert stored.startswith("stored"), stored
        second = daemon_pid(copy)
        assert second is not None and second != first
        assert not _holds(original, b"godwit") and _holds(copy, b"godwit")
    finally:
        for data_dir in (copy, original):
            imprint_stop(owner_env(data_dir))


def test_a_hooks_poke_in_a_copy_starts_the_copys_own_daemon(tmp_path: Path) -> None:
    """A hook's capture poke (`imprint hook` with no daemon up) in a copy made while a
    poke-started daemon ran starts the copy's own daemon: the copied `spawned.json` names
    the original's, which drains only the original's queue (before, the copy's poke took it
    for its own daemon starting, and started none)."""
    original, copy = tmp_path / "original", tmp_path / "copy"
    assert client_mod.poke_capture(original) is False  # none ran: it started one
    _call(original, tmp_path, "status", {})  # once that one owns the data dir
    first = daemon_pid(original)
    subprocess.run(["cp", "-r", str(original), str(copy)], check=True)
    try:
        assert client_mod.poke_capture(copy) is False
        spawned = json.loads((copy / "run" / "spawned.json").read_text())["pid"]
        assert spawned != first
        _call(copy, tmp_path, "status", {})
        assert daemon_pid(copy) == spawned
    finally:
        for data_dir in (copy, original):
            imprint_stop(owner_env(data_dir))
