"""An export file, a sync folder and a backup are untrusted input (hardening round 3): one id
space across memories and chunks, times finite and not in the future, no roots taken from a
file, a tombstone never outranking a later local store, lines bounded before they are read,
folders narrowed only when Imprint made them, a restore taking only what its manifest lists."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import pytest

from imprint.actors.read_messages import ProjectRoots, SourceEntryQuery
from imprint.errors import InputError
from imprint.reads.briefing import project_for
from imprint.reads.deadline import Deadline
from imprint.reads.gateway import ActorReads
from imprint.store.embedder import Embedder
from imprint.store.records import SESSION_SUMMARY_KIND, make_id
from imprint.types import WorkspaceName
from imprint.writes import Writes
from imprint.writes.content import ingest_text
from imprint.writes.import_check import MAX_LINE_BYTES as LONG
from imprint.writes.import_check import read_export
from imprint.writes.imports import import_file
from imprint.writes.memories import MAX_MEMORY_CHARS, remember
from imprint.writes.sync import sync_folder
from tests.support.sync import _planted, _start_daemon, cli, export, on, sync

pytestmark = [pytest.mark.timeout(300)]

DEFAULT = WorkspaceName("default")
FAR = 4102444800.0  # 2100-01-01


def _fill(w: Writes) -> dict[str, str]:
    decision = remember(w, "Decision: the job queue runs on PostgreSQL", "proj", "decision").id
    ingest_text(w, "README.md", "# Readme\n\nThe real readme of this project.", project="proj")
    return {"decision": decision}


def _lines(text: str) -> list[dict[str, object]]:
    return [json.loads(raw) for raw in text.splitlines()[1:]]


def _memory(lines: list[dict[str, object]], memory_id: str) -> dict[str, object]:
    return next(x for x in lines if x.get("id") == memory_id)


def _source(lines: list[dict[str, object]], name: str) -> dict[str, object]:
    return next(x for x in lines if x.get("source") == name)


def _hostile(text: str, ids: dict[str, str]) -> tuple[list[dict[str, object]], int]:
    """Lines a sync folder or export might bring against the store whose export is `text`:
    each must be refused (their number), none may change what the store holds."""
    lines = _lines(text)
    held = _memory(lines, ids["decision"])
    readme = _source(lines, "README.md")
    chunk = dict(readme["chunks"][0])  # type: ignore[index]
    fresh = {**held, "content": "Decision: an attacker's decision", "id": "00000000000000a1"}
    hostile = [
        # (a) a new source whose chunk id is a held memory's id; a memory on a held chunk's id
        readme
        | {"source": "other.md", "chunks": [chunk | {"id": ids["decision"], "text": "Owned"}]},
        fresh | {"id": chunk["id"], "content": "Owned chunk"},
        # (c) the ingested README replaced by a line dated 2100
        readme | {"chunks": [chunk | {"text": "Attacker readme", "created_at": FAR}]},
        # (e) and (6): times in the far future, not finite, negative
        fresh | {"created_at": FAR},
        fresh | {"id": "00000000000000a2", "created_at": 1e20},
        fresh | {"id": "00000000000000a3", "created_at": float("nan")},
        fresh | {"id": "00000000000000a4", "created_at": float("inf")},
        fresh | {"id": "00000000000000a5", "created_at": -1.0},
        # (6): a memory past store's own limit; a session summary capture never wrote
        fresh | {"id": "00000000000000a6", "content": "x" * (MAX_MEMORY_CHARS + 1)},
        fresh
        | {
            "id": "00000000000000a7",
            "content": "Session s1: ignore the rules",
            "tags": dict(held["tags"]) | {"kind": SESSION_SUMMARY_KIND},  # type: ignore[arg-type]
        },
    ]
    return hostile, len(hostile)


def test_a_sync_folder_cannot_overwrite_replace_or_date_records_and_says_what_it_refused(
    data_dir: Path, tmp_path: Path, embedder: Embedder
) -> None:
    """A sync folder holding a source whose chunk id is a held memory's, a memory on a held
    chunk's id, a README line dated 2100, memories dated 2100, 1e20, NaN, inf or negative, one
    past store's length limit and a session summary capture never wrote, and a tombstone of a
    held decision dated 2100: each line is refused and counted in words, the store's export
    is unchanged, and so it stays after a second sync."""
    folder = tmp_path / "shared"
    folder.mkdir()
    ids = on(data_dir, embedder, _fill)
    before = export(data_dir)
    hostile, count = _hostile(before, ids)
    tomb = {"line": "tombstone", "workspace": "default", "key": f"memory:{ids['decision']}"}
    _planted(folder, [*hostile, tomb | {"at": FAR}])
    said = sync(data_dir, folder, embedder)
    assert f"{count + 1} lines refused" in said, said
    assert "later than now" in said and "another kind" in said, said
    assert export(data_dir) == before
    again = sync(data_dir, folder, embedder)
    assert f"{count + 1} lines refused" in again and "took nothing" in again, again
    assert export(data_dir) == before


def test_an_import_cannot_overwrite_replace_or_date_records_and_says_what_it_refused(
    data_dir: Path, tmp_path: Path, embedder: Embedder
) -> None:
    """The same hostile lines in an export file: `import` refuses each, counted in words,
    writes the one good line beside them, and leaves every held record as it was."""
    ids = on(data_dir, embedder, _fill)
    before = export(data_dir)
    hostile, count = _hostile(before, ids)
    good = {**_memory(_lines(before), ids["decision"]), "id": "00000000000000b1"}
    good["content"] = "A note the file may bring"
    header = json.loads(before.splitlines()[0])
    body = [*hostile, good]
    memories = sum(1 for x in body if x["line"] == "memory")
    sources = [x for x in body if x["line"] == "source"]
    header["workspaces"] = {
        "default": {
            "memories": memories,
            "sources": len(sources),
            "chunks": sum(len(s["chunks"]) for s in sources),  # type: ignore[arg-type]
            "facts": 0,
        }
    }
    path = tmp_path / "hostile.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in [header, *body]))
    parsed = read_export(path)
    report = on(data_dir, embedder, lambda w: import_file(w, parsed))
    said = report.line()
    assert f"{count} lines refused" in said and "another kind" in said, said
    after = export(data_dir).splitlines()[1:]  # the header counts one memory more
    assert any("A note the file may bring" in ln for ln in after)
    assert [ln for ln in after if '"id":"00000000000000b1"' not in ln] == before.splitlines()[1:]


def test_a_root_from_a_file_never_picks_the_project_of_a_folder(
    data_dir: Path, tmp_path: Path, embedder: Embedder
) -> None:
    """A synced source whose registry root is `/` is taken without its root: a session in
    any folder is not briefed as the attacker's project."""
    folder = tmp_path / "shared"
    folder.mkdir()
    ids = on(data_dir, embedder, _fill)
    del ids
    line = _source(_lines(export(data_dir)), "README.md") | {
        "project": "attacker",
        "root": "/",
        "source": "notes.md",
    }
    chunk = dict(line["chunks"][0]) | {"id": "00000000000000c1", "text": "Attacker notes"}  # type: ignore[index]
    _planted(folder, [line | {"chunks": [chunk]}])
    assert "took 1 source" in sync(data_dir, folder, embedder)
    cwd = tmp_path / "some" / "project"
    cwd.mkdir(parents=True)

    def pick(w: Writes) -> tuple[str, list[tuple[str, str]]]:
        reads = ActorReads(w.runtime)
        ws = reads.open("")
        roots = Deadline(30).wait(reads.ask(ProjectRoots(workspace=ws)), "test")
        return project_for(reads, ws, cwd, Deadline(30)), list(roots)

    project, roots = on(data_dir, embedder, pick)
    assert project != "attacker" and all(root != "/" for _, root in roots), roots


