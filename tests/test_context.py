"""Contextual chunk text: the path and heading trail indexed with each chunk, never shown; an
index built with an older text format is migrated and re-indexed in the background."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from imprint.actors.lifecycle import Runtime
from imprint.actors.writer import Writer
from imprint.config import Config
from imprint.ingest.chunking import chunk_text
from imprint.reads.gateway import ActorReads
from imprint.reads.search import SearchArgs, format_search, search
from imprint.reads.status import format_status
from imprint.store.context import TEXT_FORMAT, chunk_contexts, heading_trails, source_label
from imprint.store.embedder import Embedder
from imprint.store.sqlite_write import SqliteWriter
from imprint.store.workspace import WorkspaceStore
from imprint.types import WorkspaceName
from imprint.writes.files import ingest_path
from imprint.writes.repair import status_row
from tests.conftest import write_tree
from tests.support.context import _small_chunks

# "Sampling" is said only in the headings and the path; the second section's text never
# names it, so only its context can tie it to the word.
GUIDE = """# Sampling

A server can borrow the client's language model for a moment: it sends the messages it
wants completed, the client shows them to its user, asks its own model, and returns what
the model wrote, so the server never needs a key of its own or a model on its machine.

## Model preferences

Hints rank the candidates by cost, speed and intelligence; the host picks
whichever model it has that fits them best, and may ignore every hint.
"""
OTHER = """# Roots

