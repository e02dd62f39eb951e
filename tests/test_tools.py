"""Every MCP tool through an in-memory client: happy paths, error paths, annotations, sizes."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client

from imprint.actors.lifecycle import Runtime
from imprint.config import Config
from imprint.server import untitled
from imprint.store.embedder import Embedder
from tests.conftest import TOPICS, write_tree
from tests.support.tools import Session

READS = {
    "search",
    "get_memory",
    "neighbors",
    "file_chunks",
    "file_summary",
    "list_sources",
    "kg_query",
    "graph_scope",
    "status",
    "device_context",
    "recall",
}
DESTRUCTIVE = {"delete", "ingest_content", "ingest_url", "ingest_path"}


@pytest.fixture
def session(tmp_path: Path, embedder: Embedder) -> Iterator[Session]:
    cwd = tmp_path / "cwd"
    write_tree(cwd / "proj", TOPICS)
    rt = Runtime(tmp_path / "data", Config(), embedder=embedder).start()
    try:
        yield Session(rt, cwd)
    finally:
        rt.stop()


def _ids(text: str) -> list[str]:
    return re.findall(r"^\[\d+\] ([0-9a-f]{16}) \|", text, re.M)


def ingest(session: Session) -> str:
    return session.ok("ingest_path", path="proj", project="proj")


def test_seventeen_tools_with_annotations_and_short_descriptions(session: Session) -> None:
    """17 tools; reads are read-only, deleting/replacing writes destructive; descriptions fit."""
    tools = {t.name: t for t in session.tools()}
    assert len(tools) == 17
    for name, tool in tools.items():
        assert tool.description and len(tool.description) < 2048, name
        hints = tool.annotations
        assert hints is not None
        assert hints.read_only_hint is (name in READS), name
        assert bool(hints.destructive_hint) is (name in DESTRUCTIVE), name
        assert "workspace" in tool.input_schema["properties"], name


def test_ingest_path_then_search_finds_and_budget_holds(session: Session) -> None:
    """ingest_path indexes the folder; search returns provenance blocks under max_chars."""
    summary = ingest(session)
    assert summary.startswith("ingested 5 files")
    text = session.ok("search", query="purple kangaroo protocol", max_chars=1200)
    assert len(text) <= 1200 and "| proj | docs/espresso.md#" in text.splitlines()[2]
    full = session.ok("search", query="espresso", detail="full", max_chars=12000)
    assert "The purple kangaroo protocol is a phrase" in full
    assert len(session.ok("search", query="actor")) < 10 * 1024


def test_search_errors_are_one_line(session: Session) -> None:
    """Bad mode, type, empty query and bad workspace are one-line errors naming the argument."""
    assert session.error("search", query="x", mode="fuzzy").startswith("mode: 'fuzzy'")
    assert session.error("search", query="x", type="poem").startswith("type: 'poem'")
    assert session.error("search", query=" ").startswith("query: must be non-empty")
    assert session.error("search", query="x", workspace="No!").startswith("workspace: 'No!'")
    assert session.error("search", query="x", workspace="ghost").startswith("workspace: 'ghost'")
    assert session.error("search", query="x", limit="many").startswith("limit: 'many'")


def test_store_get_memory_neighbors_delete(session: Session) -> None:
    """A stored memory can be read whole, has neighbours, and can be deleted by id."""
    ingest(session)
    stored = session.ok(
        "store",
        content="We chose pykka actors so each mailbox is a lock.",
        project="proj",
        type="decision",
        topics=["actors"],
    )
    rid = stored.removeprefix("stored ")
    assert (
        session.ok(
            "store",
            content="We chose pykka actors so each mailbox is a lock.",
            project="proj",
            type="decision",
        )
        == f"already stored as {rid}"
    )  # idempotent: the same id, said to be the one already stored
    record = session.ok("get_memory", id=rid)
    assert "type: decision" in record and "topics=actors" in record
    assert "We chose pykka actors" in record and "working_directory=" in record
    near = session.ok("neighbors", id=rid, k=3)
    assert near.startswith(f"neighbors of {rid}: 3 records") and "docs/actors.md" in near
    assert session.ok("delete", id=rid) == f"deleted {rid}"
    assert session.error("get_memory", id=rid).startswith(f"id: no record '{rid}'")
    assert session.error("store", content="x", type="poem").startswith("type: 'poem'")
    assert session.error("store", content="  ").startswith("content: must be non-empty")


def test_get_memory_path_context_sees_the_file_here(session: Session) -> None:
    """path_context says the ingested source file exists on this computer."""
    ingest(session)
    rid = _ids(session.ok("search", query="retry backoff", lang="python"))[0]
    text = session.ok("get_memory", id=rid)
    assert "source_exists_here=True" in text and "proj/src/retry.py" in text


def test_file_chunks_and_summary(session: Session) -> None:
    """file_chunks reads a range with the true total; file_summary profiles a source."""
    ingest(session)
    text = session.ok("file_chunks", source="docs/actors.md")
    assert text.startswith("docs/actors.md: chunks 0-9 of 1")
    assert "Stopping an actor drains the mailbox" in text
    summary = session.ok("file_summary", source="docs/actors.md")
    assert "chunks: 1" in summary and "lang=markdown layer=docs" in summary
    assert session.error("file_chunks", source="nope.md").startswith("source: no source 'nope.md'")
    assert session.error("file_chunks", source="docs/actors.md", start=-1).startswith("start: -1")
    assert session.error("file_chunks", source="docs/actors.md", start=3, end=1).startswith(
        "end: 1"
    )
    assert session.error("file_summary", source="").startswith("source: must be")


def test_list_sources_and_graph_scope_round_trip(session: Session) -> None:
    """list_sources counts sources; every node graph_scope prints is accepted back."""
    ingest(session)
    listing = session.ok("list_sources", project="proj")
    assert listing.startswith("5 sources:") and "proj | docs/espresso.md | 1 chunks" in listing
    assert session.ok("list_sources", lang="python", limit=0).count("\n") == 1
    seen: set[str] = set()
    frontier = ["root"]
    while frontier and len(seen) < 30:
        scope = frontier.pop()
        if scope in seen:
            continue
        seen.add(scope)
        text = session.ok("graph_scope", scope=scope)
        frontier.extend(re.findall(r"^- (\S+)  \(", text, re.M))
    assert any(s.startswith("project:") for s in seen)
    assert any(s.startswith("source:") for s in seen)
    assert any(s.startswith("chunk:") for s in seen)
    assert any(s.startswith("topic:") for s in seen)
    assert session.error("graph_scope", scope="planet:x").startswith("scope: 'planet:x'")
    assert session.error("graph_scope", scope="project:nope").startswith("scope: no project")


def test_stored_memories_are_not_listed_as_a_nameless_source(session: Session) -> None:
    """list_sources, recall's list_sources step and graph_scope list ingested sources only:
    a stored memory is no source with an empty name (before: `proj |  | 1 chunks | memory`,
    which recall printed as `[2] file: | proj | 1 chunks | source / memory - -`)."""
    ingest(session)
    session.ok("store", content="we chose espresso beans from the north", project="proj")
    session.ok("store", content="only memories live here", project="jottings")
    listing = session.ok("list_sources", project="proj")
    assert listing.startswith("5 sources:") and "memory" not in listing, listing
    assert "jottings" not in session.ok("list_sources")
    plan = [{"tool": "list_sources", "args": {"project": "proj"}}]
    recalled = session.ok("recall", question="which sources?", plan=plan, condense=False)
    assert "file: |" not in recalled and "memory" not in recalled, recalled
    for depth in (1, 2):
        assert "source:  " not in session.ok("graph_scope", scope="root", depth=depth)
    assert "source:" not in session.ok("graph_scope", scope="project:jottings")
    assert "source: " not in session.ok("graph_scope", scope="project:proj")


def test_kg_edit_and_query_with_history(session: Session) -> None:
    """Facts are added, queried with ids, ended, and still visible with include_ended."""
    added = session.ok(
        "kg_edit",
        action="add",
        subject="imprint",
        predicate="uses",
        object="chromadb",
        source="ADR 12",
    )
    fid = re.search(r"fact:(\w+)", added).group(1)  # type: ignore[union-attr]
    assert session.ok(
        "kg_edit", action="add", subject="Imprint", predicate="USES", object="chromadb"
    ).startswith("unchanged")
    listing = session.ok("kg_query", subject="imprint")
    assert f"fact:{fid} | imprint | uses | chromadb | since" in listing and "ADR 12" in listing
    assert session.ok("kg_edit", action="end", fact_id=f"fact:{fid}").startswith("ended")
    assert session.ok("kg_query", subject="imprint") == "no facts match"
    assert "ended" in session.ok("kg_query", subject="imprint", include_ended=True)
    assert session.error("kg_edit", action="end", fact_id=fid).startswith("fact_id: fact:")
    assert session.error("kg_edit", action="end", fact_id="zzz").startswith("fact_id: no fact")
    assert session.error("kg_edit", action="add", subject="x").startswith("predicate: must be")
    assert session.error("kg_edit", action="rename").startswith("action: 'rename'")


def test_ingest_content_replaces_by_name_and_delete_source(session: Session) -> None:
    """ingest_content replaces the same name; delete by source removes all its chunks."""
    first = session.ok("ingest_content", name="meeting.md", content="# Notes\n\nalpha bravo")
    assert first.startswith("ingested 'meeting.md': 1 chunks")
    session.ok("ingest_content", name="meeting.md", content="# Notes\n\ncharlie delta")
    assert "no results" in session.ok("search", query="alpha bravo", mode="lexical")
    assert "meeting.md#0" in session.ok("search", query="charlie delta", mode="lexical")
    assert session.ok("delete", source="meeting.md").startswith("deleted source meeting.md")
    assert "no results" in session.ok("search", query="charlie delta", mode="lexical")
    assert session.error("ingest_content", name="", content="x").startswith("name: must be")
    assert session.error("delete").startswith("id, source: give exactly one")


def test_ingest_path_refuses_paths_outside_allowed_roots(session: Session, tmp_path: Path) -> None:
    """A path outside ingest.allowed_roots is refused and nothing is written."""
    outside = write_tree(tmp_path / "elsewhere", {"a.md": "# A\n\nsecret"})
    text = session.error("ingest_path", path=str(outside))
    assert text.startswith(f"path: '{outside}' is outside the allowed roots")
    assert session.error("ingest_path", path="../elsewhere").startswith("path: '../elsewhere'")
    assert session.error("ingest_path", path="proj/missing").startswith("path: ")
    assert "no records yet" in session.ok("status")


def test_status_and_device_context(session: Session) -> None:
    """status reports consistent indexes; device_context describes this computer."""
    ingest(session)
    status = session.ok("status")
    assert "project proj: " in status and "indexes: consistent" in status
    device = session.ok("device_context")
    for key in (
        "os:",
        "cores:",
        "memory_gib:",
        "gpu:",
        "data_dir:",
        "embedder:",
        "inference_provider: none",
        "inference_local: False",
        "model_loaded: False",
    ):
        assert key in device


def test_workspace_isolation_through_tools(session: Session) -> None:
    """What is stored in one workspace is invisible in another, for every read tool."""
    session.ok("store", content="zebra crossing protocol", workspace="alpha")
    session.ok("store", content="unrelated", workspace="beta")
    assert "zebra" in session.ok("search", query="zebra crossing", workspace="alpha")
    assert "no results" in session.ok(
        "search", query="zebra crossing", workspace="beta", mode="lexical"
    )
    rid = _ids(session.ok("search", query="zebra", workspace="alpha"))[0]
    assert session.error("get_memory", id=rid, workspace="beta").startswith("id: no record")
    assert session.error("neighbors", id=rid, workspace="beta").startswith("id: no record")


def test_ingest_path_reports_progress_notifications(session: Session) -> None:
    """ingest_path sends one MCP progress notification per file, ending at the total."""
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async def go() -> str:
        async with Client(session.server) as client:
            result = await client.call_tool(
                "ingest_path", {"path": "proj", "project": "proj"}, progress_callback=on_progress
            )
            return str(result.content[0].text)  # type: ignore[union-attr]

    summary = anyio.run(go)
    assert summary.startswith("ingested 5 files")
    assert [p for p, _, _ in seen] == [1, 2, 3, 4, 5]
    assert {t for _, t, _ in seen} == {5}
    assert {m for _, _, m in seen} == {
        "docs/actors.md",
        "docs/espresso.md",
        "docs/gardening.md",
        "notes.txt",
        "src/retry.py",
    }


def test_tools_list_stays_under_twelve_thousand_characters(session: Session) -> None:
    """tools/list, which every client loads at every session start, is at most 12,000
    characters of JSON, and still gives each argument its name, type and default."""
    tools = session.tools()
    listed = {"tools": [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]}
    size = len(json.dumps(listed))
    assert size <= 12_000, size
    search = next(t for t in listed["tools"] if t["name"] == "search")["inputSchema"]
    assert search["properties"]["limit"] == {
        "description": "1-50; default 10 (search.limit)",
        "type": "integer",
    }
    assert search["properties"]["mode"]["enum"] == ["hybrid", "semantic", "lexical"]
    assert search["properties"]["detail"]["default"] == "compact"
    assert search["required"] == ["query"]
    assert '"title"' not in json.dumps([t["inputSchema"] for t in listed["tools"]])


def _walk(schema: Any, where: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every subschema of a JSON schema, with where it is."""
    if isinstance(schema, dict):
        yield where, schema
        for key, value in schema.items():
            if isinstance(value, dict) and key in ("properties", "$defs"):
                for name, sub in value.items():
                    yield from _walk(sub, f"{where}.{name}")
            elif isinstance(value, dict | list):
                yield from _walk(value, f"{where}/{key}")
    elif isinstance(schema, list):
        for i, sub in enumerate(schema):
            yield from _walk(sub, f"{where}[{i}]")


