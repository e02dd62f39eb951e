"""recall's budget packing: one block per source per step, and an index of what the budget hid."""

from __future__ import annotations

import re

import pytest

from imprint.reads.layout import MIN_EXCERPT, Block, layout_blocks, render_blocks
from imprint.reads.search import SearchHit, SearchRows
from imprint.recall.evidence import StepResult, chunk_items, search_items
from imprint.recall.respond import format_recall, layout_recall
from imprint.store.records import Record
from imprint.types import MemoryId

HINT = "raise max_chars"
TEXT = "The herons fly south along the river every autumn, resting on the sandbanks. " * 12


def hit(rid: str, source: str, chunk: int, score: float) -> SearchHit:
    return SearchHit(
        record=Record(
            id=MemoryId(rid),
            content=f"{source} chunk {chunk}. {TEXT}",
            project="p",
            source=source,
            chunk_index=chunk,
        ),
        score=score,
    )


def search_step(index: int, sources: list[str], per_source: int = 1) -> StepResult:
    """A search step whose hits are `per_source` chunks of each source, best first."""
    hits = [
        hit(f"{index:02d}{s:04d}{c:02d}00000000", src, c, 1.0 / (1 + s + c))
        for s, src in enumerate(sources)
        for c in range(per_source)
    ]
    rows = SearchRows(query=f"q{index}", mode="hybrid", hits=tuple(hits))
    items, detail = search_items(rows)
    return StepResult(
        index=index,
        label=f"search(query='q{index}')",
        outcome="ok",
        detail=detail,
        items=tuple(items),
    )


def blocks_in(text: str) -> list[str]:
    """The full blocks: a provenance line with `|`, then the excerpt."""
    return [b for b in text.split("\n\n") if re.match(r"\[\d+\] \S+ \| ", b)]


def listed_in(text: str) -> list[str]:
    return re.findall(r"^\[\d+\] (\S+#\d+(?: \+#[\d,#]+)?) \d\.\d{4}$", text, re.M)


def test_a_search_step_folds_later_chunks_of_a_source_into_its_block() -> None:
    """One item per source in a search step; its other chunks are named in the header."""
    rows = SearchRows(
        query="q",
        mode="hybrid",
        hits=(
            hit("a" * 16, "docs/a.md", 3, 0.9),
            hit("b" * 16, "docs/b.md", 0, 0.8),
            hit("c" * 16, "docs/a.md", 2, 0.7),
            hit("d" * 16, "docs/a.md", 5, 0.6),
        ),
    )
    items, detail = search_items(rows)
    assert [i.key for i in items] == ["a" * 16, "b" * 16]
    assert items[0].meta == f"{'a' * 16} | p | docs/a.md#3 +#2,#5 | note | 0.9000"
    assert items[0].index == "docs/a.md#3 +#2,#5 0.9000"
    assert items[1].index == "docs/b.md#0 0.8000"
    assert detail == "4 results, 2 folded"


def test_file_chunks_are_not_folded() -> None:
    """A file read keeps every chunk it asked for: folding is for ranked search results."""
    from imprint.reads.chunks import ChunkRows

    recs = [hit(f"{c:016d}", "docs/a.md", c, 0.5).record for c in range(3)]
    items, _ = chunk_items(
        ChunkRows(source="docs/a.md", start=0, end=2, total=3, records=tuple(recs))
    )
    assert [i.index for i in items] == ["docs/a.md#0", "docs/a.md#1", "docs/a.md#2"]


@pytest.mark.parametrize("budget", [1200, 2000, 4000, 8000, 12000])
def test_the_budget_lists_what_it_hides_and_keeps_one_width(budget: int) -> None:
    """Three steps of ten sources: every result is a block or an index line where that fits,
    else counted; blocks keep one excerpt width of at least 300; never over the budget."""
    results = [search_step(i, [f"docs/s{i}/f{n}.md" for n in range(10)]) for i in (1, 2, 3)]
    laid = layout_recall("q", results, budget)
    text = laid.text
    assert len(text) <= budget
    blocks, listed = blocks_in(text), listed_in(text)
    assert laid.shown == len(blocks) >= 1 and laid.listed == len(listed)
    hidden = 30 - laid.shown
    if hidden:
        assert text.splitlines()[-1].startswith(f"({hidden} more results hidden by max_chars")
    if budget >= 4000:
        assert laid.shown + laid.listed == 30  # every source named at the default budget
    # The index lines continue the numbering after the blocks, in rank order.
    numbers = [int(n) for n in re.findall(r"^\[(\d+)\] ", text, re.M)]
    assert numbers == list(range(1, laid.shown + laid.listed + 1))
    excerpts = [b.split("\n", 1)[1] for b in blocks]
    widths = {len(e) for e in excerpts}
    assert len(widths) == 1 and min(widths) >= MIN_EXCERPT


def test_every_step_gets_its_first_results_shown_before_any_later_ones() -> None:
    """Budget shares by rank: each step's best source is a block before any step's second."""
    results = [search_step(i, [f"docs/s{i}/f{n}.md" for n in range(10)]) for i in (1, 2, 3)]
    text = format_recall("q", results, 4000)
    firsts = [f"docs/s{i}/f0.md#0" for i in (1, 2, 3)]
    shown = "\n\n".join(blocks_in(text))
    assert all(f in shown for f in firsts)


def test_folding_makes_room_for_other_sources() -> None:
    """Three chunks per source: 10 sources per step named, not 3-4 sources thrice."""
    results = [
        search_step(i, [f"docs/s{i}/f{n}.md" for n in range(10)], per_source=3) for i in (1, 2)
    ]
    text = format_recall("q", results, 4000)
    named = set(re.findall(r"(docs/s\d/f\d+\.md)#", text))
    assert len(named) == 20


def test_without_index_lines_the_layout_is_unchanged() -> None:
    """search's blocks carry no index line: render_blocks is what it was (no listing)."""
    blocks = [Block(meta=f"m{i}", content=TEXT) for i in range(30)]
    laid = layout_blocks(["head"], blocks, 4000, hint=HINT)
    assert laid.listed == 0 and laid.text == render_blocks(["head"], blocks, 4000, hint=HINT)
    assert (
        laid.text.splitlines()[-1]
        == f"({30 - laid.shown} more results hidden by max_chars=4000; {HINT})"
    )


def test_a_tiny_budget_lists_what_fits_and_counts_the_rest() -> None:
    """When not every hidden result can be listed: one block, index lines by rank, a count."""
    blocks = [
        Block(meta=f"id{i} | p | s{i}.md#0 | note", content=TEXT, index=f"s{i}.md#0 0.5000")
        for i in range(60)
    ]
    laid = layout_blocks(["head"], blocks, 1200, hint=HINT)
    assert laid.shown == 1 and 0 < laid.listed < 59 and len(laid.text) <= 1200
    assert laid.text.splitlines()[-1].startswith("(59 more results hidden by max_chars=1200")
    assert f"[{laid.listed + 1}] s{laid.listed}.md#0 0.5000" in laid.text
