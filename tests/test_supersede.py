"""Memories that stay true, through the MCP tools: supersede chains, near-duplicate stores,
dated block headers and search's `since`."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from imprint.actors.lifecycle import Runtime
from imprint.cli import app as cli_app
from imprint.config import Config
from imprint.store.embedder import Embedder
from imprint.store.records import Record, WriteBatch, text_key
from imprint.store.sqlite_write import SqliteWriter
from tests import test_tools
from tests.support.tools import Session

OLD = "Decision: the job queue runs on PostgreSQL with SKIP LOCKED polling."
MID = "Decision: the job queue moved to Redis streams; PostgreSQL polling was too slow."
NEW = "Decision: the job queue moved to NATS JetStream; Redis streams lost messages."
QUERY = "what does the job queue run on"
TODAY = time.strftime("%Y-%m-%d", time.gmtime())

session = test_tools.session  # the in-memory MCP session over a fresh runtime


def _stored(text: str) -> str:
    found = re.match(r"stored ([0-9a-f]{16})", text)
    assert found, text
    return found[1]


def _ids(text: str) -> list[str]:
    return re.findall(r"^\[\d+\] ([0-9a-f]{16}) \|", text, re.M)


def _chain(session: Session) -> tuple[str, str, str]:
    a = _stored(session.ok("store", content=OLD, project="jobs", type="decision"))
    said = session.ok("store", content=MID, project="jobs", type="decision", supersedes=[a])
    b = _stored(said)
    assert said == f"stored {b}; supersedes {a}"
    c = _stored(session.ok("store", content=NEW, project="jobs", supersedes=[b]))
    return a, b, c


def test_a_chain_of_three_shows_the_newest_and_deleting_it_brings_back_the_previous(
    session: Session,
) -> None:
    """A supersedes chain A <- B <- C: search (every mode) and recall show C only and count
    the superseded ones on the hidden-results line; include_superseded shows all three,
    marked; deleting C brings B back (A stays superseded)."""
    a, b, c = _chain(session)
    for mode in ("hybrid", "semantic", "lexical"):
        text = session.ok("search", query="job queue PostgreSQL Redis", project="jobs", mode=mode)
        assert _ids(text) == [c], (mode, text)
        assert "(2 superseded results hidden; include_superseded=true shows them)" in text, mode
    shown = session.ok("search", query=QUERY, project="jobs", include_superseded=True)
    assert sorted(_ids(shown)) == sorted([a, b, c])
    assert f"| superseded by {b} |" in shown and f"| superseded by {c} |" in shown
    assert "superseded results hidden" not in shown
    recalled = session.ok("recall", question=QUERY, plan=None, condense=False)
    assert c in recalled and a not in recalled and b not in recalled
    assert session.ok("delete", id=c) == f"deleted {c}"
    after = session.ok("search", query="job queue PostgreSQL Redis", project="jobs")
    assert _ids(after) == [b] and "(1 superseded result hidden;" in after
    assert "superseded by" not in session.ok("get_memory", id=b)


def test_get_memory_names_what_supersedes_it_and_what_it_supersedes(session: Session) -> None:
    """get_memory of a superseded memory keeps its text and says `superseded by NEW on
    DATE`; the newer memory lists what it superseded."""
    a, b, c = _chain(session)
    old = session.ok("get_memory", id=a)
    assert OLD in old and f"superseded by {b} on {TODAY}" in old.splitlines()
    middle = session.ok("get_memory", id=b)
    assert f"superseded by {c} on {TODAY}" in middle and f"supersedes: {a}" in middle
    newest = session.ok("get_memory", id=c)
    assert f"supersedes: {b}" in newest.splitlines() and "superseded by" not in newest


def test_superseded_memories_leave_neighbors_and_graph_scope(session: Session) -> None:
    """neighbors and graph_scope's topic listing leave a superseded memory out."""
    a = _stored(session.ok("store", content=OLD, project="jobs", topics=["queue"]))
    b = _stored(session.ok("store", content=MID, project="jobs", topics=["queue"]))
    near = session.ok("neighbors", id=b, k=5)
    assert a in near
    c = _stored(session.ok("store", content=NEW, project="jobs", topics=["queue"], supersedes=[a]))
    near = session.ok("neighbors", id=b, k=5)
    assert a not in near and c in near
    topic = session.ok("graph_scope", scope="topic:queue")
    assert f"chunk:{b}" in topic and f"chunk:{c}" in topic and f"chunk:{a}" not in topic