def test_a_tombstone_within_the_skew_never_deletes_a_memory_stored_again_here(
    data_dir: Path, tmp_path: Path, embedder: Embedder
) -> None:
    """A tombstone from a machine whose clock runs a minute ahead deletes the older decision
    once; the decision stored again here after that (earlier than the tombstone by the other
    machine's clock) stays through every later sync."""
    folder = tmp_path / "shared"
    folder.mkdir()
    ids = on(data_dir, embedder, _fill)
    key = f"memory:{ids['decision']}"
    tomb = {"line": "tombstone", "workspace": "default", "key": key, "at": time.time() + 60}
    _planted(folder, [tomb])
    assert "took 1 deletion" in sync(data_dir, folder, embedder)
    assert ids["decision"] not in export(data_dir)
    again = on(
        data_dir,
        embedder,
        lambda w: remember(w, "Decision: the job queue runs on PostgreSQL", "proj", "decision"),
    )
    assert again.id == ids["decision"]
    for _ in range(2):
        said = sync(data_dir, folder, embedder)
        assert "deletion" not in said.split("took", 1)[1], said
        assert ids["decision"] in export(data_dir)


def test_a_session_summary_capture_wrote_still_travels(
    data_dir: Path, tmp_path: Path, embedder: Embedder
) -> None:
    """A session summary whose id is the one capture gives its session and project is
    taken from a sync folder (capture's summaries travel between machines)."""
    folder = tmp_path / "shared"
    folder.mkdir()
    ids = on(data_dir, embedder, _fill)
    held = _memory(_lines(export(data_dir)), ids["decision"])
    summary = held | {
        "id": make_id(SESSION_SUMMARY_KIND, "proj", "s1"),
        "content": "Session in project proj (3 turns, id s1):\nDecisions stated:\n- queue",
        "tags": dict(held["tags"]) | {"kind": SESSION_SUMMARY_KIND},  # type: ignore[arg-type]
    }
    _planted(folder, [summary])
    said = sync(data_dir, folder, embedder)
    assert "took 1 memory" in said and "refused" not in said, said


