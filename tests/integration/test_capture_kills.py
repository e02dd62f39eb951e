"""Capture through the real daemon, killed while it captures: 20 turns of one session, each
handed off by `hand_off` as a Stop hook would, while the daemon is SIGKILLed from outside
right after a hand-off (5 rounds), at the failpoint after the store write and before the
session's offset is saved (5 rounds), and between Chroma and SQLite (5 rounds). Afterwards
every turn is in the store exactly once, the summary counts 20 turns, and a secret typed
in the first turn is in no file of the data dir, the logs included."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from imprint.hooks.capture import hand_off
from tests.integration.conftest import daemon_pid, wait_gone
from tests.support.capture_support import Transcript

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

ROUNDS = 20
SECRET = "ghp_" + "Qm7Zt2Xc9Vb4Nw8Lk3Jh6Gf1Ds5Ap0Or2Eu9"
KILLS = {1: "outside", 2: "capture.before_state:1", 3: "writer.after_vectors:1"}


def _alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _new_daemon(data_dir: Path, old: int | None, seconds: float = 120) -> int:
    """The pid of the daemon a hand-off started (another than `old`)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        pid = daemon_pid(data_dir)
        if pid is not None and pid != old and _alive(pid):
            return pid
        time.sleep(0.02)  # waiting for another process to start; nothing to wait on
    raise AssertionError(f"no daemon started; see {data_dir / 'run' / 'daemon.stderr.log'}")


def _kill(data_dir: Path) -> None:
    """SIGKILL the daemon the last hand-off poked or started (waiting until it is known)."""
    pid = _new_daemon(data_dir, None)
    os.kill(pid, signal.SIGKILL)
    assert wait_gone(pid)


def _drained(data_dir: Path, transcript: Path, sid: str) -> bool:
    folder = data_dir / "capture"
    state = folder / "sessions" / f"{sid}.json"
    if not state.exists() or list(folder.glob("taken-*.jsonl")):
        return False
    queue = folder / "queue.jsonl"
    if queue.exists() and queue.stat().st_size:
        return False
    return bool(json.loads(state.read_text())["offset"] == transcript.stat().st_size)


def test_a_daemon_killed_during_20_captures_loses_no_turn_and_doubles_none(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every turn handed off is captured exactly once across 15 daemon kills, and the
    secret typed in the session appears in no file under the data dir."""
    monkeypatch.setenv("IMPRINT_DATA_DIR", str(data_dir))
    monkeypatch.setenv("IMPRINT_SERVER_IDLE_EXIT_SEC", "120")
    sid = "kill-session"
    cwd = tmp_path / "kestrel"
    cwd.mkdir()
    t = Transcript(tmp_path / "claude" / f"{sid}.jsonl", sid, cwd)
    kills = 0
    for i in range(ROUNDS):
        prompt = f"round {i}: check marker-{i:02d}-gull"
        if i == 0:
            prompt += f" with GH_TOKEN={SECRET}"
        t.turn(prompt, f"Done with round {i}.", command=f"echo {i}", output=f"{i}\n{SECRET}")
        kind = KILLS.get(i % 4)
        if kind is not None and kind != "outside":
            # The round before killed its daemon: the next one starts with the failpoint armed.
            old = daemon_pid(data_dir)
            assert not _alive(old)
            monkeypatch.setenv("IMPRINT_FAILPOINT", kind)
            hand_off(t.event())
            monkeypatch.delenv("IMPRINT_FAILPOINT")
            pid = _new_daemon(data_dir, old)
            assert wait_gone(pid, 180), f"round {i}: the daemon passed {kind} without dying"
            kills += 1
            continue
        hand_off(t.event())
        if kind == "outside":
            _kill(data_dir)
            kills += 1
    assert kills == 15
    hand_off(t.event())  # a daemon (started now if the last one was killed) drains the rest
    deadline = time.monotonic() + 300
    while not _drained(data_dir, t.path, sid):
        assert time.monotonic() < deadline, "the queue was not drained"
        time.sleep(0.1)  # waiting for another process to capture; nothing to wait on
    pid = daemon_pid(data_dir)
    assert pid is not None
    os.kill(pid, signal.SIGTERM)
    assert wait_gone(pid)

    db = data_dir / "workspaces" / "default" / "imprint.sqlite3"
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT content, kind FROM records WHERE source = ?", (f"session:{sid}",)
        ).fetchall()
    finally:
        conn.close()
    turns = [content for content, kind in rows if kind == "session"]
    summaries = [content for content, kind in rows if kind == "session-summary"]
    for i in range(ROUNDS):
        found = [c for c in turns if f"marker-{i:02d}-gull" in c]
        assert len(found) == 1, f"turn {i} is stored {len(found)} times"
    assert len(turns) == ROUNDS
    assert len(summaries) == 1 and f"({ROUNDS} turns, id " in summaries[0]

    leaks = []
    for path in data_dir.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            if SECRET.encode() in data or SECRET[4:20].encode() in data:
                leaks.append(str(path.relative_to(data_dir)))
    assert not leaks, f"the secret is in {leaks}"
    logs = [p for p in (data_dir / "logs").glob("*") if p.is_file()]
    assert logs and any(b"capture.done" in p.read_bytes() for p in logs), "no log was read"
