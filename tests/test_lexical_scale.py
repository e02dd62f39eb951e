"""The any-of-the-words BM25 query stays bounded in a large store: above TERM_DOC_BUDGET
records it keeps the query's rarer words (each counted up to the budget, by the index's own
tokenizer), so its cost no longer grows with the records holding a common word. Smaller
stores rank as before. Speed itself is measured in benchmark/scale.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from imprint.store import lexical
from imprint.store.records import Filters, Record, WriteBatch
from imprint.store.sqlite_read import SqliteReader
from imprint.store.sqlite_write import SqliteWriter
from imprint.types import MemoryId


def _store(path: Path, contents: list[str]) -> SqliteWriter:
    store = SqliteWriter(path)
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
    monkeypatch.setattr(lexical, "TERM_DOC_BUDGET", 3)
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
    """Every word too common (counting stops past the budget, so they tie): one of them, the
    longest (function words are short), still makes the query, never an empty one; its
    records come newest first, unscored (BM25 would count every record holding it)."""
    monkeypatch.setattr(lexical, "TERM_DOC_BUDGET", 1)
    store = _store(tmp_path / "s.sqlite", CONTENTS)
    try:
        assert store.rare_words(["running", "common"]) == ["running"]
        assert store.rare_words(["common", "running"]) == ["running"]
        found = store.match("running common", 20, Filters())
        assert found == [(MemoryId("r007"), 0.0), (MemoryId("r006"), 0.0)]
    finally:
        store.close()


def _statements(store: SqliteReader) -> list[str]:
    seen: list[str] = []
    store.conn.set_trace_callback(seen.append)
    return seen


def test_above_the_budget_the_phrase_takes_its_newest_matches_without_bm25(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bm25() counts every record holding the phrase (linear in the store: 15 ms of a 25 ms
    phrase query at 1M records), so a large store ranks the phrase's matches newest first,
    unscored, and stops at the limit; the rarer words after them are still BM25-ranked."""
    monkeypatch.setattr(lexical, "TERM_DOC_BUDGET", 3)
    contents = [*(f"the common phrase {i}" for i in range(6)), "a zebra", "zebra common"]
    store = _store(tmp_path / "s.sqlite", contents)
    try:
        statements = _statements(store)
        got = store.match("common phrase", 2, Filters(), phrase_only=True)
        assert got == [(MemoryId("r005"), 0.0), (MemoryId("r004"), 0.0)]
        phrase_sql = [q for q in statements if "MATCH" in q and "count(*)" not in q]
        assert phrase_sql and not any("bm25" in q for q in phrase_sql)
        both = store.match("zebra common", 4, Filters())
        assert [rid for rid, _ in both][:1] == [MemoryId("r007")]  # the phrase's match
        assert {rid for rid, _ in both} == {MemoryId("r006"), MemoryId("r007")}
        assert both[0][1] == 0.0 and both[1][1] > 0.0  # "zebra" (2 records) by BM25
    finally:
        store.close()


def test_at_or_below_the_budget_the_phrase_is_ranked_by_bm25(tmp_path: Path) -> None:
    """A store of at most TERM_DOC_BUDGET records ranks the phrase by BM25, as before."""
    contents = ["common phrase", "common phrase and a much longer text around it here"]
    store = _store(tmp_path / "s.sqlite", contents)
    try:
        statements = _statements(store)
        got = store.match("common phrase", 2, Filters(), phrase_only=True)
        assert [rid for rid, _ in got] == [MemoryId("r000"), MemoryId("r001")]
        assert all(score > 0.0 for _, score in got)
        assert any("bm25" in q for q in statements)
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
    monkeypatch.setattr(lexical, "TERM_DOC_BUDGET", 3)
    writer = _store(tmp_path / "s.sqlite", CONTENTS)
    reader = SqliteReader(tmp_path / "s.sqlite")
    try:
        assert reader.match("common quokka", 20, Filters())
        late = Record(id=MemoryId("late"), content="a quokka arrives", project="p")
        writer.apply(WriteBatch(upserts=(late,)), None)
        assert MemoryId("late") in {rid for rid, _ in reader.match("common quokka", 20, Filters())}
    finally:
        reader.close()
        writer.close()


@pytest.mark.parametrize("budget", [None, 3])
@pytest.mark.parametrize("limit", [1, 2, 4, 30])
@pytest.mark.parametrize(
    "query",
    ["common phrase", "zebra common", "common words number", "a zebra", "nothing here", "@@ !"],
)
def test_one_pass_gives_the_ranking_and_the_phrase_list_of_two(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, budget: int | None, limit: int, query: str
) -> None:
    """A hybrid search reads its BM25 ranking and its exact-phrase list in one pass
    (`match_and_phrase`): the same two lists as `match` and `match(phrase_only=True)`, in
    a small store and above the budget, whether the phrase fills the limit or not."""
    if budget is not None:
        monkeypatch.setattr(lexical, "TERM_DOC_BUDGET", budget)
    contents = [*(f"the common phrase {i}" for i in range(4)), *CONTENTS, "zebra common"]
    store = _store(tmp_path / "s.sqlite", contents)
    try:
        for filters in (Filters(), Filters(project="p"), Filters(project="elsewhere")):
            ranking = store.match(query, limit, filters)
            phrase = store.match(query, limit, filters, phrase_only=True)
            assert store.match_and_phrase(query, limit, filters) == (ranking, phrase)
    finally:
        store.close()


@pytest.mark.parametrize("budget", [None, 3])
def test_an_unfiltered_ranking_is_the_joined_one_with_ids_looked_up_only_for_the_kept_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, budget: int | None
) -> None:
    """Without filters the BM25 ranking is read from the FTS index alone and joined with the
    records only for the rows it keeps; it is exactly the joined ranking a filter that admits
    every record gets (ties included: six records score alike for "common words"), in a
    small store and above the budget."""
    if budget is not None:
        monkeypatch.setattr(lexical, "TERM_DOC_BUDGET", budget)
    store = _store(tmp_path / "s.sqlite", [*CONTENTS, "zebra common", "Common words, common."])
    try:
        statements = _statements(store)
        scored: list[str] = []
        for query in ("common words", "common runs zebra", "zebra", "words number", "late"):
            for limit in (1, 3, 20):
                statements.clear()
                alone = store.match(query, limit, Filters())
                scored += [s for s in statements if "bm25(" in s]
                assert alone == store.match(query, limit, Filters(project="p")), (query, limit)
                assert alone, query
        assert scored and all(
            "CROSS JOIN records" in s and "JOIN records r ON" not in s for s in scored
        ), scored
    finally:
        store.close()