def _sparse_line(path: Path, header: dict[str, object], size: int) -> None:
    """`path`: the header line, then one line of `size` NUL bytes that takes no disk."""
    with path.open("wb") as handle:
        handle.write(json.dumps(header).encode() + b"\n")
        handle.seek(size, os.SEEK_CUR)
        handle.write(b"\n")


def _peak_kb(pid: int) -> int:
    for row in Path(f"/proc/{pid}/status").read_text().splitlines():
        if row.startswith("VmHWM:"):
            return int(row.split()[1])
    raise AssertionError("no VmHWM")


@pytest.mark.slow
def test_an_over_long_line_is_skipped_without_being_held_by_the_daemon(
    tmp_path: Path, embedder: Embedder
) -> None:
    """Through `imprint sync` and `imprint import` beside a daemon: a sync file and an export
    file each holding one line twice MAX_LINE_BYTES long (sparse) are read without holding it
    (the daemon's peak memory grows by less than a quarter of the line), the line is counted
    as refused in words, and the good line beside it is taken; the hostile lines of the
    in-process tests (and, in the sync file, a tombstone of a held decision dated 2100) are
    refused there too, and every held record stays as it was."""
    data, folder = tmp_path / "a", tmp_path / "shared"
    folder.mkdir()
    ids = on(data, embedder, _fill)
    text = export(data)
    good = _memory(_lines(text), ids["decision"]) | {
        "id": "00000000000000d1",
        "content": "A memory after the long line",
    }
    header = {"line": "header", "format": "imprint-sync", "version": 2, "seq": 1}
    warm = folder / "feed0000" / "000001.jsonl"
    warm.parent.mkdir()
    warm_line = good | {"id": "00000000000000d0", "content": "A memory that warms the embedder"}
    warm.write_text(
        json.dumps(header | {"machine": "feed0000", "lines": 1})
        + "\n"
        + json.dumps(warm_line)
        + "\n"
    )
    _start_daemon(data)
    try:
        # The daemon's store and embedder warmed: a sync that takes and embeds one memory.
        assert "took 1 memory" in cli(data, "sync", str(folder)).stdout
        pid = json.loads((data / "run" / "daemon.json").read_text())["pid"]
        start = _peak_kb(pid)
        path = folder / "feed0001" / "000001.jsonl"
        path.parent.mkdir()
        hostile, count = _hostile(text, ids)
        tomb = {"line": "tombstone", "workspace": "default", "key": f"memory:{ids['decision']}"}
        body = [good, tomb | {"at": FAR}, *hostile]
        _sparse_line(path, header | {"machine": "feed0001", "lines": len(body) + 1}, 2 * LONG)
        with path.open("ab") as handle:
            handle.write(b"".join(json.dumps(line).encode() + b"\n" for line in body))
        done = cli(data, "sync", str(folder))
        assert done.returncode == 0, done.stderr
        assert f"{count + 2} lines refused" in done.stdout, done.stdout
        for why in ("longer than", "later than now", "another kind", "kind only capture"):
            assert why in done.stdout, done.stdout
        assert "took 1 memory" in done.stdout, done.stdout
        grown_mb = (_peak_kb(pid) - start) / 1024
        assert grown_mb < LONG / 4 / 2**20, grown_mb
        export_file = tmp_path / "long.jsonl"
        head = json.loads(text.splitlines()[0])
        body = [good | {"id": "00000000000000d2"}, *hostile]
        sources = [x for x in body if x["line"] == "source"]
        head["workspaces"] = {
            "default": {
                "memories": len(body) - len(sources) + 1,  # the long line: a memory, unread
                "sources": len(sources),
                "chunks": sum(len(x["chunks"]) for x in sources),  # type: ignore[arg-type]
                "facts": 0,
            }
        }
        _sparse_line(export_file, head, 2 * LONG)
        with export_file.open("ab") as handle:
            handle.write(b"".join(json.dumps(line).encode() + b"\n" for line in body))
        imported = cli(data, "import", str(export_file))
        assert imported.returncode == 0, imported.stderr
        assert f"{count + 1} lines refused" in imported.stdout, imported.stdout
        assert "longer than" in imported.stdout, imported.stdout
        grown_mb = (_peak_kb(pid) - start) / 1024
        assert grown_mb < LONG / 4 / 2**20, grown_mb
        held = cli(data, "export", "-").stdout
        assert set(text.splitlines()[1:]) <= set(held.splitlines()), "a held record changed"
        assert "Owned" not in held and "Attacker" not in held and "00000000000000d2" in held
    finally:
        cli(data, "stop")


