"""Regressions found by the fuzzing campaign (tests/integration/test_fuzz.py), checked fast
through an in-memory MCP session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from imprint.actors.lifecycle import Runtime
from imprint.config import Config
from imprint.server import MAX_ERROR_CHARS, bounded
from imprint.store.embedder import Embedder
from tests.support.tools import Session


@pytest.fixture
def session(tmp_path: Path, embedder: Embedder) -> Iterator[Session]:
    rt = Runtime(tmp_path / "data", Config(), embedder=embedder).start()
    try:
        yield Session(rt, tmp_path)
    finally:
        rt.stop()


HUGE = "é" * 60_000


@pytest.mark.parametrize(
    ("tool", "args", "argument"),
    [
        ("kg_query", {"workspace": "x" * 120_000}, "workspace"),  # a row function's error
        ("file_summary", {"source": HUGE}, "source"),  # a lookup that quotes the source
        ("graph_scope", {"depth": {"k": "x" * 20_000}}, "depth"),  # argument validation
        ("delete", {"id": [HUGE]}, "id"),
    ],
)
def test_an_error_never_echoes_a_huge_argument(
    session: Session, tool: str, args: dict[str, object], argument: str
) -> None:
    """A refused 60-120 KB argument comes back as one short line naming the argument
    (before the fix: the whole argument, quoted, in a 20-120 KB error)."""
    text = session.error(tool, **args)
    assert text.startswith(f"{argument}: ")
    assert len(text) <= MAX_ERROR_CHARS and "characters)" in text


def test_a_refused_plan_is_named_plan_not_pydantics_union_member(session: Session) -> None:
    """A plan of the wrong shape is reported as `plan...`, without the union member name
    pydantic puts in its location (before the fix: `plan.list[dict[str,any]].0: ...`)."""
    text = session.error("recall", question="q", plan=[[1, 2]])
    assert text.startswith("plan.0: [1, 2] is not allowed"), text


def test_bounded_clips_quoted_values_and_keeps_one_line() -> None:
    """bounded(): each long quoted value clipped with its length, newlines folded, capped."""
    assert bounded("a\nb  c") == "a b c"
    short = "id: no record 'abc' in workspace 'default'"
    assert bounded(short) == short
    long = bounded("source: no source " + repr("x" * 5000) + "; list_sources shows what exists")
    assert long.endswith("… (5002 characters); list_sources shows what exists")
    assert len(bounded("y" * 5000)) == MAX_ERROR_CHARS


def test_a_chunk_index_past_sqlites_integers_is_refused_by_name(session: Session) -> None:
    """file_chunks(start=2**63) is a one-line error naming start, directly and as a recall
    step (before the fix: SQLite's OverflowError, "Error executing tool file_chunks")."""
    session.ok("ingest_content", name="a.md", content="# A\n\nThe auk.")
    text = session.error("file_chunks", source="a.md", start=2**63)
    assert text.startswith("start: 9223372036854775808 is not allowed; a chunk index 0-")
    plan = [{"tool": "file_chunks", "args": {"source": "a.md", "start": 10**30}}]
    recalled = session.ok("recall", question="auk", plan=plan)
    assert "start: 1000000000000000000000000000000 is not allowed" in recalled
