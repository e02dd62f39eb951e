"""Shared by the dashboard's route tests, browser test and benchmark: an ingested store, a
dashboard over it, and a step that can be made to miss the recall deadline."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from imprint.actors.lifecycle import Runtime
from imprint.config import load_config
from imprint.dashboard import Owner
from imprint.logs import configure_logging
from imprint.recall import plan as plan_module
from imprint.store.embedder import Embedder
from imprint.writes.facts import edit_facts
from imprint.writes.files import ingest_path
from imprint.writes.gateway import Writes
from imprint.writes.memories import store_memory

TIMEOUT_PLAN = (
    '[{"tool": "search", "args": {"query": "espresso grind", "limit": 3}},\n'
    ' {"tool": "list_sources", "args": {"limit": 5}},\n'
    ' {"tool": "kg_query", "args": {"subject": "slow"}}]'
)


@contextmanager
def ingested_runtime(data: Path, tree: Path, embedder: Embedder | None) -> Iterator[Runtime]:
    """A started runtime over `data` with `tree` ingested, a memory and a fact stored, and
    logging to `data`'s JSON log (the traces come from it)."""
    configure_logging(data, level="error")
    runtime = Runtime(data, load_config(data), embedder=embedder).start()
    try:
        ingest_path(runtime, tree, project="proj")
        writes = Writes(runtime, tree)
        store_memory(
            writes,
            "We decided to serialize writes through one writer actor.",
            "proj",
            "decision",
            ["architecture"],
            ["writes"],
        )
        edit_facts(writes, "add", "imprint", "uses", "sqlite")
        yield runtime
    finally:
        runtime.stop()
        configure_logging(None, level="warning", to_file=False)


# What `remembered` stores in project proj: one memory of each type, a decision that a
# later one reverses, and two captured sessions (their summaries are milestones too).
REMEMBERED = {
    "decision": "We chose SQLite FTS5 for lexical search over Tantivy.",
    "reversal": "We now keep Tantivy out for good; FTS5 stays, revisited in March.",
    "bug": "Fixed: the writer lost a batch when Chroma timed out; it now retries once.",
    "preference": "The user prefers short commit subjects with the measured figure.",
    "finding": "BM25 ranks exact identifiers first once phrases lead.",
    "pattern": "Every actor message carries the deadline of the call that caused it.",
    "architecture": "One process owns a data dir; every session bridges to its daemon.",
    "milestone": "Release 0.9 shipped the hooks for four clients.",
    "note": "The corpus for benchmarks lives beside the repository.",
}
SESSIONS = ("sess-alpha", "sess-beta")


def remembered(runtime: Runtime, writes: Writes, folder: Path) -> dict[str, str]:
    """Store REMEMBERED in project proj (the reversal superseding the decision), a fact
    about proj, and capture two sessions in proj's own folder (the writes' cwd, the tree
    ingested as proj: a session maps to a project by its resolved root) through the capture
    queue and worker (so the log holds their hook runs); the stored ids by name."""
    from imprint.capture.worker import CaptureWorker
    from imprint.hooklib.queue import enqueue
    from tests.support.capture_support import Transcript

    ids = {
        name: store_memory(writes, text, "proj", name if name != "reversal" else "decision")
        for name, text in REMEMBERED.items()
        if name != "reversal"
    }
    ids["reversal"] = store_memory(
        writes, REMEMBERED["reversal"], "proj", "decision", supersedes=[ids["decision"]]
    )
    edit_facts(writes, "add", "proj", "stores", "sqlite")
    cwd = writes.cwd
    worker = CaptureWorker(runtime.data_dir, lambda _: runtime)
    for sid in SESSIONS:
        t = Transcript(folder / "claude" / f"{sid}.jsonl", sid, cwd)
        t.turn(f"what did {sid} decide about the kestrel cache?", f"{sid}: keep it in memory")
        enqueue(runtime.data_dir, {**t.event(), "client": "claude-code"})
    assert worker.drain(writes) == len(SESSIONS)
    return ids


def owner() -> Owner:
    return Owner(kind="test", clients=lambda: 1)


@contextmanager
def slow_kg_query() -> Iterator[threading.Event]:
    """kg_query steps block until the returned event is set (a fault hook for the deadline):
    a recall with one misses `recall.step_timeout_sec`. Released on exit."""
    release = threading.Event()
    original = plan_module.KgQueryStep.rows

    def slow(self: Any, *args: Any, **kwargs: Any) -> Any:
        release.wait(timeout=60)
        return original(self, *args, **kwargs)

    plan_module.KgQueryStep.rows = slow  # type: ignore[method-assign]
    try:
        yield release
    finally:
        release.set()
        plan_module.KgQueryStep.rows = original  # type: ignore[method-assign]