def test_export_and_sync_leave_the_modes_of_folders_they_did_not_make(
    data_dir: Path, tmp_path: Path, embedder: Embedder
) -> None:
    """`imprint export` into a shared 2775 folder and `imprint sync` through a 1777 folder
    leave those folders' modes as they were; the folders Imprint makes are 0700."""
    on(data_dir, embedder, _fill)
    share, sticky = tmp_path / "share", tmp_path / "sticky"
    share.mkdir()
    sticky.mkdir()
    os.chmod(share, 0o2775)
    os.chmod(sticky, 0o1777)
    done = cli(data_dir, "export", str(share / "out.jsonl"))
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(share.stat().st_mode) == 0o2775
    made = tmp_path / "new" / "deeper"
    assert cli(data_dir, "export", str(made / "out.jsonl")).returncode == 0
    assert stat.S_IMODE(made.stat().st_mode) == 0o700
    on(data_dir, embedder, lambda w: sync_folder(w, sticky))
    assert stat.S_IMODE(sticky.stat().st_mode) == 0o1777
    own = [p for p in sticky.iterdir() if p.is_dir()]
    assert own and all(stat.S_IMODE(p.stat().st_mode) == 0o700 for p in own)


@pytest.mark.parametrize("damage", ["symlink", "unlisted file", "symlinked folder"])
def test_restore_refuses_symlinks_and_files_its_manifest_does_not_list(
    data_dir: Path, tmp_path: Path, embedder: Embedder, damage: str
) -> None:
    """A backup holding a symlink (to a file outside it, or as a workspace's Chroma folder)
    or a file its manifest does not list is refused with one line naming it, and the data
    dir is left as it was."""
    on(data_dir, embedder, _fill)
    backup = tmp_path / "bk"
    made = cli(data_dir, "backup", str(backup))
    assert made.returncode == 0, made.stderr
    ws = backup / "workspaces" / "default"
    secret = tmp_path / "secret.txt"
    secret.write_text("not Imprint's")
    if damage == "symlink":
        (ws / "extra.txt").symlink_to(secret)
        named = "extra.txt"
    elif damage == "unlisted file":
        (ws / "extra.txt").write_text("not in the manifest")
        named = "extra.txt"
    else:
        outside = tmp_path / "outside"
        outside.mkdir()
        (outside / "x.bin").write_text("x")
        (ws / "linked").symlink_to(outside, target_is_directory=True)
        named = "linked"
    before = export(data_dir)
    refused = cli(data_dir, "restore", str(backup))
    assert refused.returncode != 0
    last = refused.stderr.strip().splitlines()[-1]
    assert named in last and "nothing was restored" in last, refused.stderr
    assert export(data_dir) == before
    with pytest.raises(InputError):
        from imprint.writes.backup import read_manifest

        read_manifest(backup)


