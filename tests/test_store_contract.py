"""The storage seam's contract: the local store and the PostgreSQL team store give the same
answers to the same calls (up to ranking ties). Every test runs on both."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from imprint.store.embedder import Embedder
from imprint.store.records import (
    Fact,
    Filters,
    Record,
    SourceEntry,
    SupersedeLink,
    WriteBatch,
    text_key,
)
from imprint.store.seam import MemoryStore
from imprint.types import MemoryId, WorkspaceName
from tests.support.postgres_support import fresh_workspace, team_database  # noqa: F401 (a fixture)

pytest.importorskip("psycopg")


def _open(kind: str, tmp_path: Path, embedder: Embedder, request: pytest.FixtureRequest):
    if kind == "local":
        from imprint.actors.local_store import LocalStore

        return LocalStore(tmp_path / "data", WorkspaceName("contract"), embedder)
    from imprint.store.postgres import PostgresStore, open_pool

    pool = open_pool(request.getfixturevalue("team_database"), max_size=2)
    request.addfinalizer(pool.close)
    return PostgresStore(pool, fresh_workspace(), embedder)


@pytest.fixture(params=["local", "postgres"])
def store(
    request: pytest.FixtureRequest, tmp_path: Path, embedder: Embedder
) -> Iterator[MemoryStore]:
    opened = _open(request.param, tmp_path, embedder, request)
    try:
        yield opened
    finally:
        opened.close()


def memory(mid: str, content: str, **kw: object) -> Record:
    fields: dict[str, object] = {"project": "p", "source_type": "memory", "created_at": 1000.0}
    fields.update(kw)
    return Record.model_validate({"id": mid, "content": content, **fields})


def chunk(source: str, index: int, count: int, content: str, **kw: object) -> Record:
    return Record.model_validate(
        {
            "id": f"{source}#{index}",
            "content": content,
            "project": "p",
            "source": source,
            "source_type": "file",
            "chunk_index": index,
            "chunk_count": count,
            "created_at": 1000.0 + index,
            "source_mtime": 50.0,
            **kw,
        }
    )


def entry(source: str, count: int, sha: str = "s1") -> SourceEntry:
    return SourceEntry(
        project="p", source=source, source_type="file", mtime=50.0, sha=sha, chunk_count=count
    )


CORPUS = (
    memory("m1", "We chose PostgreSQL with pgvector for the team server", type="decision"),
    memory("m2", "The writer actor journals every batch before Chroma sees it", type="pattern"),
    memory("m3", "Tokens are verified against the issuer JWKS, cached by kid", type="finding"),
    memory("m4", "read only hint marks tools that never write", lang="python"),
    memory("m5", "Bananas ripen faster next to apples", project="q"),
)


def test_a_written_record_reads_back_whole(store: MemoryStore) -> None:
    """fetch returns every field as written; unknown ids are simply absent."""
    rec = memory(
        "m1", "x content", type="decision", domains=("db",), topics=("pg", "x"),
        context="notes/db.md", symbol="A.b", line_start=3, line_end=9, head="def b():\n  ...",
    )  # fmt: skip
    store.write(WriteBatch(upserts=(rec,)))
    assert store.fetch(["m1", "nope"]) == {MemoryId("m1"): rec}


def test_lexical_ranks_phrase_first_and_honours_filters(store: MemoryStore) -> None:
    """The exact phrase leads; any of the words follows; filters cut; no match is empty."""
    store.write(WriteBatch(upserts=CORPUS))
    ids = [i for i, _ in store.match("team server", 10, Filters())]
    assert ids[0] == "m1"
    assert [i for i, _ in store.match("writer Chroma", 10, Filters())] == ["m2"]
    assert [i for i, _ in store.match("apples", 10, Filters(project="p"))] == []
    assert [i for i, _ in store.match("apples", 10, Filters(project="q"))] == ["m5"]
    assert [i for i, _ in store.match("hint", 10, Filters(lang="python"))] == ["m4"]
    assert store.match("zzzunknownword", 10, Filters()) == []


def test_lexical_finds_identifier_parts(store: MemoryStore) -> None:
    """A camelCase query word finds its words written apart (`readOnlyHint`)."""
    store.write(WriteBatch(upserts=CORPUS))
    assert "m4" in [i for i, _ in store.match("readOnlyHint", 10, Filters())]


def test_lexical_query_syntax_is_inert(store: MemoryStore) -> None:
    """Operators in user text are words, not syntax: no error, no match-all."""
    store.write(WriteBatch(upserts=CORPUS))
    for text in ("!!& | <->", "JWKS:*", "'kid' & !issuer", '"unclosed'):
        hits = store.match(text, 10, Filters())
        assert len(hits) <= 1, text
    assert [i for i, _ in store.match("JWKS:*", 10, Filters())] == ["m3"]


def test_vectors_nearest_and_neighbors(store: MemoryStore, embedder: Embedder) -> None:
    """The nearest record to a text's embedding is that text's record; neighbors leave the
    record itself out and are best first."""
    store.write(WriteBatch(upserts=CORPUS))
    vector = embedder.embed([CORPUS[2].indexed_text])[0]
    hits = store.query(vector, 3, Filters())
    assert hits[0][0] == "m3" and hits[0][1] == pytest.approx(1.0, abs=1e-3)
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    assert [i for i, _ in store.query(vector, 5, Filters(project="q"))] == ["m5"]
    near = store.neighbors("m3", 2)
    assert len(near) == 2 and "m3" not in [i for i, _ in near]
    assert store.neighbors("nope", 3) == []


def test_a_source_written_again_loses_its_old_chunks(store: MemoryStore) -> None:
    """Writing a source with its registry entry replaces its chunks; chunk ranges and totals,
    the listing and the entry follow."""
    store.write(
        WriteBatch(
            upserts=tuple(chunk("a.py", i, 3, f"alpha part {i}", lang="python") for i in range(3)),
            set_sources=(entry("a.py", 3),),
        )
    )
    got, total = store.source_chunks("p", "a.py", 1, 5)
    assert [r.chunk_index for r in got] == [1, 2] and total == 3
    again = chunk("a.py", 0, 1, "alpha again")
    store.write(WriteBatch(upserts=(again,), set_sources=(entry("a.py", 1, "s2"),)))
    got, total = store.source_chunks("p", "a.py", 0, 9)
    assert [r.content for r in got] == ["alpha again"] and total == 1
    rows, count = store.list_sources("p", "", "", 10)
    assert count == 1 and rows[0].source == "a.py" and rows[0].chunks == 1
    found = store.source_entry("p", "a.py")
    assert found is not None and found.sha == "s2" and found.chunk_count == 1
    store.write(WriteBatch(drop_sources=(("p", "a.py"),)))
    assert store.source_chunks("p", "a.py", 0, 9) == ([], 0)
    assert store.source_entry("p", "a.py") is None
    assert "source:p|a.py" in store.tombstones()


def test_delete_leaves_a_tombstone_and_drops_links(store: MemoryStore) -> None:
    """Deleting the newer memory drops its supersede link and marks it; writing it again
    clears the mark."""
    link = SupersedeLink(old=MemoryId("m1"), new=MemoryId("m2"), at=2000.0)
    store.write(WriteBatch(upserts=CORPUS[:2], supersede=(link,)))
    assert store.supersede_links(["m1"]) == [link]
    store.write(WriteBatch(delete_ids=(MemoryId("m2"),)))
    assert store.fetch(["m2"]) == {}
    assert store.supersede_links(["m1", "m2"]) == []
    assert "memory:m2" in store.tombstones()
    store.write(WriteBatch(upserts=(CORPUS[1],)))
    assert "memory:m2" not in store.tombstones()


def test_facts_hold_until_ended(store: MemoryStore) -> None:
    """Facts match subject and predicate without case; ended ones only when asked."""
    first = Fact(id="f1", subject="Imprint", predicate="uses", object="SQLite", valid_from=1.0)
    second = first.model_copy(update={"id": "f2", "subject": "imprint", "object": "PG"})
    store.write(WriteBatch(add_facts=(first, second.model_copy(update={"valid_from": 2.0}))))
    assert [f.id for f in store.facts("IMPRINT", "USES", False, 10)] == ["f2", "f1"]
    store.write(WriteBatch(end_facts=(("f1", 3.0),)))
    assert [f.id for f in store.facts("imprint", "", False, 10)] == ["f2"]
    ended = store.fact("f1")
    assert ended is not None and ended.ended == 3.0
    assert [f.id for f in store.facts("", "", True, 1)] == ["f2"]
    assert store.fact("nope") is None


def test_same_text_and_projects(store: MemoryStore) -> None:
    """A memory's text key finds it in its own project only; projects are counted."""
    store.write(WriteBatch(upserts=CORPUS))
    key = text_key(CORPUS[0].content)
    assert store.same_text("p", key) == "m1"
    assert store.same_text("q", key) is None
    assert store.projects() == [("p", 4), ("q", 1)]