def test_every_input_schema_is_portable(session: Session) -> None:
    """No tool's inputSchema has a type array, a `null` type or a null enum member (the
    Inspector's --strict check, Gemini CLI's rewrite), and every argument with a default
    names it in its description (Codex drops `default`). Before: search.limit, max_chars,
    mode, recall.max_chars, store.domains and topics were `type: [T, "null"]`."""
    for tool in session.tools():
        for where, sub in _walk(tool.input_schema, tool.name):
            assert not isinstance(sub.get("type"), list), (where, sub)
            assert sub.get("type") != "null", (where, sub)
            assert None not in sub.get("enum", []), (where, sub)
        for name, prop in tool.input_schema["properties"].items():
            if "default" in prop:
                shown = prop["default"]
                shown = shown if isinstance(shown, str) else json.dumps(shown)
                assert f"default {shown}" in prop.get("description", ""), (tool.name, name)


def test_optional_arguments_still_take_an_explicit_null(session: Session) -> None:
    """An older client that sends null for an optional argument (as the schema used to
    allow) is still served: null takes the configured default."""
    ingest(session)
    text = session.ok("search", query="espresso", limit=None, mode=None, max_chars=None)
    assert "espresso" in text
    session.ok("store", content="a null-tagged note", domains=None, topics=None)
    session.ok("recall", question="espresso?", plan=None, max_chars=None)


