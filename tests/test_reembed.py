"""A store whose vectors another embedder made (`embedding.model_path`, `tokenizer_path` or
`max_tokens` changed) is embedded again, in steps, and says so until it is done."""

from __future__ import annotations

import html
import time
from pathlib import Path

import numpy as np
import pytest
from starlette.testclient import TestClient

from imprint.actors.lifecycle import Runtime
from imprint.actors.writer import Writer
from imprint.config import Config
from imprint.dashboard import Guard, build_app
from imprint.dashboard import _rows as dashboard_rows
from imprint.reads.gateway import ActorReads
from imprint.reads.search import SearchArgs, search
from imprint.reads.status import StatusRow, format_status, upkeep
from imprint.store.embedder import Embedder
from imprint.store.records import Record, WriteBatch, content_sha, make_id
from imprint.store.workspace import WorkspaceStore
from imprint.types import WorkspaceName
from imprint.writes.files import ingest_path
from imprint.writes.gateway import Writes
from imprint.writes.memories import store_memory
from imprint.writes.repair import status_row
from tests.conftest import write_tree
from tests.support.dashboard_support import owner

# Well over 128 tokens a paragraph: an embedder that keeps 128 of them makes other vectors.
LONG = " ".join(
    f"Paragraph {i} of the handbook: the quartermaster counts lanterns, ropes and barrels "
    f"on deck {i}, writes each count into the ledger, and signs it at the change of watch."
    for i in range(12)
)


def _short(config: Config | None = None) -> Config:
    config = config or Config()
    config.embedding.max_tokens = 128
    return config


def _note(text: str) -> Record:
    sha = content_sha(text)
    return Record(
        id=make_id("memory", "", sha),
        content=text,
        source_type="memory",
        kind="memory",
        content_sha=sha,
    )


def _vectors(store: WorkspaceStore) -> dict[str, np.ndarray]:
    got = store.vectors.collection.get(include=["embeddings"])
    return {rid: np.asarray(v) for rid, v in zip(got["ids"], got["embeddings"], strict=True)}


def _texts(store: WorkspaceStore) -> dict[str, str]:
    return {rid: r.indexed_text for rid, r in store.sqlite.fetch(store.sqlite.ids()).items()}


def _ingested_pages(tmp_path: Path, embedder: Embedder, pages: int) -> tuple[Path, int]:
    """A data dir with `pages` long pages ingested by `embedder`, and its record count."""
    files = {f"docs/page{i}.md": f"# Page {i}\n\n{LONG}\n" for i in range(pages)}
    tree = write_tree(tmp_path / "proj", files)
    data = tmp_path / "data"
    rt = Runtime(data, Config(), embedder=embedder).start()
    try:
        ingest_path(rt, tree, project="proj")
        return data, len(rt.workspace().sqlite.ids())
    finally:
        rt.stop()


def test_a_changed_embedding_model_re_embeds_every_record_in_the_background(
    tmp_path: Path, embedder: Embedder
) -> None:
    tree = write_tree(tmp_path / "proj", {"docs/ledger.md": f"# Ledger\n\n{LONG}\n"})
    data = tmp_path / "data"
    rt = Runtime(data, Config(), embedder=embedder).start()
    try:
        ingest_path(rt, tree, project="proj")
        store_memory(Writes(rt), "Decision: the quartermaster signs the ledger at dusk.")
        before = _vectors(rt.workspace())
        assert not status_row(rt).other_embedder
    finally:
        rt.stop()
    short = Embedder(threads=2, max_tokens=128)
    assert short.identity() != embedder.identity()

    # A one-shot command's runtime leaves the work to a server, and says what is wrong.
    rt = Runtime(data, _short(), embedder=short, reindex=False).start()
    try:
        row = status_row(rt)
        assert row.other_embedder and not row.reembed
        shown = format_status(row)
        assert "vectors: made by another embedding model" in shown
        assert "embedded again in the background while a server" in shown
        now = _vectors(rt.workspace())
        assert set(now) == set(before)
        assert all(np.array_equal(v, before[k]) for k, v in now.items())
    finally:
        rt.stop()

    rt = Runtime(data, _short(), embedder=short).start()
    try:
        rt.workspace()  # opening it starts the work
        deadline = time.monotonic() + 120
        while (row := status_row(rt)).other_embedder:
            assert time.monotonic() < deadline, f"re-embedding not done: {row.reembed}"
            time.sleep(0.05)
        assert row.consistent and not row.reembed
        assert "vectors:" not in format_status(row)
        store = rt.workspace()
        after, texts = _vectors(store), _texts(store)
        assert set(after) == set(before) == set(texts) and len(texts) >= 3
        changed = 0
        for rid, text in texts.items():
            want = short.embed([text])[0]
            assert np.allclose(after[rid], want, atol=1e-5), rid
            changed += not np.allclose(before[rid], want, atol=1e-5)
        assert changed >= 1  # the long paragraphs' vectors; the short memory's is the same
        assert store.sqlite.meta("embedder") == short.identity()
        hits = search(ActorReads(rt), SearchArgs(query="who signs the ledger", mode="semantic"))
        assert hits.hits
    finally:
        rt.stop()


