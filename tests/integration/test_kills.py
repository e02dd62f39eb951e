"""SIGKILL the shared daemon mid-write, 20 times, while two stdio clients store memories and
ingest texts through it. After each restart: `status` says the indexes agree, every
acknowledged write is there with its content in both indexes, and every write that was
not acknowledged is either wholly there (the journal finished it) or wholly absent.

Kills come from outside at a random moment (16 rounds) and from the failpoint between
Chroma and SQLite (`IMPRINT_FAILPOINT=writer.after_vectors:N`, 4 rounds). The figures are
printed at the end (`pytest -s`): kills, acknowledged writes, lost writes, disagreements.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client

from tests.integration.conftest import daemon_pid
from tests.support.serve import (
    _stdio,
    _text,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

ROUNDS = int(os.environ.get("IMPRINT_KILL_ROUNDS", "20"))
FAILPOINT_EVERY = 5  # rounds 4, 9, 14, 19 die at the failpoint
WRITES_PER_CLIENT = 40  # a bound; a kill normally ends the round long before


@dataclass(frozen=True)
class Write:
    kind: str  # "memory" or "text"
    key: str  # the memory's content, or the text's name
    parts: tuple[str, ...]  # what must be found in its content


@dataclass
class Ledger:
    acked: dict[str, Write] = field(default_factory=dict)  # key -> write
    memory_ids: dict[str, str] = field(default_factory=dict)  # content -> acked id
    unacked: list[Write] = field(default_factory=list)  # every round's
    unacked_now: list[Write] = field(default_factory=list)  # this round's
    kills: dict[str, int] = field(default_factory=lambda: {"random": 0, "failpoint": 0})
    lost: list[str] = field(default_factory=list)
    half: list[str] = field(default_factory=list)
    disagreements: list[str] = field(default_factory=list)
    finished_by_journal: int = 0


def _write(round_: int, client: int, i: int) -> Write:
    tag = f"r{round_}c{client}i{i}"
    if i % 2 == 0:
        return Write("memory", f"memory {tag}: the cormorant {tag} dries its wings", (tag,))
    parts = tuple(f"{tag}p{k}" for k in range(3))
    return Write("text", f"{tag}.md", parts)


def _text_content(write: Write) -> str:
    return "\n\n".join(
        f"## Part {part}\n\n" + f"{part} the gull circles the harbour. " * 40
        for part in write.parts
    )


async def _client(
    data_dir: Path,
    cwd: Path,
    env: dict[str, str],
    round_: int,
    n: int,
    ledger: Ledger,
    acked_now: list[int],
) -> None:
    params = _stdio(data_dir, cwd)
    params.env = {**(params.env or {}), **env}
    pending: Write | None = None
    try:
        async with Client(params) as client:
            for i in range(WRITES_PER_CLIENT):
                pending = _write(round_, n, i)
                with anyio.fail_after(120):
                    if pending.kind == "memory":
                        result = await client.call_tool("store", {"content": pending.key})
                    else:
                        args = {"name": pending.key, "content": _text_content(pending)}
                        result = await client.call_tool("ingest_content", args)
                if result.is_error:
                    break  # the daemon went away under the bridge: not acknowledged
                if pending.kind == "memory":
                    ledger.memory_ids[pending.key] = _text(result).split()[1]
                ledger.acked[pending.key] = pending
                acked_now[0] += 1
                pending = None
    except Exception:
        pass
    if pending is not None:
        ledger.unacked.append(pending)
        ledger.unacked_now.append(pending)


async def _round(
    data_dir: Path,
    cwd: Path,
    round_: int,
    ledger: Ledger,
    rng: random.Random,
) -> None:
    at_failpoint = _at_failpoint(round_)
    env = {"IMPRINT_FAILPOINT": f"writer.after_vectors:{rng.randint(2, 8)}"} if at_failpoint else {}
    acked_now = [0]
    kill_after = rng.randint(1, 8)
    async with anyio.create_task_group() as tg:
        for n in range(2):
            tg.start_soon(_client, data_dir, cwd, env, round_, n, ledger, acked_now)
        with anyio.fail_after(300):
            while daemon_pid(data_dir) is None:
                await anyio.sleep(0.02)  # polling for another process's pid file
            pid = daemon_pid(data_dir)
            assert pid is not None
            if at_failpoint:
                while _alive(pid):
                    await anyio.sleep(0.02)  # waiting for the daemon to kill itself
                ledger.kills["failpoint"] += 1
            else:
                while acked_now[0] < kill_after and _alive(pid):
                    await anyio.sleep(0.01)
                await anyio.sleep(rng.uniform(0, 0.4))  # anywhere in the next writes
                os.kill(pid, signal.SIGKILL)
                ledger.kills["random"] += 1
    assert _wait_dead(pid)
    (data_dir / "run" / "daemon.json").unlink(missing_ok=True)  # a killed daemon's stale file


def _at_failpoint(round_: int) -> bool:
    return round_ % FAILPOINT_EVERY == FAILPOINT_EVERY - 1


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie until its parent (the bridge that spawned it) reaps it: dead all the same.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _wait_dead(pid: int, seconds: float = 60) -> bool:
    deadline = time.monotonic() + seconds
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)  # waiting for another process to exit; nothing to wait on
    return True


def _raw(data_dir: Path) -> tuple[dict[str, tuple[str, str, int]], set[str], int]:
    """SQLite records (id -> content, source, chunk_count), Chroma ids, pending journal."""
    folder = data_dir / "workspaces" / "default"
    conn = sqlite3.connect(f"file:{folder / 'imprint.sqlite3'}?mode=ro", uri=True, timeout=30)
    try:
        records = {
            row[0]: (row[1], row[2], row[3])
            for row in conn.execute("SELECT id, content, source, chunk_count FROM records")
        }
        pending = conn.execute("SELECT COUNT(*) FROM journal").fetchone()[0]
    finally:
        conn.close()
    chroma = folder / "chroma" / "chroma.sqlite3"
    conn = sqlite3.connect(f"file:{chroma}?mode=ro", uri=True, timeout=30)
    try:
        vectors = {row[0] for row in conn.execute("SELECT embedding_id FROM embeddings")}
    finally:
        conn.close()
    return records, vectors, pending


def _verify(data_dir: Path, cwd: Path, ledger: Ledger, round_: int) -> None:
    """Restart (a new client starts a new daemon, which recovers), then check everything."""

    async def status() -> str:
        async with Client(_stdio(data_dir, cwd)) as client:
            return _text(await client.call_tool("status", {}))

    text = anyio.run(status)
    if "indexes: consistent" not in text:
        ledger.disagreements.append(f"round {round_}: status says {text!r}")
    records, vectors, pending = _raw(data_dir)
    if set(records) != vectors or pending:
        only_sql, only_vec = set(records) - vectors, vectors - set(records)
        ledger.disagreements.append(
            f"round {round_}: {len(only_sql)} only in SQLite, {len(only_vec)} only in Chroma, "
            f"{pending} journal entries pending"
        )
    by_content = {content: rid for rid, (content, _s, _c) in records.items()}
    by_source: dict[str, list[tuple[str, int]]] = {}
    for content, source, count in records.values():
        by_source.setdefault(source, []).append((content, count))

    def present(write: Write) -> str:
        """'whole', 'absent' or 'half'."""
        if write.kind == "memory":
            rid = by_content.get(write.key)
            return "absent" if rid is None else ("whole" if rid in vectors else "half")
        chunks = by_source.get(write.key, [])
        if not chunks:
            return "absent"
        joined = "\n".join(content for content, _count in chunks)
        whole = len(chunks) == chunks[0][1] and all(part in joined for part in write.parts)
        return "whole" if whole else "half"

    for key, write in ledger.acked.items():
        state = present(write)
        if write.kind == "memory" and by_content.get(key) != ledger.memory_ids.get(key):
            state = "lost"
        if state != "whole":
            ledger.lost.append(f"round {round_}: acknowledged {write.kind} {key!r} is {state}")
    for write in ledger.unacked:
        state = present(write)
        if state == "half":
            ledger.half.append(f"round {round_}: unacknowledged {write.kind} {write.key!r}")
        ledger.finished_by_journal += state == "whole" and write in ledger.unacked_now
    ledger.unacked_now.clear()


def test_twenty_sigkills_mid_write_lose_nothing_acknowledged(
    data_dir: Path,
    tmp_path: Path,
) -> None:
    """20 SIGKILLs of the daemon under two writing clients (16 at random moments, 4 at the
    failpoint between Chroma and SQLite): after every restart the indexes agree, no
    acknowledged write is lost or changed, and no unacknowledged write is half there."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    rng = random.Random(13)
    ledger = Ledger()
    for round_ in range(ROUNDS):
        anyio.run(_round, data_dir, cwd, round_, ledger, rng)
        _verify(data_dir, cwd, ledger, round_)
        pid = daemon_pid(data_dir)
        if _at_failpoint(round_ + 1) and pid is not None:
            # That round's clients must start its daemon, with the failpoint set.
            os.kill(pid, signal.SIGTERM)
            assert _wait_dead(pid)
    summary: dict[str, Any] = {
        "kills": ledger.kills,
        "acknowledged": len(ledger.acked),
        "unacknowledged": len(ledger.unacked),
        "finished_by_journal": ledger.finished_by_journal,
        "lost": len(ledger.lost),
        "half_present": len(ledger.half),
        "disagreements": len(ledger.disagreements),
    }
    print(f"kills: {summary}")
    assert ledger.lost == [] and ledger.half == [] and ledger.disagreements == [], (
        ledger.lost + ledger.half + ledger.disagreements
    )
    assert sum(ledger.kills.values()) == ROUNDS
    assert ledger.kills["failpoint"] == ROUNDS // FAILPOINT_EVERY
    assert len(ledger.acked) >= ROUNDS  # writes really were acknowledged between kills