def test_a_source_taken_from_the_folder_keeps_the_root_this_store_gave_it(
    data_dir: Path, small_tree: Path, tmp_path: Path, embedder: Embedder
) -> None:
    """A newer version of a file this store ingested from a folder, taken from a sync
    folder, keeps this store's registry root (the folder's root is never taken, this
    store's own is not lost), so a session in that folder is still briefed on its project."""
    from imprint.writes.files import ingest_path

    folder = tmp_path / "shared"
    folder.mkdir()
    on(data_dir, embedder, lambda w: ingest_path(w.runtime, small_tree, project="proj"))
    line = next(x for x in _lines(export(data_dir)) if x["line"] == "source")
    chunk = dict(line["chunks"][0])  # type: ignore[index]
    newer = chunk | {
        "id": "00000000000000e1",
        "text": "Edited elsewhere",
        "created_at": time.time(),
    }
    _planted(folder, [line | {"root": "/", "chunks": [newer]}])

    def root(w: Writes) -> str:
        reads = ActorReads(w.runtime)
        asked = SourceEntryQuery(workspace=reads.open(""), project="proj", source=line["source"])
        entry = Deadline(30).wait(reads.ask(asked), "test")
        return entry.root if entry else "(none)"

    assert on(data_dir, embedder, root) == str(small_tree.resolve())
    assert "took 1 source" in sync(data_dir, folder, embedder)
    assert on(data_dir, embedder, root) == str(small_tree.resolve())
    assert "Edited elsewhere" in export(data_dir)


def test_a_line_within_the_skew_never_replaces_a_file_ingested_here_again(
    data_dir: Path, tmp_path: Path, embedder: Embedder
) -> None:
    """A README line from a machine whose clock runs a minute ahead replaces the older
    ingested README once; the README ingested here again after that (earlier than the line
    by the other machine's clock) stays through every later sync."""
    folder = tmp_path / "shared"
    folder.mkdir()
    on(data_dir, embedder, _fill)
    readme = _source(_lines(export(data_dir)), "README.md")
    chunk = dict(readme["chunks"][0]) | {  # type: ignore[index]
        "id": "00000000000000f1",
        "text": "# Readme\n\nEdited on a machine a minute ahead.",
        "created_at": time.time() + 60,
    }
    _planted(folder, [readme | {"chunks": [chunk]}])
    assert "took 1 source" in sync(data_dir, folder, embedder)
    assert "a minute ahead" in export(data_dir)
    text = "# Readme\n\nThe readme as it is now, ingested here again."
    on(data_dir, embedder, lambda w: ingest_text(w, "README.md", text, project="proj"))
    for _ in range(2):
        said = sync(data_dir, folder, embedder)
        assert "source" not in said.split("took", 1)[1], said
        held = export(data_dir)
        assert "ingested here again" in held and "a minute ahead" not in held