Roots tell a server which folders of the user it may look at.
"""


def test_markdown_trails_follow_the_heading_levels_and_skip_code_fences() -> None:
    chunks = [
        "# Guide\n\nintro\n\n## Install\n\nsteps",
        "more install steps\n```\n# not a heading\n```\n",
        "### Linux\n\napt install\n\n## Use\n\nrun it",
        "# Appendix\n\nend",
    ]
    assert heading_trails(chunks, "markdown") == [
        "Guide",
        "Guide > Install",  # no heading of its own: the trail at its start
        "Guide > Install > Linux",  # at its first heading
        "Appendix",
    ]


def test_rst_trails_take_levels_from_the_order_of_underlines() -> None:
    chunks = ["Top\n===\n\ntext\n\nPart\n----\n\nmore", "Sub part\n--------\n\nx\n\nNext\n====\n"]
    assert heading_trails(chunks, "rst") == ["Top", "Top > Sub part"]


def test_code_has_no_trail_and_the_label_is_the_path_in_words() -> None:
    assert heading_trails(["# a comment\nx = 1"], "python") == [""]
    assert source_label("docs/run/asgi-apps_v2.md") == "docs > run > asgi apps v2"
    assert source_label("https://example.org/guide/intro.html") == "example.org > guide > intro"
    assert chunk_contexts("src/x.py", ["a", "b"], "python") == ["src > x", "src > x"]
    assert chunk_contexts("docs/a.md", ["# `Title` with [link](http://x)"], "markdown") == [
        "docs > a | Title with link"
    ]


@pytest.fixture
def ingested(tmp_path: Path, embedder: Embedder) -> Iterator[Runtime]:
    tree = write_tree(tmp_path / "proj", {"docs/sampling.md": GUIDE, "docs/roots.md": OTHER})
    rt = Runtime(tmp_path / "data", _small_chunks(), embedder=embedder).start()
    try:
        ingest_path(rt, tree, project="proj")
        yield rt
    finally:
        rt.stop()


def test_ingest_indexes_the_context_and_shows_only_the_content(ingested: Runtime) -> None:
    reads = ActorReads(ingested)
    rows = search(reads, SearchArgs(query="sampling model preferences", mode="lexical"))
    top = rows.hits[0].record
    assert top.source == "docs/sampling.md" and "Hints rank" in top.content
    assert top.context == "docs > sampling | Sampling > Model preferences"
    shown = format_search(rows, 4000)
    assert "Hints rank" in shown and "docs > sampling" not in shown


def _downgrade(db: Path, embedder: Embedder, vectors: object) -> None:
    """Make a store look as the version before text format 2 wrote it: no context column,
    a one-column FTS index, vectors of the content alone, no recorded format."""
    conn = sqlite3.connect(db)
    conn.executescript(
        """
        DROP TRIGGER records_ai; DROP TRIGGER records_ad; DROP TABLE records_fts;
        ALTER TABLE records DROP COLUMN context;
        DELETE FROM meta;
        CREATE VIRTUAL TABLE records_fts USING fts5(
            content, content='records', content_rowid='rowid',
            tokenize='porter unicode61 remove_diacritics 2');
        CREATE TRIGGER records_ai AFTER INSERT ON records BEGIN
            INSERT INTO records_fts(rowid, content) VALUES (new.rowid, new.content); END;
        CREATE TRIGGER records_ad AFTER DELETE ON records BEGIN
            INSERT INTO records_fts(records_fts, rowid, content)
            VALUES ('delete', old.rowid, old.content); END;
        INSERT INTO records_fts(records_fts) VALUES ('rebuild');
        """
    )
    rows = conn.execute("SELECT id, content FROM records").fetchall()
    conn.close()
    ids, texts = [r[0] for r in rows], [r[1] for r in rows]
    vectors.collection.update(ids=ids, embeddings=embedder.embed(texts).tolist())  # type: ignore[attr-defined]


def test_an_old_store_is_migrated_and_reindexed_in_the_background(
    tmp_path: Path, embedder: Embedder
) -> None:
    tree = write_tree(tmp_path / "proj", {"docs/sampling.md": GUIDE, "docs/roots.md": OTHER})
    data = tmp_path / "data"
    rt = Runtime(data, _small_chunks(), embedder=embedder).start()
    ingest_path(rt, tree, project="proj")
    store = rt.workspace()
    db, vectors = store.sqlite_path, store.vectors
    count = len(store.sqlite.ids())
    _downgrade(db, embedder, vectors)
    rt.stop()

    # A one-shot command's runtime migrates the schema but leaves the re-index to a server,
    # and says so.
    rt = Runtime(data, Config(), embedder=embedder, reindex=False).start()
    try:
        row = status_row(rt)
        assert row.text_format == 1 and not row.reindex and row.consistent
        assert "built with text format 1" in format_status(row)
        columns = [r[1] for r in rt.workspace().sqlite.conn.execute("PRAGMA table_info(records)")]
        assert {"context", "symbol", "line_start", "line_end"} <= set(columns)
        # The migrated FTS index still finds every record by its content.
        hits = search(
            ActorReads(rt), SearchArgs(query="hints rank the candidates", mode="lexical")
        ).hits
        assert hits and hits[0].record.source == "docs/sampling.md"
    finally:
        rt.stop()

    rt = Runtime(data, Config(), embedder=embedder).start()
    try:
        rt.workspace()  # opening it starts the re-index
        deadline = time.monotonic() + 120
        while (row := status_row(rt)).text_format < TEXT_FORMAT:
            assert time.monotonic() < deadline, f"re-index not done: {row.reindex}"
            time.sleep(0.05)
        assert row.consistent and row.records == count and not row.reindex
        assert format_status(row).count("text format") == 0
        sqlite = rt.workspace().sqlite
        records = sqlite.fetch(sqlite.ids())
        assert all(r.context.startswith("docs > ") for r in records.values())
        got = rt.workspace().vectors.collection.get(ids=list(records), include=["embeddings"])
        for rid, vector in zip(got["ids"], got["embeddings"], strict=True):
            want = embedder.embed([records[rid].indexed_text])[0]
            assert np.allclose(vector, want, atol=1e-5), rid
        # Now the heading-only word finds the section that never says it.
        rows = search(
            ActorReads(rt), SearchArgs(query="sampling model preferences", mode="lexical")
        )
        assert "Hints rank" in rows.hits[0].record.content
    finally:
        rt.stop()


def test_reindex_steps_interleave_and_a_crash_loses_nothing(
    tmp_path: Path, embedder: Embedder
) -> None:
    """Each step is a journaled write of at most a batch; the format flips only at the end, so
    an interrupted re-index starts again and finishes."""
    files = {f"docs/page{i}.md": f"# Page {i}\n\nbody {i}\n" for i in range(5)}
    tree = write_tree(tmp_path / "proj", files)
    data = tmp_path / "data"
    rt = Runtime(data, Config(), embedder=embedder).start()
    ingest_path(rt, tree, project="proj")
    store = rt.workspace()
    _downgrade(store.sqlite_path, embedder, store.vectors)
    rt.stop()

    store = WorkspaceStore(data, WorkspaceName("default"), embedder)
    try:
        writer = Writer(store, embedder)
        assert writer.reindex_step(limit=2) is True
        assert writer.reindex_progress() == {"done": 2, "total": 5}
        assert store.sqlite.text_format() == 1
        half = {r.context for r in store.sqlite.fetch(store.sqlite.ids()).values()}
        assert "" in half and "docs > page0 | Page 0" in half
    finally:
        store.close()  # "crash" mid-way: the progress was only in memory
    store = WorkspaceStore(data, WorkspaceName("default"), embedder)
    try:
        writer = Writer(store, embedder)
        steps = 1
        while writer.reindex_step(limit=2):
            steps += 1
        # The two sources done before the crash cost nothing: pages 2-3, then page 4.
        assert steps == 2 and store.sqlite.text_format() == TEXT_FORMAT
        assert writer.reindex_step() is False  # nothing left, nothing done
        contexts = {r.context for r in store.sqlite.fetch(store.sqlite.ids()).values()}
        assert contexts == {f"docs > page{i} | Page {i}" for i in range(5)}
        assert store.sqlite.journal_pending() == []
    finally:
        store.close()


def test_a_new_store_starts_at_the_current_format(tmp_path: Path) -> None:
    store = SqliteWriter(tmp_path / "x.sqlite3")
    assert store.text_format() == TEXT_FORMAT
    store.close()


def test_chunk_text_and_contexts_agree_in_length() -> None:
    pieces = chunk_text(GUIDE * 3, "markdown", 300, 0)
    assert len(chunk_contexts("docs/g.md", pieces, "markdown")) == len(pieces)