def test_supersedes_refuses_unknown_ids_and_file_chunks_writing_nothing(
    session: Session,
) -> None:
    """supersedes naming no memory of the workspace, or a file chunk, is a one-line error
    naming the argument, and the new memory is not stored."""
    session.ok("ingest_path", path="proj", project="proj")
    chunk = _ids(session.ok("search", query="espresso", project="proj"))[0]
    missing = session.error("store", content=OLD, supersedes=["0123456789abcdef"])
    assert missing.startswith("supersedes: no memory '0123456789abcdef'")
    assert session.error("store", content=OLD, supersedes=[chunk]).startswith(
        f"supersedes: {chunk!r} is a chunk of"
    )
    assert session.error("store", content=OLD, supersedes=["no way"]).startswith("supersedes:")
    assert "no results" in session.ok("search", query="SKIP LOCKED polling", mode="lexical")
    a = _stored(session.ok("store", content=OLD))
    other = session.ok("store", content=MID, workspace="other")
    assert other.startswith("stored ")
    refused = session.error("store", content=NEW, workspace="other", supersedes=[a])
    assert refused.startswith(f"supersedes: no memory '{a}' in workspace 'other'")


def test_a_near_duplicate_store_returns_the_first_id(session: Session) -> None:
    """Text equal after NFKC, case folding and collapsed whitespace and punctuation is
    stored once per project: the second store says `already stored as` the first id; in
    another project it is a memory of its own."""
    first = _stored(session.ok("store", content="Use ruff for linting; black is no longer needed."))
    again = session.ok("store", content="  use Ruff for linting;  Black is no longer needed ")
    assert again == f"already stored as {first}"
    assert session.ok("store", content="Use ruff for linting; black is no longer needed.") == (
        f"already stored as {first}"
    )
    assert session.ok("store", content="Ｕｓｅ ruff for linting — black is no longer needed!") == (
        f"already stored as {first}"
    )
    elsewhere = _stored(
        session.ok("store", content="use ruff for linting, black is no longer needed", project="p")
    )
    assert elsewhere != first
    found = session.ok("search", query="ruff linting black", mode="lexical")
    assert _ids(found).count(first) == 1 and len(_ids(found)) == 2
    older = _stored(session.ok("store", content="Use flake8 and black for linting."))
    linked = session.ok(
        "store", content="use ruff for linting. black is no longer needed", supersedes=[older]
    )
    assert linked == f"already stored as {first}; supersedes {older}"
    assert older not in _ids(session.ok("search", query="linting black flake8 ruff"))


PG = "Decision: the job queue runs on PostgreSQL with SKIP LOCKED polling."
PG_AGAIN = "Decision: job queue is on PostgreSQL, polled with SKIP LOCKED."  # 0.94 (MiniLM)
SIMILAR = re.compile(r"^already stored as ([0-9a-f]{16}) \(similar, (0\.\d\d)\)$")


@pytest.fixture
def near(tmp_path: Path, embedder: Embedder) -> Iterator[Session]:
    """A session over a runtime with `store.near_duplicate = 0.9`."""
    config = Config.model_validate({"store": {"near_duplicate": 0.9}})
    rt = Runtime(tmp_path / "data", config, embedder=embedder).start()
    try:
        yield Session(rt, tmp_path)
    finally:
        rt.stop()


def test_a_paraphrase_answers_the_first_id_when_near_duplicate_is_set(near: Session) -> None:
    """With `store.near_duplicate`, a paraphrase of a memory of the same project answers
    `already stored as ID (similar, 0.9x)` and writes nothing (search finds one memory, the
    first keeps its id and text); a related memory that says something else, and the same
    paraphrase in another project, are stored as memories of their own; exact text keeps
    its plain answer."""
    first = _stored(near.ok("store", content=PG, project="jobs", type="decision"))
    said = near.ok("store", content=PG_AGAIN, project="jobs", type="decision")
    match = SIMILAR.match(said)
    assert match and match[1] == first, said
    assert 0.9 <= float(match[2]) < 1.0
    assert near.ok("store", content=PG, project="jobs") == f"already stored as {first}"
    found = near.ok("search", query="job queue PostgreSQL SKIP LOCKED", project="jobs")
    assert _ids(found) == [first], found
    assert PG in near.ok("get_memory", id=first)
    other = _stored(near.ok("store", content=MID, project="jobs", type="decision"))
    elsewhere = _stored(near.ok("store", content=PG_AGAIN, project="billing"))
    assert len({first, other, elsewhere}) == 3
    both = near.ok("search", query="job queue", project="jobs", mode="lexical")
    assert sorted(_ids(both)) == sorted([first, other]), both