def test_both_stores_give_the_same_answers(
    tmp_path: Path, embedder: Embedder, request: pytest.FixtureRequest
) -> None:
    """The same corpus and queries: the same top hit lexically and by vector, the same
    fetched records."""
    local = _open("local", tmp_path, embedder, request)
    team = _open("postgres", tmp_path, embedder, request)
    try:
        texts = [
            "the daemon owns one data dir", "hooks capture transcripts at stop",
            "recall merges step results round robin", "facts carry a valid from date",
            "tombstones record deletes for sync", "the embedder is MiniLM with 384 dimensions",
            "HNSW finds nearest vectors approximately", "BM25 ranks rare words higher",
        ]  # fmt: skip
        batch = WriteBatch(upserts=tuple(memory(f"r{i}", t) for i, t in enumerate(texts)))
        vectors = embedder.embed([r.indexed_text for r in batch.upserts])
        local.write(batch, vectors)
        team.write(batch, vectors)
        assert local.fetch([f"r{i}" for i in range(8)]) == team.fetch([f"r{i}" for i in range(8)])
        for query in ("valid from", "nearest vectors", "data dir daemon", "rare words"):
            assert local.match(query, 3, Filters())[0][0] == team.match(query, 3, Filters())[0][0]
            q = embedder.embed([query])[0]
            a, b = local.query(q, 3, Filters()), team.query(q, 3, Filters())
            assert [i for i, _ in a] == [i for i, _ in b]
            assert np.allclose([s for _, s in a], [s for _, s in b], atol=1e-3)
    finally:
        local.close()
        team.close()
