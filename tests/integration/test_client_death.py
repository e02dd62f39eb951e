"""A client killed mid-call: its stdio bridge SIGKILLed while the daemon works on its recall
or its ingest. The daemon stays up (same process), finishes or drops the call, frees what
the call held (the reader, the writer), and the next client gets answers.

`IMPRINT_DELAY` (imprint/_faults.py) holds the call inside the daemon for a few seconds and
logs `fault.delay`: the kill lands while the call is surely in flight, with no guessing.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import anyio
import pytest
from mcp.client import Client

from tests.integration.conftest import daemon_pid
from tests.support.serve import (
    _status,
    _stdio,
    _text,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

BIG = "\n\n".join(f"## Part {i}\n\n" + f"part{i} the shearwater skims " * 20 for i in range(6))


def _log_size(data_dir: Path) -> int:
    path = data_dir / "logs" / "imprint.jsonl"
    return path.stat().st_size if path.exists() else 0


async def _wait_for_delay(data_dir: Path, offset: int, point: str) -> None:
    """Until the daemon logs that a call reached `point` (after byte `offset` of its log)."""
    path = data_dir / "logs" / "imprint.jsonl"
    with anyio.fail_after(120):
        while True:
            if path.exists():
                with path.open("rb") as f:
                    f.seek(offset)
                    tail = f.read().decode("utf-8", "replace")
                if '"fault.delay"' in tail and point in tail:
                    return
            await anyio.sleep(0.02)  # polling another process's log file


def _kill_mid_call(
    data_dir: Path,
    cwd: Path,
    point: str,
    tool: str,
    args: dict[str, object],
) -> int:
    """Start a daemon that stalls once at `point` (the victim's call is the first to pass
    there), send `tool` from a bridge, SIGKILL the bridge while the call is held; the
    daemon's pid."""
    pidfile = cwd / "victim.pid"
    params = _stdio(data_dir, cwd, pidfile)
    params.env = {**(params.env or {}), "IMPRINT_DELAY": f"{point}:3:1"}
    outcome: list[str] = []

    async def go() -> int:
        offset = _log_size(data_dir)

        async def victim() -> None:
            try:
                async with Client(params) as client:
                    await client.call_tool(tool, args)
                    outcome.append("answered")
            except Exception:
                outcome.append("cut off")

        async with anyio.create_task_group() as tg:
            tg.start_soon(victim)
            await _wait_for_delay(data_dir, offset, point)
            os.kill(int(pidfile.read_text()), signal.SIGKILL)
        pid = daemon_pid(data_dir)
        assert pid is not None
        return pid

    pid = anyio.run(go)
    assert outcome == ["cut off"]
    return pid


def _next_client_answers(data_dir: Path, cwd: Path) -> tuple[str, str, str]:
    async def go() -> tuple[str, str, str]:
        async with Client(_stdio(data_dir, cwd)) as client:
            with anyio.fail_after(60):
                _text(await client.call_tool("store", {"content": "the heron waits"}))
                plan = [
                    {"tool": "search", "args": {"query": "heron"}},
                    {"tool": "list_sources", "args": {}},
                ]
                recalled = _text(await client.call_tool("recall", {"question": "h", "plan": plan}))
                stored = _text(await client.call_tool("store", {"content": "after: the skua"}))
                found = _text(await client.call_tool("search", {"query": "skua"}))
            return recalled, stored, found

    return anyio.run(go)


def test_a_bridge_killed_during_a_recall_leaves_the_daemon_answering(
    data_dir: Path,
    tmp_path: Path,
) -> None:
    """SIGKILL the bridge while its recall's read is held in a reader: the same daemon then
    serves the next client's recall (readers free again), a store and a search."""
    plan = [{"tool": "search", "args": {"query": "heron"}}]
    pid = _kill_mid_call(
        data_dir, tmp_path, "reader.read", "recall", {"question": "h", "plan": plan}
    )
    recalled, stored, found = _next_client_answers(data_dir, tmp_path)
    assert "the heron waits" in recalled
    assert stored.removeprefix("stored ") in found
    assert daemon_pid(data_dir) == pid  # never restarted
    assert "indexes: consistent" in _status(data_dir).stdout


def test_a_bridge_killed_during_an_ingest_leaves_it_whole_or_absent(
    data_dir: Path,
    tmp_path: Path,
) -> None:
    """SIGKILL the bridge while its ingest is held in the writer: the writer finishes it
    (every chunk in both indexes) and takes the next write; the daemon is the same one."""
    args = {"name": "big.md", "content": BIG}
    pid = _kill_mid_call(data_dir, tmp_path, "writer.apply", "ingest_content", args)
    recalled, stored, found = _next_client_answers(data_dir, tmp_path)
    assert "the heron waits" in recalled and stored.removeprefix("stored ") in found
    assert daemon_pid(data_dir) == pid

    async def chunks() -> str:
        async with Client(_stdio(data_dir, tmp_path)) as client:
            return _text(await client.call_tool("file_chunks", {"source": "big.md"}))

    # The store above queued behind the held ingest in the one writer: it is finished.
    text = anyio.run(chunks)
    assert all(f"part{i}" in text for i in range(6)), text[:500]
    status = _status(data_dir).stdout
    assert "indexes: consistent" in status
