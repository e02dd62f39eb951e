"""Memory pages benchmark: how long the dashboard's Memory, session and correction pages
take to render for a project of many memories.

Run from the repository root:

    .venv/bin/python -m benchmark.memory_pages [--memories 500] [--sessions 40] [--runs 20]

Method: a temporary data dir (removed at the end) gets one project, `bench`, of
`--memories` memories written through the writer actor as the store tool writes them: the
types in turn (decision, bug, preference, finding, pattern, architecture, milestone, note),
dated one every 3 hours back from now, one in ten superseding the memory of its type before
it, and `--sessions` captured sessions (four turns each and a session summary, as capture
writes them, each dated as the last memory it produced: one in four memories names the
session of its time as its source), and 20 facts about the
project, one in four ended. The dashboard is served by `DashboardServer` over the started
Runtime, as the daemon serves it; each page is fetched with httpx over 127.0.0.1 (signed in
with a one-time token first), 2 untimed warm-up fetches and `--runs` timed ones per page,
each timed alone with `time.perf_counter` from request to the last byte. The figure to hold
is every page's p95 under 1 s. It prints p50 and p95 per page (stdout; progress on stderr)
and writes them as JSON to `benchmark/out/memory-pages-<UTC timestamp>.json`, with the
1-minute load average at start and end (other work on the machine skews every figure).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

from benchmark import _common as common
from benchmark._common import note
from benchmark.dashboard import page_lines, time_pages, write_pages

TYPES = ("decision", "bug", "preference", "finding", "pattern", "architecture", "milestone", "note")
WORDS = (
    "actor",
    "mailbox",
    "writer",
    "journal",
    "chroma",
    "sqlite",
    "fts5",
    "briefing",
    "capture",
    "session",
    "hook",
    "daemon",
    "socket",
    "budget",
    "recall",
    "plan",
    "deadline",
    "reader",
    "pool",
    "embedder",
    "vector",
    "lexical",
    "fusion",
    "token",
)
LIMIT_SEC = 1.0


def _text(i: int) -> str:
    words = [WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(12)]
    return f"Memory {i}: " + " ".join(words) + f" (case {i * 37 % 1009})."


def fill(runtime: object, memories: int, sessions: int) -> tuple[str, str]:
    """Write the project; (a memory id, a session id) to open pages of."""
    from imprint.actors.lifecycle import Runtime
    from imprint.store.records import (
        SESSION_SUMMARY_KIND,
        Fact,
        Record,
        SupersedeLink,
        WriteBatch,
        content_sha,
        make_id,
    )
    from imprint.types import MemoryId
    from imprint.writes.gateway import Writes

    assert isinstance(runtime, Runtime)
    writes = Writes(runtime)
    ws = writes.open("", create=True)
    now = time.time()
    records: list[Record] = []
    links: list[SupersedeLink] = []
    last_of_type: dict[str, MemoryId] = {}
    sids = [f"bench-{s:03d}" for s in range(sessions)]
    for s, sid in enumerate(sids):
        # A session ends with the last memory it produced (see the memories' sources below).
        at = now - (memories - min(memories, (s + 1) * memories // sessions)) * 3 * 3600
        for turn in range(4):
            body = f"user: turn {turn} of {sid}: {_text(s * 4 + turn)}\nassistant: done."
            records.append(
                Record(
                    id=make_id("session", sid, turn, 0),
                    content=body,
                    project="bench",
                    source=f"session:{sid}",
                    source_type="content",
                    chunk_index=turn,
                    chunk_count=turn + 1,
                    lang="text",
                    kind="session",
                    created_at=at,
                    content_sha=content_sha(body),
                )
            )
        summary = f"Session in project bench (4 turns, id {sid}): {_text(s)}"
        records.append(
            Record(
                id=make_id(SESSION_SUMMARY_KIND, "bench", sid),
                content=summary,
                project="bench",
                source=f"session:{sid}",
                source_type="memory",
                type="milestone",
                kind=SESSION_SUMMARY_KIND,
                created_at=at,
                content_sha=content_sha(summary),
            )
        )
    for i in range(memories):
        kind = TYPES[i % len(TYPES)]
        text = _text(i)
        rid = make_id("memory", "bench", content_sha(text))
        at = now - (memories - i) * 3 * 3600
        source = f"session:{sids[i * sessions // memories]}" if i % 4 == 0 else ""
        records.append(
            Record(
                id=rid,
                content=text,
                project="bench",
                source=source,
                source_type="memory",
                type=kind,
                kind="memory",
                created_at=at,
                content_sha=content_sha(text),
            )
        )
        if i % 10 == 9 and kind in last_of_type:
            links.append(SupersedeLink(old=last_of_type[kind], new=rid, at=at))
        last_of_type[kind] = rid
    facts = tuple(
        Fact(
            id=f"bench{f:03d}",
            subject="bench",
            predicate="uses",
            object=WORDS[f % len(WORDS)],
            valid_from=now - (20 - f) * 86400,
            ended=now - f * 3600 if f % 4 == 0 else None,
        )
        for f in range(20)
    )
    for start in range(0, len(records), 200):
        writes.write(ws, WriteBatch(upserts=tuple(records[start : start + 200])))
    writes.write(ws, WriteBatch(supersede=tuple(links), add_facts=facts))
    memory = next(r.id for r in reversed(records) if r.kind == "memory")
    return memory, sids[0] if sids else ""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--memories", type=int, default=500)
    parser.add_argument("--sessions", type=int, default=40)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args(argv)
    if args.runs < 1 or args.memories < 1 or args.sessions < 1:
        parser.error("--runs, --memories, --sessions: at least 1")
    with common.data_dir(None, "imprint-memory-bench-") as work:
        return run(args, work)


def run(args: argparse.Namespace, work: Path) -> int:
    from imprint.actors.lifecycle import Runtime
    from imprint.config import load_config
    from imprint.dashboard import DashboardServer, Owner
    from imprint.logs import configure_logging

    configure_logging(work, level="warning")
    load_start = os.getloadavg()[0]
    runtime = Runtime(work, load_config(work)).start()
    try:
        started = time.perf_counter()
        rid, sid = fill(runtime, args.memories, args.sessions)
        note(f"wrote {args.memories} memories in {time.perf_counter() - started:.0f} s")
        server = DashboardServer(runtime, Owner(kind="benchmark"), port=0).start()
        try:
            results = measure(server, rid, sid, args.memories, args.runs)
        finally:
            server.stop()
    finally:
        runtime.stop()
    load_end = os.getloadavg()[0]
    title = (
        f"memory pages, project of {args.memories} memories and {args.sessions} sessions, "
        f"p50/p95 of {args.runs}; load average {load_start:.2f} -> {load_end:.2f}"
    )
    lines = page_lines(title, results, 26)
    slow = [name for name, (_, p95) in results.items() if p95 >= LIMIT_SEC * 1000]
    lines.append(
        f"every page under {LIMIT_SEC:g} s (p95): {'no: ' + ', '.join(slow) if slow else 'yes'}"
    )
    print("\n".join(lines))
    meta = {"memories": args.memories, "sessions": args.sessions, "runs": args.runs}
    path = write_pages("memory-pages", meta, [load_start, load_end], results)
    note(f"wrote {path}")
    return 1 if slow else 0


def measure(
    server: object, rid: str, sid: str, memories: int, runs: int
) -> dict[str, tuple[float, float]]:
    from imprint.dashboard import DashboardServer

    assert isinstance(server, DashboardServer)
    base = f"http://127.0.0.1:{server.port}"
    with httpx.Client(base_url=base, timeout=120) as client:
        assert client.get(server.url()).status_code == 303
        last = max(0, (memories - 1) // 200 * 200)
        pages: dict[str, tuple[str, dict[str, str]]] = {
            "memory (projects)": ("/memory", {}),
            "memory (newest page)": ("/memory", {"project": "bench"}),
            "memory (oldest page)": ("/memory", {"project": "bench", "offset": str(last)}),
            "session": ("/session", {"id": sid, "project": "bench"}),
            "record": (f"/memory/{rid}", {}),
            "delete (confirm)": ("/delete", {"id": rid}),
        }
        gets = {name: ("GET", path, params) for name, (path, params) in pages.items()}
        return time_pages(client, gets, runs)


if __name__ == "__main__":
    sys.exit(main())
