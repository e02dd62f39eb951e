"""The any-of-the-words BM25 query stays bounded in a large store: above TERM_DOC_BUDGET
records it keeps the query's rarer words (each counted up to the budget, by the index's own
tokenizer), so its cost no longer grows with the records holding a common word. Smaller
stores rank as before. Speed itself is measured in benchmark/scale.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from imprint.store import sqlite as sqlite_mod
from imprint.store.records import Record
from imprint.store.sqlite import Filters, SqliteStore, WriteBatch
from imprint.types import MemoryId


def _store(path: Path, contents: list[str]) -> SqliteStore:
    store = SqliteStore(path)
    records = tuple(
        Record(id=MemoryId(f"r{i:03d}"), content=text, project="p")
        for i, text in enumerate(contents)
    )
    store.apply(WriteBatch(upserts=records), None)
    return store


# Eight records say "common"; two say "running" (stemmed "run"); one says "zebra".
CONTENTS = [*(f"common words number {i}" for i in range(6)), "common running", "running late"]
CONTENTS += ["common thing", "a zebra"]


def test_above_the_budget_the_commonest_words_are_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a budget of 3 records: "runs" (2 records, found by its stem) and "zebra" (1) are
    kept, "common" (8) is dropped, so a record holding only "common" is not a candidate."""
    monkeypatch.setattr(sqlite_mod, "TERM_DOC_BUDGET", 3)
    store = _store(tmp_path / "s.sqlite", CONTENTS)
    try:
        assert store.rare_words(["common", "runs", "zebra"]) == ["runs", "zebra"]
        found = {rid for rid, _ in store.match("common runs zebra", 20, Filters())}
        assert found == {MemoryId("r006"), MemoryId("r007"), MemoryId("r009")}
    finally:
        store.close()


def test_one_word_is_kept_even_when_all_are_over_the_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every word too common (counting stops past the budget, so they tie): the first of
    them still makes the query, never an empty one."""
    monkeypatch.setattr(sqlite_mod, "TERM_DOC_BUDGET", 1)
    store = _store(tmp_path / "s.sqlite", CONTENTS)
    try:
        assert store.rare_words(["running", "common"]) == ["running"]
        assert store.rare_words(["common", "running"]) == ["common"]
        found = {rid for rid, _ in store.match("running common", 20, Filters())}
        assert {MemoryId("r006"), MemoryId("r007")} <= found
    finally:
        store.close()


def test_at_or_below_the_budget_every_word_counts(tmp_path: Path) -> None:
    """A store of at most TERM_DOC_BUDGET records: the query keeps all its words, as before."""
    store = _store(tmp_path / "s.sqlite", CONTENTS)
    try:
        assert store.rare_words(["common", "runs", "zebra"]) == ["common", "runs", "zebra"]
        assert len(store.match("common runs zebra", 20, Filters())) == 10
    finally:
        store.close()


def test_a_reader_still_sees_new_writes_after_a_bounded_query(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stemming the query words must not open a transaction on the reader's connection
    (that would pin its snapshot): a record written after a query is found by the next."""
    monkeypatch.setattr(sqlite_mod, "TERM_DOC_BUDGET", 3)
    writer = _store(tmp_path / "s.sqlite", CONTENTS)
    reader = SqliteStore(tmp_path / "s.sqlite", readonly=True)
    try:
        assert reader.match("common quokka", 20, Filters())
        late = Record(id=MemoryId("late"), content="a quokka arrives", project="p")
        writer.apply(WriteBatch(upserts=(late,)), None)
        assert MemoryId("late") in {rid for rid, _ in reader.match("common quokka", 20, Filters())}
    finally:
        reader.close()
        writer.close()