def test_untitled_drops_schema_titles_but_keeps_an_argument_named_title() -> None:
    """Only `title` keywords go: a property called title, and every other key, stay."""
    schema = {
        "title": "fooArguments",
        "type": "object",
        "properties": {
            "title": {"title": "Title", "type": "string", "default": ""},
            "plan": {"anyOf": [{"type": "array", "items": {"title": "Step", "type": "object"}}]},
        },
    }
    assert untitled(schema) == {
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "plan": {"anyOf": [{"type": "array", "items": {"type": "object"}}]},
        },
    }


def test_portable_drops_the_null_option_and_empty_defaults() -> None:
    """`T | None = None` is listed as a plain optional `T`; a meaningful default is named
    in the description; an empty one goes."""
    before = {
        "type": "object",
        "properties": {
            "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
            "mode": {"anyOf": [{"enum": ["a", "b"], "type": "string"}, {"type": "null"}]},
            "plan": {"anyOf": [{"type": "array"}, {"type": "string"}, {"type": "null"}]},
            "either": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            "k": {"type": "integer", "default": 10, "description": "1-30"},
            "scope": {"type": "string", "default": "root"},
            "workspace": {"type": "string", "default": ""},
        },
    }
    after = untitled(before)["properties"]
    assert after["limit"] == {"type": "integer"}
    assert after["mode"] == {"type": "string", "enum": ["a", "b"]}
    assert after["plan"] == {"anyOf": [{"type": "array"}, {"type": "string"}]}
    assert after["either"] == before["properties"]["either"]
    assert after["k"] == {"type": "integer", "default": 10, "description": "1-30; default 10"}
    assert after["scope"]["description"] == "default root"
    assert after["workspace"] == {"type": "string"}
