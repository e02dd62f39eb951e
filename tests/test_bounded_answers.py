"""Answers stay bounded however many projects a workspace holds (issue 26, finding 11).

With 2,000 projects `status` returned 94,175 characters (docs/tools.md promises under 10 KiB)
and `graph_scope` root at depth 2 ran two reads per project.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

import numpy as np
import pytest

from imprint.actors.lifecycle import Runtime
from imprint.actors.read_messages import ReadMessage
from imprint.actors.write_messages import Write
from imprint.config import Config
from imprint.reads.deadline import Deadline, Pending
from imprint.reads.gateway import ActorReads
from imprint.reads.graph import GraphScopeArgs, graph_rows
from imprint.store.embedder import Embedder
from imprint.store.records import Record, WriteBatch, make_id
from tests.support.hardening import call

R = TypeVar("R")

PROJECTS = 2000
KIB_10 = 10 * 1024


@pytest.fixture
def crowded(data_dir: Path, embedder: Embedder) -> Iterator[Runtime]:
    """A workspace of 2,000 projects written in one batch straight to the writer (random
    unit vectors, no embedding): project p0000 has 3 records in 2 sources, the others 1."""
    rt = Runtime(data_dir, Config(), embedder=embedder).start()
    records = [
        Record(
            id=make_id("file", f"p{i:04d}", f"notes-{i}.md", 0),
            content=f"note {i} of a crowded workspace",
            project=f"p{i:04d}",
            source=f"notes-{i}.md",
            source_type="file",
            chunk_index=0,
            chunk_count=1,
            topics=("crowded",),
        )
        for i in range(PROJECTS)
    ]
    records += [
        Record(
            id=make_id("file", "p0000", f"extra-{k}.md", 0),
            content=f"extra {k}",
            project="p0000",
            source=f"extra-{k}.md" if k == 0 else "notes-0.md",
            source_type="file",
            chunk_index=k + 1,
            chunk_count=3,
        )
        for k in range(2)
    ]
    vectors = np.random.default_rng(11).standard_normal((len(records), 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ws = rt.resolve("", create=True)
    rt.workspace(ws)
    write = Write(batch=WriteBatch(upserts=tuple(records)))
    Deadline(600).wait(rt.writer(ws).write(write, vectors), "crowded write")
    try:
        yield rt
    finally:
        rt.stop()


def test_status_stays_under_10_kib_and_counts_the_projects_it_does_not_list(
    crowded: Runtime, tmp_path: Path
) -> None:
    """With 2,000 projects, status is under 10 KiB; it lists the largest by name and says in
    one line how many projects (and records, sources) it left out."""
    is_error, text = call(crowded, tmp_path, "status", {})
    assert not is_error, text
    assert len(text.encode("utf-8")) < KIB_10, len(text)
    listed = re.findall(r"^  project (\S+):", text, re.MULTILINE)
    assert listed[0] == "p0000" and listed == sorted(listed)  # the largest is among them
    assert "  project p0000: 3 records, 2 sources" in text
    hidden = PROJECTS - len(listed)
    more = f"  {hidden} more projects (smaller, not listed): {hidden} records, {hidden} sources"
    assert more in text, text[-400:]


class CountingReads(ActorReads):
    """The actor gateway, counting the read messages it sends."""

    def __init__(self, runtime: Runtime) -> None:
        super().__init__(runtime)
        self.sent: list[str] = []

    def ask(self, msg: ReadMessage[R]) -> Pending[R]:
        self.sent.append(type(msg).__name__)
        return super().ask(msg)


def test_graph_scope_root_at_depth_2_is_bounded_and_counts_the_rest(
    crowded: Runtime, tmp_path: Path
) -> None:
    """graph_scope root at depth 2 with 2,000 projects sends a fixed number of reads (not two
    per project), lists at most 25 projects (the largest first among them) each with its
    sources, and counts the projects left out in one line."""
    reads = CountingReads(crowded)
    rows = graph_rows(reads, reads.open(""), GraphScopeArgs(scope="root", depth=2))
    assert 0 < len(reads.sent) <= 13, reads.sent  # projects, topics, one grouped read, 10 topics
    projects = [n for n in rows.nodes if n.node.startswith("project:")]
    assert len(projects) == 25 and projects[0].node == "project:p0000"
    assert [c.node for c in projects[0].children] == ["source:extra-0.md", "source:notes-0.md"]
    assert all(len(p.children) == 1 for p in projects[1:])
    assert rows.more.startswith(f"({PROJECTS - 25} more projects with {PROJECTS - 25} records")
    is_error, text = call(crowded, tmp_path, "graph_scope", {"scope": "root", "depth": 2})
    assert not is_error, text
    assert rows.more in text and len(text) < KIB_10
