"""The team server's row functions on the storage seam (`reads.on_store`, `writes.on_store`)
against PostgreSQL: the local rules (one memory per text, supersede hides and counts, delete by
id or source, facts added once and ended), bad input one line with nothing written, and every
write recorded with who made it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("psycopg")

from imprint.errors import InputError
from imprint.reads import on_store as r
from imprint.store.embedder import Embedder
from imprint.store.postgres import PostgresStore, open_pool
from imprint.store.records import Record, SourceEntry, WriteBatch
from imprint.types import MemoryId
from imprint.writes import on_store as w
from tests.support.postgres_support import fresh_workspace, team_database  # noqa: F401 (a fixture)


@pytest.fixture
def store(team_database: str, embedder: Embedder) -> Iterator[PostgresStore]:  # noqa: F811
    pool = open_pool(team_database, max_size=2)
    try:
        yield PostgresStore(pool, fresh_workspace(), embedder)
    finally:
        pool.close()


def _embed(embedder: Embedder) -> r.Embed:
    return lambda text: embedder.embed([text])[0]


def test_store_once_supersede_hides_and_counts_delete_removes(
    store: PostgresStore, embedder: Embedder
) -> None:
    """The same text (up to case and spacing) is one memory; a superseded memory is left out
    of search and counted, get_memory names what replaced it; delete by id removes it."""
    first = w.store_on_store(store, "We pick Postgres for the team store", actor="ann")
    rid = first.split()[1]
    assert first.startswith("stored ")
    again = w.store_on_store(store, "we pick  postgres for the team store!", actor="ann")
    assert again.startswith(f"exists {rid}")
    newer = w.store_on_store(
        store, "We pick Postgres 18 for the team store", supersedes=[rid], actor="ann"
    )
    new_id = newer.split()[1]
    found = r.search_store_text(store, _embed(embedder), "Postgres team store")
    assert new_id in found and rid not in found
    assert "1 superseded result hidden" in found
    assert f"superseded by {new_id}" in r.memory_text(store, rid)
    assert w.delete_on_store(store, new_id, actor="ann") == f"deleted {new_id}"
    # Deleting the newer memory brings the older one back (its link went with it).
    assert rid in r.search_store_text(store, _embed(embedder), "Postgres team store")
    assert {row["actor"] for row in store.audit()} == {"ann"}


def test_delete_a_source_and_facts_added_once_then_ended(store: PostgresStore) -> None:
    """delete source= drops every chunk; kg_edit adds a fact once and ends it by id."""
    chunks = tuple(
        Record(id=MemoryId(f"c{i}"), content=f"chunk {i}", project="p", source="notes.md",
               chunk_index=i, chunk_count=2)
        for i in range(2)
    )  # fmt: skip
    entry = SourceEntry(
        project="p", source="notes.md", source_type="file", mtime=1.0, sha="s", chunk_count=2
    )
    store.write(WriteBatch(upserts=chunks, set_sources=(entry,)))
    with pytest.raises(InputError, match=r"^id: 'c0' is chunk 0 of source 'notes.md'"):
        w.delete_on_store(store, "c0", actor="ann")
    assert w.delete_on_store(store, source="notes.md", actor="ann") == (
        "deleted source notes.md (2 chunks)"
    )
    assert r.sources_text(store) == "0 sources"
    added = w.edit_facts_on_store(store, "add", "imprint", "stores in", "postgres", actor="ann")
    fid = added.split()[1]
    assert added.startswith("added fact:")
    assert w.edit_facts_on_store(
        store, "add", "Imprint", "stores in", "Postgres", actor="ann"
    ).startswith(f"unchanged: {fid}")
    assert w.edit_facts_on_store(store, "end", fact_id=fid, actor="ann").startswith("ended")
    assert r.facts_text(store, "imprint") == "no facts"
    assert "ended" in r.facts_text(store, "imprint", include_ended=True)


@pytest.mark.parametrize(
    ("call", "start"),
    [
        (lambda s: w.store_on_store(s, "", actor="a"), "content: must be non-empty"),
        (lambda s: w.store_on_store(s, "x", type="essay", actor="a"), "type: 'essay'"),
        (lambda s: w.store_on_store(s, "x", supersedes=["nope"], actor="a"), "supersedes: no"),
        (lambda s: w.delete_on_store(s, actor="a"), "id, source: give exactly one"),
        (lambda s: w.delete_on_store(s, "zzz", actor="a"), "id: no record 'zzz'"),
        (lambda s: w.edit_facts_on_store(s, "drop", actor="a"), "action: 'drop'"),
        (lambda s: w.edit_facts_on_store(s, "end", actor="a"), "fact_id: required"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(
    store: PostgresStore, call: object, start: str
) -> None:
    """Each refusal names the argument in one line; the workspace stays empty."""
    with pytest.raises(InputError) as refused:
        call(store)  # type: ignore[operator]
    assert str(refused.value).startswith(start) and "\n" not in str(refused.value)
    assert store.projects() == [] and store.audit() == []


def test_team_writes_are_redacted_unless_the_workspace_keeps_secrets(
    store: PostgresStore,
    team_database: str,  # noqa: F811
) -> None:
    """A key in a stored memory or an added fact is redacted before it reaches the database,
    and the answer says so; with redact off for the workspace it is kept as given."""
    from tests.support.redact_writes import _aws_key, _github_token

    token, aws = _github_token(), _aws_key()
    stored = w.store_on_store(store, f"the bot pushes with {token}", actor="ann")
    assert "redacted 1 secret (github-token)" in stored and token not in stored
    fact = w.edit_facts_on_store(store, "add", "ci", "uses key", aws, actor="ann")
    assert "redacted 1 secret" in fact and aws not in fact
    with store.pool.connection() as conn:
        dumped = str(conn.execute(
            "SELECT array_agg(record::text) FROM records WHERE workspace = %s", (store.name,)
        ).fetchone()) + str(conn.execute(
            "SELECT array_agg(object) FROM facts WHERE workspace = %s", (store.name,)
        ).fetchone())  # fmt: skip
    assert token not in dumped and aws not in dumped and "[redacted:github-token]" in dumped
    kept = w.store_on_store(store, f"on purpose: {token}", actor="ann", redact=False)
    assert token in r.memory_text(store, kept.split()[1])


def test_recall_runs_a_plan_on_the_store_and_refuses_a_bad_one(
    store: PostgresStore, embedder: Embedder
) -> None:
    """recall without a plan is search(question); with one, each step answers in its share of
    max_chars (a failing step says so while the others answer); a write step, an argument the
    team server does not serve, or too many steps are one line before anything runs."""
    from imprint.recall.on_store import recall_on_store

    embed = _embed(embedder)
    rid = w.store_on_store(store, "the albatross glides for hours", actor="ann").split()[1]
    w.edit_facts_on_store(store, "add", "albatross", "glides", "hours", actor="ann")
    plain = recall_on_store(store, embed, "albatross", None)
    assert plain == r.search_store_text(store, embed, "albatross")
    plan = [
        {"tool": "search", "args": {"query": "albatross"}},
        {"tool": "kg_query", "args": {"subject": "albatross"}},
        {"tool": "get_memory", "args": {"id": "nope"}},
        {"tool": "get_memory", "args": {"id": rid}},
    ]
    answer = recall_on_store(store, embed, "albatross", plan, max_chars=2400)
    assert len(answer) <= 2400
    assert answer.count("\nstep ") == 3 and answer.startswith("step 1 search(query='albatross')")
    assert "| albatross | glides | hours |" in answer
    assert "error: id: no record 'nope'" in answer and "the albatross glides" in answer
    for bad, start in (
        ([{"tool": "store", "args": {"content": "x"}}], "plan: step 1: 'store' is a write"),
        ([{"tool": "search", "args": {"query": "x", "since": "7d"}}], "plan: step 1 (search): "),
        ([{"tool": "kg_query", "args": {}}] * 9, "plan: 9 steps; at most 8"),
    ):
        with pytest.raises(InputError) as refused:
            recall_on_store(store, embed, "q", bad)
        assert str(refused.value).startswith(start), str(refused.value)


def test_status_counts_records_per_project_and_facts(store: PostgresStore) -> None:
    """status: the workspace's records per project, its facts, the caller's workspaces."""
    w.store_on_store(store, "one note", project="alpha", actor="ann")
    w.store_on_store(store, "two note", project="beta", actor="ann")
    w.edit_facts_on_store(store, "add", "a", "b", "c", actor="ann")
    text = r.status_text(store, (str(store.name), "team:core"))
    assert f"workspace {store.name}: 2 records" in text
    assert "  alpha: 1" in text and "  beta: 1" in text and "facts: 1" in text
    assert f"your workspaces: {store.name}, team:core" in text


def test_search_lowers_a_changelog_below_the_guide_unless_history_is_asked(
    store: PostgresStore, embedder: Embedder
) -> None:
    """The team search re-ranks as the local one (`reads.ranking.rerank`): a changelog chunk
    (two version headings) that holds the question's words more often ranks below the guide
    for a question not about history, and first again for one about a release."""
    texts = {
        "CHANGES.md": "## 2.0.0\n\nRetry backoff: retry backoff with jitter, retry backoff "
        "capped.\n\n## 1.9.0\n\nRetry backoff for the client; configure retry backoff.\n",
        "guide.md": "# Client guide\n\nConfigure how the client waits between attempts: the "
        "retry backoff starts at one second and doubles.\n",
    }
    for i, (source, text) in enumerate(texts.items()):
        rec = Record(id=MemoryId(f"h{i}"), content=text, project="p", source=source)
        entry = SourceEntry(
            project="p", source=source, source_type="file", mtime=1.0, sha=source, chunk_count=1
        )
        store.write(WriteBatch(upserts=(rec,), set_sources=(entry,)))
    embed = _embed(embedder)

    def first(query: str) -> str:
        return r.search_store(store, embed, query).hits[0].record.source

    assert first("configure retry backoff") == "guide.md"
    assert first("which release changed retry backoff") == "CHANGES.md"
