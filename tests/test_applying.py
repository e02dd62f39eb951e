"""A search during a write sees its vectors before its records (the writer upserts Chroma,
then SQLite): that is not the damage `warning: N results had no record` reports
(`imprint.store.applying`); a record really missing still is (tests/integration/test_repair.py)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from imprint.actors.lifecycle import Runtime
from imprint.reads.gateway import ActorReads
from imprint.reads.search import SearchArgs, search
from imprint.store.applying import Applying
from imprint.store.sqlite_write import SqliteWriter
from imprint.writes.gateway import Writes
from imprint.writes.memories import store_memory

WAIT_SEC = 60.0


def test_a_search_between_a_writes_vectors_and_its_records_warns_of_nothing(
    rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer is held after its vector upsert, before its SQLite apply: a search then
    finds the new vector with no record, shows no warning and leaves it out; once the
    write is applied the memory is found."""
    writes = Writes(rt)
    store_memory(writes, "Tealmoth notes: the first memory, applied before the hold.")
    entered, release = threading.Event(), threading.Event()
    original = SqliteWriter.apply

    def held_apply(self: SqliteWriter, *args: Any, **kwargs: Any) -> Any:
        entered.set()
        assert release.wait(WAIT_SEC)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(SqliteWriter, "apply", held_apply)
    stored: list[str] = []
    writer = threading.Thread(
        target=lambda: stored.append(
            store_memory(writes, "Tealmoth decision: the second memory, held mid-write.")
        )
    )
    writer.start()
    try:
        assert entered.wait(WAIT_SEC)
        rows = search(ActorReads(rt), SearchArgs(query="tealmoth second memory held", limit=5))
        assert rows.warning == ""
        assert all("second memory" not in hit.record.content for hit in rows.hits)
    finally:
        release.set()
        writer.join(WAIT_SEC)
    assert stored
    after = search(ActorReads(rt), SearchArgs(query="tealmoth second memory held", limit=5))
    assert after.warning == ""
    assert any("second memory" in hit.record.content for hit in after.hits)


def test_the_writer_marks_its_ids_in_the_runtime_s_applying(
    rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ids in flight reach searches through the one `Applying` the Runtime hands its
    writers and its reads, no module state: held mid-apply, the memory's id is marked there
    and in `ActorReads(rt).applying`, and nowhere in another Runtime's."""
    writes = Writes(rt)
    ws = rt.resolve("")
    entered, release = threading.Event(), threading.Event()
    original = SqliteWriter.apply
    held: list[str] = []

    def held_apply(self: SqliteWriter, batch: Any, *args: Any, **kwargs: Any) -> Any:
        held.extend(r.id for r in batch.upserts)
        entered.set()
        assert release.wait(WAIT_SEC)
        return original(self, batch, *args, **kwargs)

    monkeypatch.setattr(SqliteWriter, "apply", held_apply)
    writer = threading.Thread(target=lambda: store_memory(writes, "Tealmoth: held mid-write."))
    writer.start()
    try:
        assert entered.wait(WAIT_SEC)
        before = rt.applying.applied_count(ws)
        assert rt.applying.being_applied(ws, held) == set(held) != set()
        assert ActorReads(rt).applying is rt.applying
        assert Applying().being_applied(ws, held) == set()
    finally:
        release.set()
        writer.join(WAIT_SEC)
    assert rt.applying.being_applied(ws, held) == set()
    assert rt.applying.applied_count(ws) == before + 1


def test_ids_are_marked_while_applied_and_each_apply_is_counted() -> None:
    """Marked ids are seen only during their block, per workspace, nested blocks of the
    same id included; every block that ends counts as an apply, a failed one too."""
    marks = Applying()
    with marks.applying("one", ["a", "b"]):
        assert marks.being_applied("one", ["a", "b", "c"]) == {"a", "b"}
        assert marks.being_applied("other", ["a"]) == set()
        with marks.applying("one", ["a"]):
            pass
        assert marks.being_applied("one", ["a"]) == {"a"}
    assert marks.being_applied("one", ["a", "b"]) == set()
    with pytest.raises(RuntimeError), marks.applying("one", ["c"]):
        raise RuntimeError("the apply failed")
    assert marks.being_applied("one", ["c"]) == set()
    assert marks.applied_count("one") == 3
    assert marks.applied_count("other") == 0
