"""`imprint sync DIR`: two data dirs converge through a shared folder, deletions travel as
tombstones, the same id always means the same content, and a bad file is refused whole."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest

from imprint.daemon import daemon_alive, stop_daemon
from imprint.errors import SQLITE_FILE, InputError
from imprint.store.dump import dump
from imprint.store.embedder import Embedder
from imprint.store.records import SESSION_SUMMARY_KIND, SupersedeLink, make_id
from imprint.types import WorkspaceName
from imprint.workspaces import list_workspaces, workspace_dir
from imprint.writes import Writes
from imprint.writes.content import ingest_text
from imprint.writes.facts import edit_facts
from imprint.writes.memories import delete_records, remember
from tests.support.sync import (
    DEFAULT,
    _planted,
    _start_daemon,
    cli,
    export,
    on,
    sync,
)

pytestmark = [pytest.mark.timeout(300)]


def links(data: Path, ws: str = DEFAULT) -> list[SupersedeLink]:
    with dump(workspace_dir(data, WorkspaceName(ws)) / SQLITE_FILE) as snapshot:
        return snapshot.supersede_links()


def own_files(data: Path, folder: Path) -> list[Path]:
    me = (data / "instance_id").read_text().strip()
    return sorted((folder / me).glob("*.jsonl")) if (folder / me).is_dir() else []


def _fill_a(w: Writes) -> dict[str, str]:
    pg = remember(w, "Decision: the job queue runs on PostgreSQL", "proj", "decision").id
    redis = remember(
        w, "Decision: the job queue moved to Redis streams", "proj", "decision", supersedes=[pg]
    ).id
    gone = remember(w, "A note from machine A that is deleted before any sync").id
    delete_records(w, id=gone)
    added = edit_facts(w, "add", "job queue", "runs on", "Redis", source="adr-9")
    ingest_text(w, "notes/a.md", "# Retries\n\nMachine A retries with exponential backoff.")
    return {"pg": pg, "redis": redis, "fact": added.split()[1].removeprefix("fact:")}


def _fill_b(w: Writes) -> dict[str, str]:
    ruff = remember(w, "Use ruff for linting", "tools", "preference").id
    both = remember(w, "Use ruff for linting and formatting", "tools", supersedes=[ruff]).id
    gone = remember(w, "A note from machine B that is deleted before any sync").id
    delete_records(w, id=gone)
    ingest_text(w, "notes/b.md", "# Caching\n\nMachine B caches the parsed config.")
    return {"ruff": ruff, "both": both}


@pytest.fixture
def pair(tmp_path: Path, embedder: Embedder) -> tuple[Path, Path, Path, dict[str, str]]:
    """Data dirs A and B, each having stored, superseded and deleted, synced A, B, A
    through one folder; the ids by name."""
    a, b, folder = tmp_path / "a", tmp_path / "b", tmp_path / "shared"
    folder.mkdir()
    ids = on(a, embedder, _fill_a) | on(b, embedder, _fill_b)
    for data in (a, b, a):
        sync(data, folder, embedder)
    return a, b, folder, ids


def test_two_data_dirs_converge_and_a_third_sync_changes_nothing(
    pair: tuple[Path, Path, Path, dict[str, str]], embedder: Embedder
) -> None:
    """After sync A, sync B, sync A the two exports are byte-identical and hold both
    machines' memories, facts and sources; the supersede links are the same (their times
    too); each side's deletion before the first sync never reached the other; another sync
    on each side writes no file, takes nothing and leaves both exports as they were."""
    a, b, folder, ids = pair
    text = export(a)
    assert text == export(b)
    for name in ("pg", "redis", "ruff", "both", "fact"):
        assert ids[name] in text
    assert "notes/a.md" in text and "notes/b.md" in text
    assert "deleted before any sync" not in text
    assert links(a) == links(b)
    assert {(link.old, link.new) for link in links(a)} == {
        (ids["pg"], ids["redis"]),
        (ids["ruff"], ids["both"]),
    }
    files = sorted(folder.rglob("*.jsonl"))
    for data in (a, b):
        said = sync(data, folder, embedder)
        assert "wrote nothing" in said and "took nothing" in said, said
    assert sorted(folder.rglob("*.jsonl")) == files
    assert export(a) == text == export(b)


def test_deletions_travel_as_tombstones_and_an_older_record_never_resurrects(
    pair: tuple[Path, Path, Path, dict[str, str]], embedder: Embedder, tmp_path: Path
) -> None:
    """A memory and a source deleted on A (one of them first stored on B) are gone on B once
    both have synced, and deleting the newer memory of a supersede chain on B restores the
    older one on A; a third machine's stale file that still holds the deleted memory does not
    bring it back on either side."""
    a, b, folder, ids = pair
    stale = own_files(b, folder)[0].read_text()  # B's first file: it holds ruff and both
    on(a, embedder, lambda w: delete_records(w, id=ids["ruff"]))
    on(a, embedder, lambda w: delete_records(w, source="notes/b.md"))
    on(b, embedder, lambda w: delete_records(w, id=ids["redis"]))
    said = sync(a, folder, embedder)
    assert "2 tombstones" in said, said
    for data in (b, a):
        sync(data, folder, embedder)
    text = export(a)
    assert text == export(b)
    assert ids["ruff"] not in text and "notes/b.md" not in text and ids["redis"] not in text
    assert ids["pg"] in text and ids["both"] in text
    assert links(a) == links(b) == []  # the pg -> redis link went with redis
    # A third machine that never saw the deletions writes B's old lines as its own.
    third = folder / "c0ffee00"
    third.mkdir()
    (third / "000001.jsonl").write_text(
        stale.replace(stale.split('"machine":"')[1][:8], "c0ffee00")
    )
    for data in (a, b):
        said = sync(data, folder, embedder)
        assert "took nothing" in said, said
    assert export(a) == text == export(b)


def test_a_memory_stored_again_after_its_deletion_travels_again(
    pair: tuple[Path, Path, Path, dict[str, str]], embedder: Embedder
) -> None:
    """A deletion does not bar the id for ever: the same text stored again on A after the
    deletion synced (a newer record than the tombstone) reaches B again."""
    a, b, folder, ids = pair
    on(a, embedder, lambda w: delete_records(w, id=ids["pg"]))
    sync(a, folder, embedder)
    sync(b, folder, embedder)
    assert ids["pg"] not in export(b)
    again = on(
        a, embedder, lambda w: remember(w, "Decision: the job queue runs on PostgreSQL", "proj")
    )
    assert again.id == ids["pg"] and not again.existed
    sync(a, folder, embedder)
    said = sync(b, folder, embedder)
    assert "took 1 memory" in said, said
    assert ids["pg"] in export(b) and export(a) == export(b)


def test_an_ended_fact_ends_on_the_other_side(
    pair: tuple[Path, Path, Path, dict[str, str]], embedder: Embedder
) -> None:
    """Ending a fact on B (a fact A added) ends it on A after both sync."""
    a, b, folder, ids = pair
    on(b, embedder, lambda w: edit_facts(w, "end", fact_id=ids["fact"]))
    sync(b, folder, embedder)
    said = sync(a, folder, embedder)
    assert "took 1 fact" in said, said
    line = next(ln for ln in export(a).splitlines() if ids["fact"] in ln)
    assert json.loads(line)["ended"] is not None
    assert export(a) == export(b)


def _line_by_id(export_text: str, memory_id: str) -> dict[str, object]:
    for raw in export_text.splitlines():
        data = json.loads(raw)
        if data.get("id") == memory_id:
            return dict(data)
    raise AssertionError(memory_id)


def _source_line(export_text: str, name: str) -> dict[str, object]:
    for raw in export_text.splitlines():
        data = json.loads(raw)
        if data.get("source") == name:
            return dict(data)
    raise AssertionError(name)


@pytest.mark.parametrize("what", ["memory", "chunk", "fact"])
def test_the_same_id_with_other_content_is_refused_naming_it_and_nothing_is_written(
    pair: tuple[Path, Path, Path, dict[str, str]], embedder: Embedder, what: str
) -> None:
    """A file in the folder holding a memory (or a source's chunk, or a fact) whose id B
    holds with other text is refused with one line naming the id, and B writes nothing: not the new
    memory the same file brings, not a file of its own for what it stored meanwhile."""
    _a, b, folder, ids = pair
    text = export(b)
    if what == "memory":
        forged, named = _line_by_id(text, ids["both"]) | {"content": "Use black"}, ids["both"]
    elif what == "fact":
        forged, named = _line_by_id(text, ids["fact"]) | {"object": "MySQL"}, ids["fact"]
    else:
        source = _source_line(text, "notes/b.md")
        chunk = dict(source["chunks"][0])  # type: ignore[index]
        named = str(chunk["id"])
        forged = source | {"source": "notes/c.md", "chunks": [chunk | {"text": "Other text"}]}
    fresh = _line_by_id(text, ids["pg"]) | {"id": "00000000000000aa", "content": "A new memory"}
    _planted(folder, [fresh, forged])
    on(b, embedder, lambda w: remember(w, "Stored on B after the last sync"))
    before, files = export(b), own_files(b, folder)
    with pytest.raises(InputError) as refused:
        sync(b, folder, embedder)
    message = str(refused.value)
    assert "\n" not in message and named in message and "different content" in message
    assert export(b) == before and own_files(b, folder) == files


def test_a_session_summary_rewritten_in_place_travels_as_its_newer_version(
    pair: tuple[Path, Path, Path, dict[str, str]], embedder: Embedder
) -> None:
    """Capture rewrites a session's summary memory under one id: a newer summary in the
    folder replaces the older one here instead of being refused as other content. (A summary
    is taken only under the id capture gives its project and session, and a time no later
    than now: round 3 of the hardening.)"""
    a, _b, folder, ids = pair
    head = "Session in project proj (2 turns, id s1):\nDecisions stated:\n- "
    summary = _line_by_id(export(a), ids["pg"]) | {
        "id": make_id(SESSION_SUMMARY_KIND, "proj", "s1"),
        "content": head + "the queue",
        "tags": {"domains": [], "kind": "session-summary", "lang": "", "layer": "", "topics": []},
    }
    path = _planted(folder, [summary])
    sync(a, folder, embedder)
    newer = summary | {"content": head + "the queue, then fixed CI", "created_at": time.time()}
    header = json.loads(path.read_text().splitlines()[0]) | {"seq": 2}
    (path.parent / "000002.jsonl").write_text(json.dumps(header) + "\n" + json.dumps(newer) + "\n")
    said = sync(a, folder, embedder)
    assert "took 1 memory" in said, said
    assert "then fixed CI" in export(a)


@pytest.mark.parametrize(
    "damage", ["truncated", "bad json", "short count", "unknown kind", "newer version"]
)
def test_a_damaged_file_is_refused_naming_file_and_line_and_nothing_is_applied(
    pair: tuple[Path, Path, Path, dict[str, str]], embedder: Embedder, damage: str
) -> None:
    """A file cut short, a line that is not JSON, a header counting more lines than the
    file holds, a line of an unknown kind, or a format version this one does not read: the
    sync is refused with one line naming the file and the line, and nothing the good files
    bring is applied."""
    a, b, folder, ids = pair
    on(a, embedder, lambda w: remember(w, "A memory that must not arrive half"))
    sync(a, folder, embedder)
    text = export(a)
    good = _line_by_id(text, ids["pg"]) | {"id": "00000000000000bb", "content": "Another one"}
    path = _planted(folder, [good, good | {"id": "00000000000000cc"}])
    raw = path.read_bytes()
    where = {"truncated": 3, "bad json": 2, "short count": 4, "unknown kind": 3}.get(damage, 1)
    if damage == "truncated":
        path.write_bytes(raw[:-20])
    elif damage == "bad json":
        lines = raw.splitlines(keepends=True)
        path.write_bytes(lines[0] + b"{not json\n" + b"".join(lines[2:]))
    elif damage == "short count":
        _planted(folder, [good, good | {"id": "00000000000000cc"}], count=3)
    elif damage == "unknown kind":
        _planted(folder, [good, {"line": "comment", "workspace": "default"}])
    else:
        lines = raw.splitlines(keepends=True)
        path.write_bytes(lines[0].replace(b'"version": 1', b'"version": 3') + b"".join(lines[1:]))
    before = export(b)
    with pytest.raises(InputError) as refused:
        sync(b, folder, embedder)
    message = str(refused.value)
    assert "\n" not in message
    assert f"{path}: line {where}:" in message, message
    if damage == "newer version":
        assert "format version 3 is not known; this imprint reads versions 1, 2" in message
    assert export(b) == before


def test_the_store_keeps_tombstones_and_an_older_store_gains_the_table_on_open(
    data_dir: Path, embedder: Embedder
) -> None:
    """Deleting a memory or a source leaves a tombstone with its time; storing the memory
    again removes it; a store written before tombstones existed gets the table when a
    writer opens it, keeping its records."""

    def fill(w: Writes) -> str:
        kept = remember(w, "A memory that stays").id
        gone = remember(w, "A memory that goes").id
        ingest_text(w, "notes/x.md", "# X\n\nA source that goes.")
        delete_records(w, id=gone)
        delete_records(w, source="notes/x.md")
        return kept + " " + gone

    kept, gone = on(data_dir, embedder, fill).split()
    db = workspace_dir(data_dir, DEFAULT) / SQLITE_FILE
    with dump(db) as snapshot:
        marks = snapshot.tombstones()
    assert set(marks) == {f"memory:{gone}", "source:|notes/x.md"}
    on(data_dir, embedder, lambda w: remember(w, "A memory that goes"))
    with dump(db) as snapshot:
        assert set(snapshot.tombstones()) == {"source:|notes/x.md"}
    with sqlite3.connect(db) as conn:
        conn.execute("DROP TABLE tombstones")
    with dump(db) as snapshot:
        assert snapshot.tombstones() == {}
    on(data_dir, embedder, lambda w: delete_records(w, id=kept))
    with dump(db) as snapshot:
        assert set(snapshot.tombstones()) == {f"memory:{kept}"}


def test_one_workspace_by_default_and_every_one_with_all(
    tmp_path: Path, embedder: Embedder
) -> None:
    """A plain sync carries the active workspace only; `--all` carries the others too,
    making them on the other side under their own names; `--workspace` names one that
    this store or the folder has (another is refused, and not made)."""
    a, b, folder = tmp_path / "a", tmp_path / "b", tmp_path / "shared"
    folder.mkdir()
    on(a, embedder, lambda w: remember(w, "In the default workspace"))
    on(a, embedder, lambda w: remember(w, "In the work workspace", workspace="work"))
    sync(a, folder, embedder)
    sync(b, folder, embedder)
    assert list_workspaces(b) == [DEFAULT]
    assert "In the default workspace" in export(b)
    sync(a, folder, embedder, all_=True)
    said = sync(b, folder, embedder, all_=True)
    assert "took 1 memory" in said, said
    assert export(a, ["default", "work"]) == export(b, ["default", "work"])
    with pytest.raises(InputError, match="--all, --workspace"):
        sync(b, folder, embedder, all_=True, workspace="work")
    with pytest.raises(InputError, match=r"DIR: .* is not a folder"):
        sync(b, tmp_path / "missing", embedder)
    with pytest.raises(InputError, match="workspace"):
        sync(b, folder, embedder, workspace="wrok")
    assert "wrok" not in list_workspaces(b)
    on(b, embedder, lambda w: remember(w, "Only on B, in a new workspace", workspace="mine"))
    said = sync(b, folder, embedder, workspace="mine")
    assert "1 memory" in said, said
    assert "took 1 memory" in sync(a, folder, embedder, workspace="mine")


@pytest.mark.slow
def test_sync_through_the_command_line_beside_a_daemon_and_without(
    tmp_path: Path, embedder: Embedder
) -> None:
    """Through `imprint sync` and `imprint export`: A (a daemon serving it, so the daemon's
    writer takes what comes) and B (no daemon), each storing, superseding and deleting, sync
    A, B (killed between two of its writes, then again), A: the exports are byte-identical;
    a deletion on B is gone on A; a third round changes nothing; a truncated file in the
    folder is refused with one line naming the file and line, and the exit status says so."""
    a, b, folder = tmp_path / "a", tmp_path / "b", tmp_path / "shared"
    folder.mkdir()
    ids = on(a, embedder, _fill_a) | on(b, embedder, _fill_b)
    _start_daemon(a)
    try:
        assert cli(a, "sync", str(folder)).returncode == 0
        killed = cli(b, "sync", str(folder), env={"IMPRINT_FAILPOINT": "sync.write:2"})
        assert killed.returncode == -9, killed.stderr  # SIGKILL between two of its writes
        assert own_files(b, folder) == []
        for data in (b, a):
            done = cli(data, "sync", str(folder))
            assert done.returncode == 0, done.stderr
            assert done.stdout.startswith("sync default through"), done.stdout
        assert daemon_alive(a)
        on(b, embedder, lambda w: delete_records(w, id=ids["pg"]))
        for data in (b, a):
            assert cli(data, "sync", str(folder)).returncode == 0
        exports = [cli(data, "export", "-") for data in (a, b)]
        assert all(e.returncode == 0 for e in exports)
        assert exports[0].stdout == exports[1].stdout and ids["redis"] in exports[0].stdout
        assert ids["pg"] not in exports[0].stdout
        again = [cli(data, "sync", str(folder)) for data in (a, b)]
        assert all("wrote nothing" in d.stdout and "took nothing" in d.stdout for d in again)
        assert cli(a, "export", "-").stdout == exports[0].stdout
        bad = _planted(folder, [{"line": "tombstone", "workspace": "default", "key": "x"}])
        bad.write_bytes(bad.read_bytes()[:-5])
        refused = cli(a, "sync", str(folder))
        assert refused.returncode == 2
        last = refused.stderr.strip().splitlines()[-1]
        assert last.startswith(f"error: sync: {bad}: line 2:"), refused.stderr
        assert cli(a, "export", "-").stdout == exports[0].stdout
    finally:
        stop_daemon(a)
