"""One block per source (issue 32): a search shows each source once, at its best chunk, with
the source's other matching chunks named in the header; `by_chunk` (the tool's
`detail="chunks"`) gives the per-chunk list; history pages give way unless the question
asks when something changed."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from imprint.actors.lifecycle import Runtime
from imprint.config import Config
from imprint.reads.gateway import ActorReads
from imprint.reads.ranking import (
    SOURCE_NEAR,
    Fusion,
    Why,
    by_source,
    history_chunk,
    history_question,
    licence_chunk,
    rerank,
)
from imprint.reads.search import SearchArgs, format_search, meta_line, search
from imprint.store.embedder import Embedder
from imprint.store.records import Record
from imprint.types import MemoryId
from imprint.writes.files import ingest_path
from tests.conftest import write_tree

# A long page about espresso (several chunks, each about grinding), and two short pages.
_SECTION = (
    "## Grinding, part {n}\n\nGrind espresso beans fine, just before brewing; a burr grinder "
    "set finer gives a slower espresso shot. Step {n} of the grinding routine repeats the "
    "dose, the tamp and the timing so each espresso shot pulls the same. " * 3
)
FILES = {
    "docs/espresso.md": "# Espresso\n\n" + "\n\n".join(_SECTION.format(n=n) for n in range(6)),
    "docs/grinders.md": "# Grinders\n\nA burr grinder crushes espresso beans evenly.\n",
    "docs/tea.md": "# Tea\n\nSteep green tea leaves at 80 degrees for two minutes.\n",
}
QUERY = "grind espresso beans with a burr grinder"


def _record(rid: str, source: str, chunk: int, content: str = "", context: str = "") -> Record:
    return Record(
        id=MemoryId(rid), content=content or rid, source=source, chunk_index=chunk,
        project="p", context=context,
    )  # fmt: skip


def _why() -> Why:
    return Why(fused=0.0)


@pytest.fixture
def runtime(tmp_path: Path, embedder: Embedder) -> Iterator[Runtime]:
    config = Config()
    config.ingest.chunk_chars = 400
    config.ingest.chunk_overlap = 0
    rt = Runtime(tmp_path / "data", config, embedder=embedder).start()
    try:
        ingest_path(rt, write_tree(tmp_path / "proj", FILES), project="proj")
        yield rt
    finally:
        rt.stop()


def test_by_source_keeps_each_source_once_and_names_its_other_chunks() -> None:
    """Chunks fold into their source's first (best) entry in rank order, later chunks of a
    shown source are named even past the limit, an inline memory stands alone."""
    records = {
        MemoryId("a3"): _record("a3", "a.md", 3),
        MemoryId("b0"): _record("b0", "b.md", 0),
        MemoryId("a1"): _record("a1", "a.md", 1),
        MemoryId("m1"): _record("m1", "", 0),
        MemoryId("c0"): _record("c0", "c.md", 0),
        MemoryId("a7"): _record("a7", "a.md", 7),
    }
    ranked = [(rid, 1.0 / (i + 1), _why()) for i, rid in enumerate(records)]
    got = by_source(ranked, records, limit=3, near=0)
    assert [(rid, also) for rid, _, _, also in got] == [
        ("a3", (1, 7)),
        ("b0", ()),
        ("m1", ()),
    ]
    assert by_source(ranked, records, limit=10, named=1, near=0)[0][3] == (1,)


def test_a_chunk_near_the_top_keeps_its_own_block_beside_its_source() -> None:
    """Among the first `near` candidates (3 by default) a second chunk of a shown source is
    a block of its own (a file holding the best few chunks shows them, as a function and its
    class); past them it is only named in the first block's header."""
    records = {
        MemoryId("a3"): _record("a3", "a.md", 3),
        MemoryId("a1"): _record("a1", "a.md", 1),
        MemoryId("b0"): _record("b0", "b.md", 0),
        MemoryId("a7"): _record("a7", "a.md", 7),
        MemoryId("c0"): _record("c0", "c.md", 0),
    }
    ranked = [(rid, 1.0 / (i + 1), _why()) for i, rid in enumerate(records)]
    got = by_source(ranked, records, limit=10)
    assert [(rid, also) for rid, _, _, also in got] == [
        ("a3", (7,)),
        ("a1", ()),
        ("b0", ()),
        ("c0", ()),
    ]
    assert [rid for rid, _, _, _ in by_source(ranked, records, limit=10, near=1)] == [
        "a3",
        "b0",
        "c0",
    ]


