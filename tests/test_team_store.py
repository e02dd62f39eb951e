"""The PostgreSQL team store beyond the shared contract: migrations, one transaction per write,
several servers on one database, the audit trail, a database restart, `imprint team`."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("psycopg")

import psycopg
from typer.testing import CliRunner

from imprint.cli import app
from imprint.store.embedder import Embedder
from imprint.store.postgres import SCHEMA_VERSION, PostgresStore, migrate, open_pool
from imprint.store.postgres.local import LocalPostgres
from imprint.store.records import Filters, Record, WriteBatch
from imprint.types import MemoryId
from tests.support.postgres_support import fresh_workspace, team_database  # noqa: F401 (a fixture)


@pytest.fixture
def empty_database(team_database: str) -> Iterator[str]:  # noqa: F811
    """A database of its own, with no schema yet, on the session's server."""
    name = f"t{uuid.uuid4().hex[:12]}"
    with psycopg.connect(team_database, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}".encode())
    yield team_database.rsplit("/", 1)[0] + f"/{name}"
    with psycopg.connect(team_database, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE {name} WITH (FORCE)".encode())


def memory(mid: str, content: str) -> Record:
    return Record(id=MemoryId(mid), content=content, project="p", source_type="memory")


def test_team_init_creates_then_reports_up_to_date(empty_database: str) -> None:
    """`imprint team init` creates the schema and prints its version; again, changes nothing."""
    runner = CliRunner()
    first = runner.invoke(app, ["team", "init", "--database", empty_database])
    assert first.exit_code == 0, first.output
    assert first.output.strip() == f"schema version {SCHEMA_VERSION} (created)"
    again = runner.invoke(app, ["team", "init", "--database", empty_database])
    assert again.output.strip() == f"schema version {SCHEMA_VERSION} (up to date)"


def test_team_init_refuses_a_url_that_is_not_postgresql() -> None:
    """A wrong --database is one line naming the option."""
    result = CliRunner().invoke(app, ["team", "init", "--database", "mysql://h/db"])
    assert result.exit_code != 0
    assert "--database" in str(result.exception)


def test_servers_migrating_at_once_apply_each_step_once(empty_database: str) -> None:
    """Four servers starting on one new database at once: all come up at the same version."""
    results: list[tuple[int, int]] = []
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def one() -> None:
        try:
            with psycopg.connect(empty_database) as conn:
                start.wait()
                results.append(migrate(conn))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(before for before, _ in results) == [0, 1, 1, 1]
    assert {now for _, now in results} == {SCHEMA_VERSION}


def test_a_failing_write_changes_nothing(team_database: str, embedder: Embedder) -> None:  # noqa: F811
    """A batch that fails part-way (here a vector of the wrong width) leaves no trace: the
    record it deleted is still there, with no tombstone and no audit row."""
    pool = open_pool(team_database, max_size=2)
    try:
        store = PostgresStore(pool, fresh_workspace(), embedder)
        store.write(WriteBatch(upserts=(memory("m1", "kept through a failed write"),)))
        bad = WriteBatch(delete_ids=(MemoryId("m1"),), upserts=(memory("m2", "never stored"),))
        with pytest.raises(psycopg.Error):
            store.write(bad, np.zeros((1, 3), dtype=np.float32))
        assert list(store.fetch(["m1", "m2"])) == ["m1"]
        assert store.tombstones() == {}
        assert len(store.audit()) == 1
    finally:
        pool.close()


def test_two_servers_share_one_database_and_record_who_wrote(
    team_database: str,  # noqa: F811
    embedder: Embedder,
) -> None:
    """What one server acknowledged the other reads at once; each write names its writer;
    one workspace never sees another's records."""
    first, second = open_pool(team_database, max_size=2), open_pool(team_database, max_size=2)
    try:
        workspace, other = fresh_workspace(), fresh_workspace("team")
        a = PostgresStore(first, workspace, embedder)
        b = PostgresStore(second, workspace, embedder)
        a.write(WriteBatch(upserts=(memory("m1", "written through server A"),)), actor="alice")
        assert list(b.fetch(["m1"])) == ["m1"]
        assert [i for i, _ in b.match("server", 5, Filters())] == ["m1"]
        b.write(WriteBatch(delete_ids=(MemoryId("m1"),)), actor="bob")
        assert a.fetch(["m1"]) == {}
        trail = a.audit()
        assert [(r["actor"], r["upserts"], r["deletes"]) for r in trail] == [
            ("bob", [], ["m1"]),
            ("alice", ["m1"], []),
        ]
        elsewhere = PostgresStore(first, other, embedder)
        a.write(WriteBatch(upserts=(memory("m2", "only in the user's own"),)))
        assert elsewhere.fetch(["m2"]) == {}
        assert elsewhere.match("own", 5, Filters()) == []
    finally:
        first.close()
        second.close()


@pytest.fixture
def pg_folder() -> Iterator[Path]:
    """A folder of its own under the system temp dir (the server user must reach it)."""
    folder = Path(tempfile.mkdtemp(prefix="imprint-pg-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_a_database_restart_needs_no_server_restart(pg_folder: Path, embedder: Embedder) -> None:
    """The database restarted under a running store: the next write and read go through on
    the same pool, and what was acknowledged before is there."""
    server = LocalPostgres(pg_folder / "pg")
    url = server.start()
    pool = open_pool(url, max_size=2)
    try:
        store = PostgresStore(pool, fresh_workspace(), embedder)
        store.write(WriteBatch(upserts=(memory("m1", "before the restart"),)))
        server.stop("immediate")  # as a crash: recovery replays the WAL at the next start
        server.start()
        store.write(WriteBatch(upserts=(memory("m2", "after the restart"),)))
        assert sorted(store.fetch(["m1", "m2"])) == ["m1", "m2"]
    finally:
        pool.close()
        server.stop("immediate")


def test_team_local_prints_the_same_url_until_stopped(pg_folder: Path) -> None:
    """`imprint team local --dir` starts a cluster with the schema and prints its URL; run
    again it prints the same URL; --stop stops it."""
    runner = CliRunner()
    folder = pg_folder / "cluster"
    first = runner.invoke(app, ["team", "local", "--dir", str(folder)])
    assert first.exit_code == 0, first.output
    url = first.output.strip()
    try:
        assert url.startswith("postgresql://") and "127.0.0.1" in url
        with psycopg.connect(url) as conn:
            row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            assert row.fetchone() is not None
        again = runner.invoke(app, ["team", "local", "--dir", str(folder)])
        assert again.output.strip() == url
    finally:
        stopped = runner.invoke(app, ["team", "local", "--dir", str(folder), "--stop"])
    assert stopped.exit_code == 0
    assert not LocalPostgres(folder).running()


_WRITER = """
import sys
from imprint.store.embedder import Embedder
from imprint.store.postgres import PostgresStore, open_pool
from imprint.store.records import Record, WriteBatch
import numpy as np

url, workspace = sys.argv[1], sys.argv[2]
store = PostgresStore(open_pool(url, max_size=1), workspace, Embedder(threads=1))
vector = np.ones((1, 384), dtype=np.float32)
i = 0
while True:
    rec = Record(id=f"k{i}", content=f"acknowledged write {i}", source_type="memory")
    store.write(WriteBatch(upserts=(rec,)), vector, actor="writer")
    print(rec.id, flush=True)
    i += 1
"""


def test_a_server_killed_mid_write_loses_nothing_it_acknowledged(
    team_database: str,  # noqa: F811
    embedder: Embedder,
) -> None:
    """A writer process SIGKILLed while writing: every write it acknowledged (printed after
    its commit) is read through another connection pool, whole."""
    workspace = fresh_workspace()
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER, team_database, workspace],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    assert proc.stdout is not None
    acked = [proc.stdout.readline().strip() for _ in range(40)]
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    assert acked[-1] == "k39"
    pool = open_pool(team_database, max_size=1)
    try:
        reader = PostgresStore(pool, workspace, embedder)
        found = reader.fetch(acked)
        assert sorted(found) == sorted(acked)
        assert all(found[MemoryId(i)].content == f"acknowledged write {i[1:]}" for i in acked)
        assert len(reader.audit(limit=1000)) >= len(acked)
    finally:
        pool.close()


def test_team_audit_lists_writes_newest_first(
    team_database: str,  # noqa: F811
    embedder: Embedder,
) -> None:
    """`imprint team audit` shows each write of the workspace: who, how many, which ids."""
    workspace = fresh_workspace("team")
    pool = open_pool(team_database, max_size=1)
    try:
        store = PostgresStore(pool, workspace, embedder)
        store.write(WriteBatch(upserts=(memory("m1", "first"),)), actor="alice")
        store.write(WriteBatch(delete_ids=(MemoryId("m1"),)), actor="bob")
    finally:
        pool.close()
    result = CliRunner().invoke(
        app, ["team", "audit", "--database", team_database, "--workspace", workspace]
    )
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert [line.split("\t")[2:] for line in lines] == [
        ["bob", "0 written; 1 deleted", "-m1"],
        ["alice", "1 written; 0 deleted", "m1"],
    ]


def test_team_init_against_no_server_is_one_line() -> None:
    """A database that does not answer: one line naming --database, nothing else."""
    from imprint.store.postgres.local import free_port

    url = f"postgresql://postgres@127.0.0.1:{free_port()}/postgres"
    result = CliRunner().invoke(app, ["team", "init", "--database", url])
    assert result.exit_code != 0
    message = str(result.exception)
    assert message.startswith("--database: cannot connect:") and "\n" not in message
