"""recall's layout under any budget: step lines give way so evidence and its count survive."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from imprint.recall.evidence import Item, StepResult, merge
from imprint.recall.respond import format_recall

TOOLS = ["search", "get_memory", "neighbors", "file_chunks", "file_summary", "list_sources"]


@st.composite
def step_results(draw: st.DrawFn) -> list[StepResult]:
    count = draw(st.integers(1, 8))
    results = []
    for index in range(1, count + 1):
        tool = draw(st.sampled_from(TOOLS))
        label = f"{tool}(query={'q' * draw(st.integers(0, 400))!r})"
        if draw(st.booleans()):
            error = draw(st.sampled_from(["error", "timeout"]))
            detail = "no record " + "x" * draw(st.integers(0, 3000))
            results.append(StepResult(index=index, label=label, outcome=error, detail=detail))
            continue
        n = draw(st.integers(0, 12))
        items = tuple(
            Item(
                key=f"{index}-{i}",
                meta=f"{index:02d}{i:014d} | proj | {'d/' * draw(st.integers(0, 60))}f#{i} | note",
                content="word " * draw(st.integers(1, 600)),
            )
            for i in range(n)
        )
        results.append(
            StepResult(index=index, label=label, outcome="ok", detail=f"{n} results", items=items)
        )
    return results


@settings(max_examples=300, deadline=None)
@given(results=step_results(), budget=st.integers(1200, 12000), question=st.text(max_size=400))
def test_a_block_and_the_hidden_count_survive_every_budget(
    results: list[StepResult], budget: int, question: str
) -> None:
    """At 1,200-12,000 characters with up to 8 steps and long errors: never over budget, at
    least one block when there is evidence, and a last line counting exactly what is hidden."""
    text = format_recall(question or "q", results, budget)
    assert len(text) <= budget
    total = len(merge(results))
    assert text.startswith("recall ") and f"steps, {total} records" in text.splitlines()[0]
    shown = re.findall(r"^\[(\d+)\] ", text, re.M)
    if total:
        assert shown, text
    hidden = total - len(shown)
    last = text.splitlines()[-1]
    if hidden:
        assert last.startswith(f"({hidden} more result") and last.endswith(")"), last
    else:
        assert "hidden by max_chars" not in text


def test_eight_long_failing_steps_at_1200_keep_a_block_and_the_count() -> None:
    """The case from the issue: 8 steps with long labels and errors at max_chars=1200."""
    results = [
        StepResult(
            index=i,
            label=f"search(query={'long query ' * 20!r})",
            outcome="error",
            detail="query: " + "a very long reason " * 20,
        )
        for i in range(1, 8)
    ]
    items = tuple(
        Item(key=f"k{i}", meta=f"{i:016d} | proj | docs/a.md#{i} | note", content="text " * 200)
        for i in range(10)
    )
    results.append(
        StepResult(index=8, label="search(query='x')", outcome="ok", detail="10", items=items)
    )
    text = format_recall("q", results, 1200)
    assert len(text) <= 1200
    assert re.search(r"^\[1\] 0{16} \| proj", text, re.M), text
    assert re.search(r"^\(\d+ more results hidden by max_chars=1200; ", text.splitlines()[-1])


def test_step_lines_stay_whole_when_they_fit() -> None:
    """With room, every step keeps its full line (label and whole error)."""
    results = [
        StepResult(index=1, label="get_memory(id='0')", outcome="error", detail="id: no record"),
        StepResult(
            index=2,
            label="search(query='x')",
            outcome="ok",
            detail="1 results",
            items=(Item(key="a", meta="a | p | s#0 | note", content="hello"),),
        ),
    ]
    text = format_recall("q", results, 4000)
    assert text.splitlines()[1:3] == [
        "step 1 get_memory(id='0'): error: id: no record",
        "step 2 search(query='x'): 1 results",
    ]