def test_a_code_chunk_keeps_its_own_block_further_down_than_prose() -> None:
    """A chunk with a symbol (a function of a code file) keeps a block of its own among the
    first `near_code` candidates (5), a prose chunk only among the first `near` (3): at rank
    4 the function gets its own block, the section is only named."""
    code = {
        MemoryId("a0"): _record("a0", "a.py", 0),
        MemoryId("b0"): _record("b0", "b.py", 0),
        MemoryId("c0"): _record("c0", "c.py", 0),
        MemoryId("a4"): _record("a4", "a.py", 4).model_copy(update={"symbol": "Client.send"}),
        MemoryId("a9"): _record("a9", "a.py", 9).model_copy(update={"symbol": "Client.close"}),
        MemoryId("a5"): _record("a5", "a.py", 5).model_copy(update={"symbol": "Client.get"}),
    }
    ranked = [(rid, 1.0 / (i + 1), _why()) for i, rid in enumerate(code)]
    got = [(rid, also) for rid, _, _, also in by_source(ranked, code, limit=10)]
    assert got == [("a0", (5,)), ("b0", ()), ("c0", ()), ("a4", ()), ("a9", ())]
    prose = {rid: rec.model_copy(update={"symbol": ""}) for rid, rec in code.items()}
    got = [(rid, also) for rid, _, _, also in by_source(ranked, prose, limit=10)]
    assert got == [("a0", (4, 9, 5)), ("b0", ()), ("c0", ())]


def test_the_same_path_in_two_projects_is_two_sources() -> None:
    """Folding goes by (project, source): `README.md` of two projects is shown twice."""
    one = _record("x", "README.md", 0)
    two = one.model_copy(update={"id": MemoryId("y"), "project": "q"})
    got = by_source([("x", 1.0, _why()), ("y", 0.5, _why())], {one.id: one, two.id: two}, 5)
    assert [rid for rid, *_ in got] == ["x", "y"]


def test_a_header_names_the_other_chunks_after_the_chunk() -> None:
    """`source#chunk +#a,#b` in the provenance line, the rest of the line unchanged."""
    record = _record("0123456789abcdef", "docs/migration.md", 37)
    plain = meta_line(record, 0.5)
    assert meta_line(record, 0.5, also=(68, 102)) == plain.replace(
        "docs/migration.md#37 |", "docs/migration.md#37 +#68,#102 |"
    )


def test_a_search_shows_one_block_per_source_with_its_other_chunks(runtime: Runtime) -> None:
    """The long page's first hit names its other matching chunks in its header; a source
    shows a second block only among the first SOURCE_NEAR hits, and the other files follow
    instead of more chunks of the same page."""
    rows = search(ActorReads(runtime), SearchArgs(query=QUERY))
    sources = [h.record.source for h in rows.hits]
    assert set(sources) == set(FILES)
    repeats = [i for i, s in enumerate(sources) if s in sources[:i]]
    assert all(i < SOURCE_NEAR for i in repeats), sources
    espresso = next(h for h in rows.hits if h.record.source == "docs/espresso.md")
    assert len(espresso.also) >= 1
    assert espresso.record.chunk_index not in espresso.also
    text = format_search(rows, 12000)
    also = ",".join(f"#{c}" for c in espresso.also)
    assert f"docs/espresso.md#{espresso.record.chunk_index} +{also} |" in text
    assert text.count("docs/espresso.md#") == sources.count("docs/espresso.md")


@pytest.mark.parametrize("mode", ["hybrid", "semantic", "lexical"])
def test_by_chunk_gives_the_per_chunk_list(runtime: Runtime, mode: str) -> None:
    """`by_chunk=True` lists chunks one by one (several of the long page, none folded); the
    grouped search's first hit is the per-chunk list's first."""
    reads = ActorReads(runtime)
    chunks = search(reads, SearchArgs(query=QUERY, mode=mode, by_chunk=True))  # type: ignore[arg-type]
    grouped = search(reads, SearchArgs(query=QUERY, mode=mode))  # type: ignore[arg-type]
    sources = [h.record.source for h in chunks.hits]
    assert sources.count("docs/espresso.md") >= 3
    assert all(h.also == () for h in chunks.hits)
    assert "+#" not in format_search(chunks, 12000)
    assert grouped.hits[0].record.id == chunks.hits[0].record.id


