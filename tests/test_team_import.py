"""`imprint import FILE --database URL --workspace user:<sub>`: a local export moved into a
team workspace whole (memories, chunks with their source entry, supersede links, facts);
a second import changes nothing; a bad workspace is one line and writes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("psycopg")

from typer.testing import CliRunner

from imprint.actors.local_store import LocalStore
from imprint.cli import app
from imprint.reads.export import export_lines
from imprint.store.embedder import Embedder
from imprint.store.postgres import PostgresStore, open_pool
from imprint.store.records import Fact, Filters, Record, SourceEntry, SupersedeLink, WriteBatch
from imprint.types import MemoryId, WorkspaceName
from tests.support.postgres_support import fresh_workspace, team_database  # noqa: F401 (a fixture)


def _export(data_dir: Path, embedder: Embedder, out: Path) -> None:
    local = LocalStore(data_dir, WorkspaceName("default"), embedder)
    try:
        memories = tuple(
            Record(id=MemoryId(f"m{i}"), content=f"decision number {i}", project="p",
                   source_type="memory", type="decision", created_at=1.7e9 + i)
            for i in range(3)
        )  # fmt: skip
        chunks = tuple(
            Record(id=MemoryId(f"c{i}"), content=f"chunk {i} of the notes", project="p",
                   source="notes.md", source_type="file", chunk_index=i, chunk_count=2,
                   created_at=1.7e9, source_mtime=5.0)
            for i in range(2)
        )  # fmt: skip
        entry = SourceEntry(
            project="p", source="notes.md", source_type="file", mtime=5.0, sha="ab",
            chunk_count=2,
        )  # fmt: skip
        link = SupersedeLink(old=MemoryId("m0"), new=MemoryId("m1"), at=1.7e9 + 5)
        fact = Fact(id="f1", subject="imprint", predicate="uses", object="pg", valid_from=1.0)
        local.write(WriteBatch(upserts=memories + chunks, set_sources=(entry,)))
        local.write(WriteBatch(supersede=(link,), add_facts=(fact,)))
    finally:
        local.close()
    out.write_text("".join(export_lines(data_dir, [WorkspaceName("default")])))


def test_a_local_export_moves_into_a_team_workspace(
    tmp_path: Path,
    data_dir: Path,
    embedder: Embedder,
    team_database: str,  # noqa: F811
) -> None:
    """Everything the export holds is in the user's team workspace, read back through the
    store; importing it again changes nothing."""
    export = tmp_path / "export.jsonl"
    _export(data_dir, embedder, export)
    workspace = fresh_workspace()
    argv = ["import", str(export), "--database", team_database, "--workspace", workspace]
    runner = CliRunner()
    first = runner.invoke(app, argv)
    assert first.exit_code == 0, first.output
    assert first.output.strip() == (
        f"imported into {workspace}: 5 records, 1 supersede links, 1 facts"
    )
    pool = open_pool(team_database, max_size=1)
    try:
        store = PostgresStore(pool, workspace, embedder)
        before = store.fetch(["m0", "m1", "m2", "c0", "c1"])
        assert sorted(before) == ["c0", "c1", "m0", "m1", "m2"]
        assert before[MemoryId("m2")].content == "decision number 2"
        assert store.source_chunks("p", "notes.md", 0, 9)[1] == 2
        assert [(lk.old, lk.new) for lk in store.supersede_links(["m1"])] == [("m0", "m1")]
        assert [f.object for f in store.facts("imprint", "", False, 5)] == ["pg"]
        assert [i for i, _ in store.match("decision number 2", 1, Filters())] == ["m2"]
        again = runner.invoke(app, argv)
        assert again.exit_code == 0, again.output
        assert store.fetch(list(before)) == before
    finally:
        pool.close()


@pytest.mark.parametrize("workspace", ["", "default", "user:", "team:a b"])
def test_a_workspace_that_is_not_a_team_one_is_refused(
    tmp_path: Path,
    data_dir: Path,
    embedder: Embedder,
    team_database: str,  # noqa: F811
    workspace: str,
) -> None:
    """--workspace must be user:<sub> or team:<name>: one line naming it, nothing written."""
    export = tmp_path / "export.jsonl"
    _export(data_dir, embedder, export)
    argv = ["import", str(export), "--database", team_database, "--workspace", workspace]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code != 0
    assert str(result.exception).startswith("--workspace:")