def test_a_store_that_supersedes_its_near_duplicate_is_written(near: Session) -> None:
    """A memory that names a close one in `supersedes` is meant to replace it: it is stored
    (not answered with the one it supersedes), and a later paraphrase of the superseded
    memory is not matched to it either (search no longer shows it)."""
    first = _stored(near.ok("store", content=PG, project="jobs"))
    said = near.ok("store", content=PG_AGAIN, project="jobs", supersedes=[first])
    second = _stored(said)
    assert said == f"stored {second}; supersedes {first}"
    third = near.ok("store", content=PG + " (confirmed)", project="jobs")
    assert SIMILAR.match(third) and SIMILAR.match(third)[1] == second, third  # type: ignore[index]


def test_near_duplicates_are_off_by_default(session: Session) -> None:
    """Without `store.near_duplicate` (0, the default) a paraphrase is a memory of its own:
    only text equal once normalized is stored once."""
    assert Config().store.near_duplicate == 0.0
    first = _stored(session.ok("store", content=PG, project="jobs"))
    assert _stored(session.ok("store", content=PG_AGAIN, project="jobs")) != first


def test_memory_blocks_show_their_date_and_since_keeps_newer_records(session: Session) -> None:
    """A memory's block header carries its date (YYYY-MM-DD, UTC), a file chunk's does not;
    `since` keeps records stored on or after that date; a date that is not ISO is a
    one-line error naming `since`."""
    session.ok("ingest_path", path="proj", project="proj")
    rid = _stored(session.ok("store", content="The espresso grinder is set to 14.", project="proj"))
    text = session.ok("search", query="espresso grinder", project="proj")
    assert f"[1] {rid} | proj | (inline) | note | {TODAY} | " in text
    assert re.search(r"\| docs/espresso\.md#0 \| \w+ \| 0\.\d{4}$", text, re.M), text
    tomorrow = time.strftime("%Y-%m-%d", time.gmtime(time.time() + 86400))
    yesterday = time.strftime("%Y-%m-%d", time.gmtime(time.time() - 86400))
    assert "no results" in session.ok("search", query="espresso grinder", since=tomorrow)
    assert rid in _ids(session.ok("search", query="espresso grinder", since=yesterday))
    assert session.error("search", query="espresso", since="last week").startswith(
        "since: 'last week' is not an ISO date"
    )