def test_re_embedding_goes_in_steps_and_starts_over_after_a_crash(
    tmp_path: Path, embedder: Embedder
) -> None:
    data, total = _ingested_pages(tmp_path, embedder, 3)
    short = Embedder(threads=2, max_tokens=128)

    store = WorkspaceStore(data, WorkspaceName("default"), short)
    try:
        writer = Writer(store, short)
        assert writer.reembed_due()
        assert writer.reindex_step(limit=2) is True
        assert writer.check().reembed == {"done": 2, "total": total}
        assert writer.check().other_embedder
        # A write meanwhile is embedded by the new model and kept.
        note = _note("the quartermaster's own note")
        writer.write(WriteBatch(upserts=(note,)))
    finally:
        store.close()  # "crash" mid-way: the progress was only in memory
    store = WorkspaceStore(data, WorkspaceName("default"), short)
    try:
        assert store.sqlite.meta("embedder") == embedder.identity()  # not recorded yet
        writer = Writer(store, short)
        steps = 1
        while writer.reindex_step(limit=2):
            steps += 1
        assert steps == (total + 1) // 2 + 1  # all again, the note too, 2 a step
        assert not writer.reembed_due() and not writer.check().other_embedder
        after, texts = _vectors(store), _texts(store)
        assert set(after) == set(texts) and note.id in texts
        for rid, text in texts.items():
            assert np.allclose(after[rid], short.embed([text])[0], atol=1e-5), rid
        assert writer.reindex_step() is False  # nothing left, nothing done
    finally:
        store.close()


def test_a_store_that_recorded_no_embedder_records_this_one(
    tmp_path: Path, embedder: Embedder
) -> None:
    store = WorkspaceStore(tmp_path / "data", WorkspaceName("default"), embedder)
    try:
        writer = Writer(store, embedder)
        writer.write(WriteBatch(upserts=(_note("a note"),)))
        store.sqlite.conn.execute("DELETE FROM meta WHERE key = 'embedder'")
        store.sqlite.conn.commit()
        before = _vectors(store)
        assert writer.reembed_due() is False
        assert store.sqlite.meta("embedder") == embedder.identity()
        assert writer.reindex_step() is False
        assert all(np.array_equal(v, before[k]) for k, v in _vectors(store).items())
    finally:
        store.close()


def test_the_dashboard_overview_shows_the_re_embedding_and_its_progress(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The overview says what `imprint status` says of a store whose vectors another model
    made: mid-way (a writer two records in), with a progress bar of records done; left to a
    server (a runtime that does no upkeep), without one."""
    data, _ = _ingested_pages(tmp_path, embedder, 2)
    short = Embedder(threads=2, max_tokens=128)
    store = WorkspaceStore(data, WorkspaceName("default"), short)
    try:
        writer = Writer(store, short)
        assert writer.reindex_step(limit=2) is True
        midway = StatusRow.of("default", "embedded", writer.check())
    finally:
        store.close()
    total = midway.reembed["total"]
    assert upkeep(midway) == [
        (format_status(midway).splitlines()[-1].strip(), 2, total)
    ]  # the status's own line

    rt = Runtime(data, _short(), embedder=short, reindex=False).start()
    try:
        guard = Guard(8767)
        with TestClient(build_app(rt, guard, owner()), base_url="http://127.0.0.1:8767") as web:
            assert web.get(f"/?token={guard.issue_token()}").status_code == 200
            page = html.unescape(web.get("/").text)
            assert "vectors: made by another embedding model" in page
            assert "embedded again in the background while a server" in page
            assert "<progress" not in page.split("<h2>backups</h2>")[0]
            monkeypatch.setattr(dashboard_rows, "status_row", lambda runtime, ws: midway)
            page = html.unescape(web.get("/").text)
            assert f"embedding them again in the background: 2/{total} records" in page
            assert f'<progress max="{total}" value="2"></progress> 2/{total}' in page
    finally:
        rt.stop()