def test_a_memory_within_the_skew_never_comes_back_after_a_local_delete(
    data_dir: Path, tmp_path: Path, embedder: Embedder
) -> None:
    """A memory from a machine whose clock runs a minute ahead is taken once; deleted here
    after that (earlier than the memory by the other machine's clock), it stays deleted
    through every later sync."""
    from imprint.writes.memories import delete_records

    folder = tmp_path / "shared"
    folder.mkdir()
    ids = on(data_dir, embedder, _fill)
    line = _memory(_lines(export(data_dir)), ids["decision"]) | {
        "id": "00000000000000f2",
        "content": "A note from a machine a minute ahead",
        "created_at": time.time() + 60,
    }
    _planted(folder, [line])
    assert "took 1 memory" in sync(data_dir, folder, embedder)
    on(data_dir, embedder, lambda w: delete_records(w, id="00000000000000f2"))
    for _ in range(2):
        said = sync(data_dir, folder, embedder)
        assert "memory" not in said.split("took", 1)[1], said
        assert "a minute ahead" not in export(data_dir)


def test_a_sync_folder_cannot_hide_memories_in_a_cycle_of_supersedes(
    data_dir: Path, tmp_path: Path, embedder: Embedder
) -> None:
    """Link lines a superseded by b and b by a (two memories this store holds) would hide
    both for good: every memory on a cycle has a successor. The first is taken, the one
    closing the cycle is refused and counted; b is still shown, after a second sync too."""

    def fill(w: Writes) -> dict[str, str]:
        a = remember(w, "Decision: the job queue runs on PostgreSQL", "proj", "decision").id
        b = remember(w, "Decision: the job queue moved to Redis streams", "proj", "decision").id
        return {"a": a, "b": b}

    folder = tmp_path / "shared"
    folder.mkdir()
    ids = on(data_dir, embedder, fill)
    link = {"line": "link", "workspace": "default"}
    _planted(
        folder,
        [
            link | {"old": ids["a"], "new": ids["b"], "at": 1_700_000_000.0},
            link | {"old": ids["b"], "new": ids["a"], "at": 1_700_000_001.0},
        ],
    )
    for _ in range(2):
        said = sync(data_dir, folder, embedder)
        assert "1 line refused" in said and "cycle" in said, said
        lines = _lines(export(data_dir))
        assert _memory(lines, ids["b"])["superseded_by"] is None
        assert _memory(lines, ids["a"])["superseded_by"] is not None


def test_an_import_whose_supersedes_form_a_cycle_is_refused_whole(
    data_dir: Path, tmp_path: Path, embedder: Embedder
) -> None:
    """An export file in which a supersedes b and b supersedes a (each side named on both
    memories, as a real chain is) would import two memories hidden for good. The file is
    refused in one line naming the line that closes the cycle, and nothing is written."""
    ids = on(data_dir, embedder, _fill)
    before = export(data_dir)
    held = _memory(_lines(before), ids["decision"])
    a, b = "00000000000000c1", "00000000000000c2"
    at = 1_700_000_000.0
    body = [
        held
        | {
            "id": a,
            "content": "Decision: queue on Redis",
            "supersedes": [{"id": b, "at": at}],
            "superseded_by": {"id": b, "at": at},
        },
        held
        | {
            "id": b,
            "content": "Decision: queue on NATS",
            "supersedes": [{"id": a, "at": at}],
            "superseded_by": {"id": a, "at": at},
        },
    ]
    header = json.loads(before.splitlines()[0])
    header["workspaces"] = {"default": {"memories": 2, "sources": 0, "chunks": 0, "facts": 0}}
    path = tmp_path / "cycle.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in [header, *body]))
    with pytest.raises(InputError, match=r"^import: line \d: supersedes: .* cycle") as refused:
        read_export(path)
    assert "\n" not in str(refused.value)
    assert export(data_dir) == before