def test_cli_search_since_keeps_newer_records_and_refuses_a_bad_date(
    tmp_path: Path, embedder: Embedder
) -> None:
    """`imprint search --since YYYY-MM-DD` keeps records stored on or after that day (the
    tool's `since`); a date that is not ISO is one line naming `--since`, exit 2."""
    rt = Runtime(tmp_path / "data", Config(), embedder=embedder).start()
    try:
        rid = _stored(
            Session(rt, tmp_path).ok("store", content="The espresso grinder is set to 14.")
        )
    finally:
        rt.stop()
    tomorrow = time.strftime("%Y-%m-%d", time.gmtime(time.time() + 86400))
    yesterday = time.strftime("%Y-%m-%d", time.gmtime(time.time() - 86400))
    runner = CliRunner()
    kept = runner.invoke(cli_app, ["search", "espresso grinder", "--since", yesterday])
    assert kept.exit_code == 0 and rid in kept.output, kept.output
    newer = runner.invoke(cli_app, ["search", "espresso grinder", "--since", tomorrow])
    assert newer.exit_code == 0 and "no results" in newer.output and rid not in newer.output
    bad = subprocess.run(
        [sys.executable, "-m", "imprint.cli", "search", "espresso", "--since", "2026-13-01"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert bad.returncode == 2 and not bad.stdout, (bad.stdout, bad.stderr)
    assert bad.stderr.splitlines() == [
        "error: --since: '2026-13-01' is not an ISO date; give YYYY-MM-DD (UTC)"
    ]


def test_recall_fact_blocks_show_their_date(session: Session) -> None:
    """A fact's evidence block in recall carries the fact's date in its header."""
    session.ok("kg_edit", action="add", subject="queue", predicate="runs_on", object="nats")
    plan = '[{"tool": "kg_query", "args": {"subject": "queue"}}]'
    recalled = session.ok("recall", question="queue?", plan=plan, condense=False)
    assert re.search(rf"^\[1\] fact:\w+ \| - \| fact \| {TODAY}$", recalled, re.M), recalled


def test_an_older_store_gains_memory_keys_and_supersede_links_on_open(tmp_path: Path) -> None:
    """A store written before memory keys and supersede links gets both tables on open and
    its memories their keys, so a near-duplicate of an old memory is found."""
    path = tmp_path / "store.sqlite3"
    writer = SqliteWriter(path)
    old = Record(id="00000000000000aa", content="Keep the Queue small.", source_type="memory")
    writer.apply(WriteBatch(upserts=(old,)), None)
    writer.close()
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("DROP TABLE memory_keys")
        conn.execute("DROP TABLE supersedes")
        conn.execute("DELETE FROM meta WHERE key = 'memory_keys'")
    conn.close()
    reopened = SqliteWriter(path)
    try:
        assert reopened.same_text("", text_key("keep the queue small")) == old.id
        assert reopened.supersede_links([old.id]) == []
    finally:
        reopened.close()


def test_supersede_restore_and_retag_writes_hold_across_a_restart(
    tmp_path: Path, embedder: Embedder
) -> None:
    """The dashboard's corrections as writes: supersede two stored memories (search leaves
    the older out), restore it (search shows it again, the newer stays), retag a memory's
    type; refusals (itself, a cycle, not superseded, an unknown type) are one line and
    change nothing; after a restart the store says the same."""
    from imprint.errors import InputError
    from imprint.reads.gateway import ActorReads
    from imprint.reads.memory import GetMemoryArgs, memory_row
    from imprint.reads.search import SearchArgs, search
    from imprint.writes.gateway import Writes
    from imprint.writes.memories import (
        remember,
        restore_memory,
        retag_memory,
        supersede_memory,
    )

    def found(rt: Runtime, **filters: str) -> list[str]:
        asked = SearchArgs(query=QUERY, project="jobs", limit=10, **filters)
        return [h.record.id for h in search(ActorReads(rt), asked).hits]

    data = tmp_path / "data"
    with_runtime = Runtime(data, Config(), embedder=embedder).start()
    try:
        w = Writes(with_runtime)
        a = remember(w, OLD, "jobs", "decision").id
        b = remember(w, MID, "jobs", "decision").id
        assert supersede_memory(w, a, b) == f"{a} superseded by {b}"
        assert a not in found(with_runtime) and b in found(with_runtime)
        for bad, why in (
            (lambda: supersede_memory(w, a, a), "is the memory itself"),
            (lambda: supersede_memory(w, b, a), "is itself superseded by"),
            (lambda: retag_memory(w, a, "gossip"), "type: 'gossip' is not allowed"),
            (lambda: restore_memory(w, b), "is not superseded"),
            (lambda: restore_memory(w, "0" * 16), "no memory"),
        ):
            with pytest.raises(InputError, match=why):
                bad()
        assert restore_memory(w, a) == f"restored {a} (was superseded by {b})"
        assert a in found(with_runtime) and b in found(with_runtime)
        assert retag_memory(w, b, "finding") == f"retagged {b} as finding"
        assert found(with_runtime, type="finding") == [b]
    finally:
        with_runtime.stop()
    again = Runtime(data, Config(), embedder=embedder).start()
    try:
        reads = ActorReads(again)
        row = memory_row(reads, reads.open(""), GetMemoryArgs(id=a))
        assert row.superseded_by is None and row.record.type == "decision"
        assert memory_row(reads, reads.open(""), GetMemoryArgs(id=b)).record.type == "finding"
    finally:
        again.stop()


def test_no_supersede_closes_a_chain_into_a_cycle(tmp_path: Path, embedder: Embedder) -> None:
    """a superseded by b, b by c: superseding c by a (the dashboard's Supersede) or storing
    a's text again with `supersedes=[c]` would hide all three for good (each has a
    successor, none is shown). Both are refused in one line, and the chain stays as it was:
    c is still found."""
    from imprint.errors import InputError
    from imprint.reads.gateway import ActorReads
    from imprint.reads.search import SearchArgs, search
    from imprint.writes.gateway import Writes
    from imprint.writes.memories import remember, supersede_memory

    rt = Runtime(tmp_path / "data", Config(), embedder=embedder).start()
    try:
        w = Writes(rt)
        a = remember(w, OLD, "jobs", "decision").id
        b = remember(w, MID, "jobs", "decision", supersedes=[a]).id
        c = remember(w, NEW, "jobs", "decision", supersedes=[b]).id
        for bad in (
            lambda: supersede_memory(w, c, a),
            lambda: remember(w, OLD, "jobs", "decision", supersedes=[c]),
        ):
            with pytest.raises(InputError, match=f"is itself superseded, through .*{c}"):
                bad()
        asked = SearchArgs(query=QUERY, project="jobs", limit=10)
        assert [h.record.id for h in search(ActorReads(rt), asked).hits] == [c]
    finally:
        rt.stop()