def test_a_history_chunk_is_known_by_its_headings_not_its_name() -> None:
    """A version or date in the heading trail, or two version headings in the text, make a
    history chunk; a topic number (`OAuth 2.1`) or the word changelog in a path do not."""
    assert history_chunk(_record("a", "x.md", 0, context="docs > x | Log > v3.0.0 (2019-12-22)"))
    assert history_chunk(_record("b", "x.md", 0, context="docs | Guide: v1 to v2 > Imports"))
    two = "## 1.2.0\n\n- fixed\n\n## 1.1.0\n\n- added\n"
    assert history_chunk(_record("c", "notes.md", 0, content=two))
    assert not history_chunk(_record("d", "a.md", 0, context="docs > auth | OAuth 2.1 > Tokens"))
    assert not history_chunk(_record("e", "docs/changelog.md", 0, context="docs > changelog"))


def test_a_question_about_when_is_known_by_its_form() -> None:
    """`when did`, `which version`, `since v2`, `removed`, a version number ask about history;
    `when` or `since` joining two clauses does not."""
    for text in (
        "when did the runtime change",
        "in which release were mixers removed",
        "since v2 is FastMCP called MCPServer",
        "Mopidy 3.0 requires Python 3.7",
        "after upgrading my client fails",
    ):
        assert history_question(text), text
    for text in (
        "pretty exceptions stop working when format_exc_info is in the chain",
        "keep the cache warm since it is slow",
        "how does the tracklist work",
    ):
        assert not history_question(text), text


def test_a_history_page_gives_way_unless_the_question_asks_when() -> None:
    """Two chunks fused level: for a how-question the reference page leads and the history
    chunk is marked; for a when-question coverage alone decides; weight 0 turns it off."""
    history = _record("h", "log.md", 0, "tracklist state restored", "log | v1.1.0 (2015-08-09)")
    page = _record("p", "config.md", 0, "tracklist state restored", "config | Options")
    records = {history.id: history, page.id: page}
    fused = [(history.id, 0.2, _why()), (page.id, 0.2, _why())]
    how = rerank("restore the tracklist state", fused, records, Fusion())
    assert [rid for rid, _, _ in how] == ["p", "h"]
    assert [why.history for _, _, why in how] == [False, True]
    when = rerank("when was tracklist state restore added", fused, records, Fusion())
    assert when[0][1] == when[1][1]
    off = rerank("restore the tracklist state", fused, records, Fusion(history=0.0))
    assert off[0][1] == off[1][1]


MIT = (
    "Copyright (c) 2024 Someone\n\nPermission is hereby granted, free of charge, to any person "
    "obtaining a copy. THE SOFTWARE IS PROVIDED AS IS, WITHOUT WARRANTY OF ANY KIND, INCLUDING "
    "MERCHANTABILITY. IN NO EVENT SHALL THE AUTHORS BE LIABLE FOR ANY CLAIM OR LIABILITY."
)


def test_licence_text_gives_way_unless_the_question_names_the_licence() -> None:
    """Legal clauses without headings make a licence chunk (a page that mentions a copyright
    once does not); it drops below a level page unless the query names the licence."""
    licence = _record("l", "COPYING", 0, MIT)
    assert licence_chunk(licence)
    assert not licence_chunk(_record("n", "a.md", 0, "Copyright 2024, see the docs."))
    assert not licence_chunk(_record("h", "a.md", 0, MIT, context="docs | Licence"))
    page = _record("p", "docs/copy.md", 0, MIT[:40])
    records = {licence.id: licence, page.id: page}
    fused = [(licence.id, 0.2, _why()), (page.id, 0.2, _why())]
    how = rerank("software provided to any person", fused, records, Fusion(coverage=0.0))
    assert [rid for rid, _, _ in how] == ["p", "l"]
    asked = rerank("which licence is the software under", fused, records, Fusion(coverage=0.0))
    assert asked[0][1] == asked[1][1]


def test_the_tool_lists_chunks_with_detail_chunks(runtime: Runtime, tmp_path: Path) -> None:
    """Through an MCP session: `detail="chunks"` shows several blocks of the long page, the
    default shows it once with `+#` chunks in its header."""
    from tests.support.tools import Session

    session = Session(runtime, tmp_path)
    grouped = session.ok("search", query=QUERY, max_chars=12000)
    chunks = session.ok("search", query=QUERY, detail="chunks", max_chars=12000)
    headers = re.findall(r"^\[\d+\] .*$", chunks, re.M)
    shown = sum("docs/espresso.md#" in h for h in headers)
    assert shown > SOURCE_NEAR
    assert 1 <= grouped.count("docs/espresso.md#") <= SOURCE_NEAR
    assert re.search(r"docs/espresso\.md#\d+ \+#\d+", grouped)
