"""A filtered vector query looks at the nearest records unfiltered first and filters them
itself (Chroma's `where` gathers every admitted record first: linear in the store); it falls
back to Chroma's filter only when those hold too few matches. Same answers either way, on the
embedded store and on a `chroma run` server. Speed is measured in benchmark/scale.py."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest

from imprint.actors.lifecycle import Runtime
from imprint.actors.write_messages import Write
from imprint.store import vectors as vectors_mod
from imprint.store.embedder import DIMENSIONS
from imprint.store.records import Filters, Record, WriteBatch
from imprint.store.vectors import OVERFETCH, WIDEST, VectorIndex
from imprint.types import MemoryId


def _filled(runtime: Runtime) -> tuple[VectorIndex, np.ndarray]:
    """90 records: 60 in project "big", 29 in "other", 1 in "tiny"; random unit vectors."""
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(90, DIMENSIONS)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    projects = ["big" if i % 3 else "other" for i in range(89)] + ["tiny"]
    records = tuple(
        Record(id=MemoryId(f"v{i:03d}"), content=f"record {i}", project=p)
        for i, p in enumerate(projects)
    )
    return _written(runtime, records, vectors), vectors


def _written(runtime: Runtime, records: tuple[Record, ...], vectors: np.ndarray) -> VectorIndex:
    """The records written through the writer, with these vectors; the index they are in."""
    ws = runtime.resolve("", create=True)
    runtime.workspace(ws)
    runtime.writer(ws).write(Write(batch=WriteBatch(upserts=records)), vectors).get(timeout=120)
    return runtime.workspace(ws).vectors


class _Calls:
    """The collection's queries (their `where`) and gets (their arguments), passed on."""

    def __init__(self, collection: Any) -> None:
        self._collection = collection
        self.wheres: list[Any] = []
        self.gets: list[dict[str, Any]] = []

    def query(self, **kwargs: Any) -> Any:
        self.wheres.append(kwargs.get("where"))
        return self._collection.query(**kwargs)

    def get(self, **kwargs: Any) -> Any:
        self.gets.append(kwargs)
        return self._collection.get(**kwargs)


@contextmanager
def _spied(index: VectorIndex) -> Iterator[_Calls]:
    """The index's collection calls recorded while the block runs."""
    real = index.collection
    calls = _Calls(real)
    index.collection = calls
    try:
        yield calls
    finally:
        index.collection = real


def test_a_filter_that_the_nearest_records_satisfy_needs_no_chroma_where(
    runtime: Runtime,
) -> None:
    """Project "big" (2 in 3 records), limit 5: one unfiltered query of OVERFETCH x 5, only
    "big" records come back, and they are exactly the ones Chroma's own filter returns."""
    index, vectors = _filled(runtime)
    with _spied(index) as calls:
        hits = index.query(vectors[4], 5, Filters(project="big"))
    assert calls.wheres == [None]
    expected = index.collection.query(
        query_embeddings=[vectors[4]], n_results=5, where={"project": "big"}
    )
    assert [rid for rid, _ in hits] == expected["ids"][0]
    assert OVERFETCH * 5 <= 90  # the overfetch did not simply take the whole collection


def test_a_rare_filter_falls_back_to_chromas_where(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Project "tiny" (1 record, far from the query): the unfiltered nearest records miss it,
    so Chroma's filter finds it; nothing of another project comes back. (The widened look is
    capped at the first one's size here: in 90 records it would otherwise see them all.)"""
    monkeypatch.setattr(vectors_mod, "WIDEST", 3 * OVERFETCH)
    index, vectors = _filled(runtime)
    with _spied(index) as calls:
        hits = index.query(vectors[0], 3, Filters(project="tiny"))
    assert [rid for rid, _ in hits] == [MemoryId("v089")]
    assert calls.wheres[-1] == {"project": "tiny"}


def test_too_few_matches_nearby_widen_the_look_before_chromas_where(runtime: Runtime) -> None:
    """Project "far" (6 records pointing away from the query): none of the nearest
    OVERFETCH x 5 records is one of them, so OVERFETCH times as many are looked at, which hold
    all six; Chroma's `where` (linear in the store for a common filter) is not asked, and the
    answer is the one it would give."""
    rng = np.random.default_rng(11)
    vectors = rng.normal(size=(90, DIMENSIONS)).astype(np.float32)
    vectors[84:] = -vectors[0] + rng.normal(scale=0.1, size=(6, DIMENSIONS))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    records = tuple(
        Record(
            id=MemoryId(f"w{i:03d}"), content=f"record {i}", project="far" if i >= 84 else "near"
        )
        for i in range(90)
    )
    index = _written(runtime, records, vectors)
    with _spied(index) as calls:
        hits = index.query(vectors[0], 5, Filters(project="far"))
    assert calls.wheres == [None, None]
    expected = index.collection.query(
        query_embeddings=[vectors[0]], n_results=5, where={"project": "far"}
    )
    assert [rid for rid, _ in hits] == expected["ids"][0]
    assert len(hits) == 5
    assert 5 * OVERFETCH < 84 < min(5 * OVERFETCH * OVERFETCH, WIDEST)


def test_a_small_store_is_searched_exactly_and_a_large_one_with_the_default_beam(
    data_dir: Any, config: Any, embedder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Up to EXACT_UP_TO records the beam (ef_search) is as wide as the store, set when the
    store opens: the 30 nearest of random 384-d vectors (hard for HNSW; the default beam of
    100 missed some here) are exactly numpy's. Over it, a reopened store gets the default."""
    rng = np.random.default_rng(11)
    vectors = rng.normal(size=(1500, DIMENSIONS)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    records = tuple(
        Record(id=MemoryId(f"r{i:04d}"), content=f"record {i}", project="p") for i in range(1500)
    )
    first = Runtime(data_dir, config, embedder=embedder).start()
    try:
        _written(first, records, vectors)
    finally:
        first.stop()
    queries = rng.normal(size=(20, DIMENSIONS)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    rt = Runtime(data_dir, config, embedder=embedder).start()  # opened again: the beam is set
    try:
        index = rt.workspace("").vectors
        assert index.collection.configuration_json["hnsw"]["ef_search"] == vectors_mod.EXACT_UP_TO
        for q in queries:
            exact = [f"r{j:04d}" for j in np.argsort(-(vectors @ q))[:30]]
            assert [rid for rid, _ in index.query(q, 30, Filters())] == exact
    finally:
        rt.stop()
    monkeypatch.setattr(vectors_mod, "EXACT_UP_TO", 1000)
    rt = Runtime(data_dir, config, embedder=embedder).start()
    try:
        index = rt.workspace("").vectors
        wanted = vectors_mod.DEFAULT_EF_SEARCH
        assert index.collection.configuration_json["hnsw"]["ef_search"] == wanted
    finally:
        rt.stop()


def test_every_id_is_listed_in_one_call_however_many(runtime: Runtime) -> None:
    """`ids()` asks Chroma once, with no offset: an offset costs time growing with it, so
    pages of 5,000 made the status check quadratic (over 120 s at a million records)."""
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(6000, DIMENSIONS)).astype(np.float32)
    records = tuple(Record(id=MemoryId(f"i{i:05d}"), content=f"r {i}") for i in range(6000))
    index = _written(runtime, records, vectors)
    with _spied(index) as calls:
        assert index.ids() == {r.id for r in records}
    asked = calls.gets
    assert len(asked) == 1 and "offset" not in asked[0], asked
