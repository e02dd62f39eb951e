"""`imprint export` / `import` and `imprint backup` / `restore`, through the command line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from imprint.actors.lifecycle import Runtime
from imprint.config import Config
from imprint.daemon import ask_import, daemon_alive, stop_daemon
from imprint.reads.export import (
    FORMAT,
    FORMAT_VERSION,
    Counts,
    Header,
    Link,
    MemoryLine,
    Tags,
    line_text,
)
from imprint.reads.facts import KgQueryArgs, fact_rows
from imprint.reads.gateway import ActorReads
from imprint.reads.memory import GetMemoryArgs, memory_row
from imprint.reads.search import SearchArgs, search_text
from imprint.store.embedder import Embedder
from imprint.tools.get_memory import format_memory
from imprint.tools.kg_query import format_facts
from imprint.writes import Writes
from imprint.writes.backup import read_manifest
from imprint.writes.content import ingest_text
from imprint.writes.facts import edit_facts
from imprint.writes.files import ingest_path
from imprint.writes.import_check import read_export
from imprint.writes.memories import delete_records, store_memory
from tests.support.archive import cli, start_daemon

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

QUERIES = [
    "how does an actor stop",
    "tomatoes sun watering",
    "purple kangaroo protocol",
    "retry with exponential backoff",
    "release checklist",
    "job queue decision",
    "where do deploys run",
]
# A supersede chain of three: each decision replaces the one before.
CHAIN = [
    "Decision: deploys run from Jenkins on the build box",
    "Decision: deploys moved to GitHub Actions; Jenkins is retired",
    "Decision: deploys moved to Buildkite agents; GitHub Actions minutes ran out",
]


def _runtime(data: Path, embedder: Embedder) -> Runtime:
    return Runtime(data, Config(), embedder=embedder, reindex=False).start()


@pytest.fixture
def filled(data_dir: Path, small_tree: Path, embedder: Embedder) -> dict[str, str]:
    """A data dir holding an ingested tree, inline content, memories (a supersede chain of
    three among them) and facts (one ended); the memories' ids by name."""
    rt = _runtime(data_dir, embedder)
    try:
        writes = Writes(rt)
        ingest_path(rt, small_tree, project="proj")
        ingest_text(writes, "notes/queue.md", "# Queue\n\nThe job queue polls every second.")
        ids = {
            "pg": store_memory(
                writes, "Decision: the job queue runs on PostgreSQL", "proj", "decision"
            ),
            "ruff": store_memory(writes, "Use ruff for linting; black is no longer needed."),
        }
        for n, text in enumerate(CHAIN):
            before = [ids[f"chain{n - 1}"]] if n else None
            ids[f"chain{n}"] = store_memory(writes, text, "proj", "decision", supersedes=before)
        edit_facts(writes, "add", "job queue", "runs on", "PostgreSQL", source="adr-7")
        edit_facts(writes, "add", "linter", "is", "ruff")
        ended = edit_facts(writes, "add", "linter", "is", "flake8")
        edit_facts(writes, "end", fact_id=ended.split()[1].removeprefix("fact:"))
    finally:
        rt.stop()
    return ids


def _answers(data: Path, embedder: Embedder, ids: dict[str, str]) -> list[str]:
    """What search (each mode, and showing superseded memories), get_memory and kg_query
    answer in the active workspace."""
    rt = _runtime(data, embedder)
    try:
        reads = ActorReads(rt)
        out = [
            search_text(reads, SearchArgs(query=q, mode=mode))
            for q in QUERIES
            for mode in ("hybrid", "semantic", "lexical")
        ]
        out.append(search_text(reads, SearchArgs(query=QUERIES[-1], include_superseded=True)))
        ws = reads.open("")
        out += [format_memory(memory_row(reads, ws, GetMemoryArgs(id=i))) for i in ids.values()]
        for args in (KgQueryArgs(), KgQueryArgs(include_ended=True), KgQueryArgs(subject="linter")):
            out.append(format_facts(fact_rows(reads, ws, args)))
        return out
    finally:
        rt.stop()


def test_export_import_round_trip_gives_the_same_answers(
    filled: dict[str, str], data_dir: Path, tmp_path: Path, embedder: Embedder
) -> None:
    """Two exports of one store are byte-identical; imported into an empty data dir, the
    export gives the same search output (every mode), get_memory output (supersede links
    both ways, with their dates) and kg_query output, and exports back to the same bytes; a
    second import writes nothing and changes nothing."""
    first, second = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    for file in (first, second):
        done = cli(data_dir, "export", str(file))
        assert done.returncode == 0, done.stderr
    assert first.read_bytes() == second.read_bytes()
    header = json.loads(first.read_text().splitlines()[0])
    assert header["version"] == FORMAT_VERSION == 4
    assert header["workspaces"]["default"] == {
        "memories": 5,
        "sources": 6,
        "chunks": header["workspaces"]["default"]["chunks"],
        "facts": 3,
    }
    assert header["workspaces"]["default"]["chunks"] >= 6
    memories = {
        m["id"]: m for m in map(json.loads, first.read_text().splitlines()) if m["line"] == "memory"
    }
    old, mid, new = (memories[filled[f"chain{n}"]] for n in range(3))
    assert old["superseded_by"]["id"] == mid["id"] and mid["superseded_by"]["id"] == new["id"]
    assert mid["supersedes"] == [{"id": old["id"], "at": old["superseded_by"]["at"]}]
    assert new["supersedes"] == [{"id": mid["id"], "at": mid["superseded_by"]["at"]}]
    assert new["superseded_by"] is None and old["supersedes"] == []
    stdout = cli(data_dir, "export", "-")
    assert stdout.returncode == 0 and stdout.stdout.encode() == first.read_bytes()

    other = tmp_path / "other"
    imported = cli(other, "import", str(first))
    assert imported.returncode == 0, imported.stderr
    assert "already there" in imported.stdout
    again = cli(other, "export", str(tmp_path / "back.jsonl"))
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "back.jsonl").read_bytes() == first.read_bytes()
    before = _answers(data_dir, embedder, filled)
    assert _answers(other, embedder, filled) == before
    assert any(f"superseded by {filled['chain2']}" in text for text in before), before[-12:]

    twice = cli(other, "import", str(first))
    assert twice.returncode == 0, twice.stderr
    assert " 0 written," in twice.stdout, twice.stdout
    cli(other, "export", str(tmp_path / "after.jsonl"))
    assert (tmp_path / "after.jsonl").read_bytes() == first.read_bytes()
    checked = cli(other, "status", "--check")
    assert checked.returncode == 0, checked.stdout


def test_an_import_leaves_what_the_store_holds_otherwise_unless_asked(
    filled: dict[str, str], data_dir: Path, tmp_path: Path
) -> None:
    """A file whose memory is dated and tagged otherwise than the store's (same text, so the
    same id) and whose source was ingested at another version: imported into that store,
    nothing is written and the line counts both as left as they are; `--replace` writes the
    file's, and the store then exports as the file."""
    mine = tmp_path / "mine.jsonl"
    assert cli(data_dir, "export", str(mine)).returncode == 0
    lines = [json.loads(line) for line in mine.read_text().splitlines()]
    memory = next(m for m in lines if m["line"] == "memory" and m["id"] == filled["ruff"])
    memory["created_at"] -= 86400.0
    memory["tags"]["topics"] = ["elsewhere"]
    source = next(m for m in lines if m["line"] == "source")
    source["sha256"] = "0" * 64
    theirs = tmp_path / "theirs.jsonl"
    theirs.write_text("".join(json.dumps(m, sort_keys=True) + "\n" for m in lines))

    kept = cli(data_dir, "import", str(theirs))
    assert kept.returncode == 0, kept.stderr
    assert " 0 written," in kept.stdout, kept.stdout
    assert "1 memories and 1 sources the store holds otherwise" in kept.stdout, kept.stdout
    now = tmp_path / "now.jsonl"
    assert cli(data_dir, "export", str(now)).returncode == 0
    assert now.read_bytes() == mine.read_bytes()

    replaced = cli(data_dir, "import", "--replace", str(theirs))
    assert replaced.returncode == 0, replaced.stderr
    assert "otherwise" not in replaced.stdout, replaced.stdout
    assert cli(data_dir, "export", str(now)).returncode == 0
    got = [json.loads(line) for line in now.read_text().splitlines()]
    assert next(m for m in got if m.get("id") == filled["ruff"]) == memory
    assert any(m["line"] == "source" and m["sha256"] == "0" * 64 for m in got)


def test_a_damaged_export_is_refused_naming_the_line_and_nothing_is_written(
    filled: dict[str, str], data_dir: Path, tmp_path: Path
) -> None:
    """A truncated export (cut mid-line, or whole lines lost), an unknown format version, a
    corrupt line and a supersede link on one of its memories only are each refused with one
    line naming the line; the target data dir gets no workspace at all."""
    file = tmp_path / "full.jsonl"
    assert cli(data_dir, "export", str(file)).returncode == 0
    lines = file.read_text().splitlines(keepends=True)
    header = json.loads(lines[0])
    # The oldest memory of the chain, named superseded by a memory the file does not hold.
    at = next(n for n, line in enumerate(lines) if f'"id":"{filled["chain0"]}"' in line)
    broken = lines[at].replace(f'"id":"{filled["chain1"]}"', '"id":"nope"')
    assert broken != lines[at]
    cases = {
        "cut": ("".join(lines)[:-40], f"line {len(lines)}: cut short"),
        "lost": ("".join(lines[:-2]), f"line {len(lines) - 1}: the file ends after"),
        "version": (
            json.dumps({**header, "version": 99}) + "\n" + "".join(lines[1:]),
            "line 1: format version 99 is not known",
        ),
        "corrupt": ("".join(lines[:3]) + '{"line": "memory"}\n' + "".join(lines[3:]), "line 4:"),
        "link": (
            "".join(lines[:at]) + broken + "".join(lines[at + 1 :]),
            f"line {at + 1}: superseded_by: 'nope'",
        ),
    }
    for name, (text, words) in cases.items():
        bad = tmp_path / f"{name}.jsonl"
        bad.write_text(text)
        target = tmp_path / f"into-{name}"
        refused = cli(target, "import", str(bad))
        assert refused.returncode == 2, (name, refused.stdout, refused.stderr)
        error = refused.stderr.strip().splitlines()
        assert len(error) == 1 and error[0].startswith("error: import: line "), (name, error)
        assert words in error[0], (name, error)
        assert not (target / "workspaces").exists() or not any((target / "workspaces").iterdir())


@pytest.fixture
def daemon(data_dir: Path) -> Iterator[Path]:
    """A real daemon owning the data dir (`start_daemon`), stopped after the test."""
    start_daemon(data_dir)
    try:
        yield data_dir
    finally:
        stop_daemon(data_dir)


def test_import_beside_a_daemon_is_written_by_the_daemon_with_progress(
    filled: dict[str, str], data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a daemon owning the target data dir, the import is sent to it (it keeps
    serving, nothing is refused): its progress counts up to every record of the file, what
    it wrote is searchable through it at once, the target exports back to the same bytes,
    `imprint import` a second time, beside it, writes nothing, and `replace` reaches it."""
    file = tmp_path / "full.jsonl"
    assert cli(data_dir, "export", str(file)).returncode == 0
    other = tmp_path / "other"
    monkeypatch.setenv("IMPRINT_DATA_DIR", str(other))  # what the daemon spawned reads
    start_daemon(other)
    try:
        totals: list[int] = []
        steps: list[int] = []
        done = ask_import(other, file, "", totals.append, steps.append)
        assert totals == [read_export(file).records] and sum(steps) == totals[0], (totals, steps)
        assert done.startswith("imported default: 5 memories (2 supersede links)"), done
        assert daemon_alive(other)
        found = cli(other, "search", "deploys Buildkite agents", "--mode", "lexical")
        assert found.returncode == 0 and filled["chain2"] in found.stdout, found.stdout
        assert cli(other, "export", str(tmp_path / "back.jsonl")).returncode == 0
        assert (tmp_path / "back.jsonl").read_bytes() == file.read_bytes()
        twice = cli(other, "import", str(file))
        assert twice.returncode == 0, twice.stderr
        assert " 0 written," in twice.stdout and daemon_alive(other), twice.stdout
        # A memory dated otherwise: left as it is, unless the caller asks for the file's.
        rows = [json.loads(line) for line in file.read_text().splitlines()]
        moved = next(m for m in rows if m["line"] == "memory")
        moved["created_at"] -= 60.0
        variant = tmp_path / "variant.jsonl"
        variant.write_text("".join(json.dumps(m) + "\n" for m in rows))
        left = ask_import(other, variant, "", totals.append, steps.append)
        assert "1 memories and 0 sources the store holds otherwise" in left, left
        taken = ask_import(other, variant, "", totals.append, steps.append, replace=True)
        assert " 1 written," in taken and "otherwise" not in taken, taken
    finally:
        stop_daemon(other)


def _generated_export(path: Path, count: int) -> None:
    """An export file of `count` generated memories (the last superseding the first; half
    with a topic longer than a caller's tag may be), in the bytes `imprint export` writes."""
    ids = [f"gen-{n:04d}" for n in range(count)]
    at = 1_700_000_500.0
    rows = [
        MemoryLine(
            workspace="default",
            id=rid,
            project="gen",
            content=f"Generated note {n}: the {n % 7}th service restarts after {n} retries.",
            type="note",
            # A topic as ingest derives them (any length, underscores), not as a caller may.
            tags=Tags(topics=("create_connected_server_and_client_session",) if n % 2 else ()),
            tagged_by="rules",
            created_at=1_700_000_000.0 + n,
            supersedes=(Link(id=ids[0], at=at),) if n == count - 1 else (),
            superseded_by=Link(id=ids[-1], at=at) if n == 0 else None,
        )
        for n, rid in enumerate(ids)
    ]
    counts = {"default": Counts(memories=count)}
    header = Header(format=FORMAT, version=FORMAT_VERSION, workspaces=counts)
    path.write_text("".join(line_text(line) for line in [header, *rows]))


def test_an_import_killed_midway_leaves_a_usable_store_and_a_rerun_completes_it(
    tmp_path: Path,
) -> None:
    """SIGKILL while an import is held after its first written batch leaves a target whose
    `status --check` is clean and that holds part of the file; a second import completes it,
    and the target then exports to exactly the file's bytes: nothing lost, nothing twice."""
    file = tmp_path / "gen.jsonl"
    _generated_export(file, 150)
    target = tmp_path / "target"
    env = {**os.environ, "IMPRINT_DATA_DIR": str(target), "IMPRINT_DELAY": "import.acked:300:1"}
    with subprocess.Popen(
        [sys.executable, "-m", "imprint.cli", "import", str(file)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            assert proc.stderr is not None
            for line in proc.stderr:  # the failpoint logs as it starts to hold
                if "fault.delay" in line and "import.acked" in line:
                    break
            else:
                pytest.fail(f"the import ended without reaching its failpoint: {proc.wait()}")
            proc.send_signal(signal.SIGKILL)
        finally:
            proc.kill()
            assert proc.wait(timeout=60) == -signal.SIGKILL

    checked = cli(target, "status", "--check")
    assert checked.returncode == 0, checked.stdout
    part = cli(target, "export", "-")
    held = len(part.stdout.splitlines()) - 1
    assert 0 < held < 150, held
    again = cli(target, "import", str(file))
    assert again.returncode == 0, again.stderr
    assert f"{150 - held + 1} written, {held} already there" in again.stdout, again.stdout
    assert cli(target, "export", "-").stdout.encode() == file.read_bytes()


def test_backup_beside_a_daemon_then_stop_and_restore_verifies(
    filled: dict[str, str], daemon: Path, tmp_path: Path
) -> None:
    """`imprint backup DIR` while a daemon serves is made by the daemon (which keeps
    serving), with a manifest of checksums; restore is refused while it runs; after
    `imprint stop`, a memory deleted since comes back with `imprint restore DIR`, which says
    it verified, and `imprint status --check` is clean. A damaged backup is refused whole."""
    folder = tmp_path / "snap"
    made = cli(daemon, "backup", str(folder))
    assert made.returncode == 0, made.stderr
    assert made.stdout.startswith("backed up 1 workspaces (default;"), made.stdout
    assert daemon_alive(daemon)
    manifest = json.loads((folder / "manifest.json").read_text())
    files = manifest["workspaces"]["default"]["files"]
    assert "imprint.sqlite3" in files and any(name.startswith("chroma/") for name in files)
    assert "config.toml" not in json.dumps(manifest)
    refused = cli(daemon, "restore", str(folder))
    assert refused.returncode == 2 and "run `imprint stop` first" in refused.stderr

    assert cli(daemon, "stop").returncode == 0
    rt = Runtime(daemon, Config(), reindex=False).start()
    try:
        delete_records(Writes(rt), id=filled["pg"])
    finally:
        rt.stop()
    restored = cli(daemon, "restore", str(folder))
    assert restored.returncode == 0, restored.stderr
    assert "default: restored" in restored.stdout and "verified" in restored.stdout
    checked = cli(daemon, "status", "--check")
    assert checked.returncode == 0, checked.stdout
    found = cli(daemon, "search", "job queue PostgreSQL", "--mode", "lexical")
    assert filled["pg"] in found.stdout

    damaged = tmp_path / "damaged"
    damaged.mkdir()
    subprocess.run(["cp", "-r", f"{folder}/.", str(damaged)], check=True)
    with (damaged / "workspaces" / "default" / "imprint.sqlite3").open("r+b") as handle:
        handle.seek(200)
        handle.write(b"\xff")
    bad = cli(daemon, "restore", str(damaged))
    assert bad.returncode == 2
    assert "imprint.sqlite3 differs from the manifest" in bad.stderr
    assert "nothing was restored" in bad.stderr


def test_a_backup_killed_midway_leaves_no_backup_and_a_rerun_completes(
    filled: dict[str, str], data_dir: Path, tmp_path: Path
) -> None:
    """SIGKILL between the SQLite copy and the vector copy leaves only `DIR.partial` (no
    DIR that looks whole) and a usable store; the next backup into DIR completes."""
    folder = tmp_path / "snap"
    killed = cli(data_dir, "backup", str(folder), env={"IMPRINT_FAILPOINT": "backup.copy"})
    assert killed.returncode == -9, killed.stderr
    assert not folder.exists() and (tmp_path / "snap.partial").is_dir()
    assert cli(data_dir, "status", "--check").returncode == 0
    again = cli(data_dir, "backup", str(folder))
    assert again.returncode == 0, again.stderr
    assert (folder / "manifest.json").is_file() and not (tmp_path / "snap.partial").exists()


def _wait_logged(data: Path, event: str, point: str, seconds: float = 120) -> None:
    """Until the data dir's log holds `event` at `point` (written by another process)."""
    path = data / "logs" / "imprint.jsonl"
    deadline = time.monotonic() + seconds
    while True:
        text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
        if any(f'"{event}"' in line and point in line for line in text.splitlines()):
            return
        assert time.monotonic() < deadline, f"no {event} at {point} within {seconds} s"
        time.sleep(0.05)  # polling another process's log file


def test_a_daemon_killed_mid_backup_leaves_a_usable_store_and_a_rerun_completes(
    filled: dict[str, str], data_dir: Path, tmp_path: Path
) -> None:
    """A daemon held between the SQLite copy and the vector copy of `imprint backup DIR`
    (IMPRINT_DELAY) and SIGKILLed there: the backup command fails in one line, no DIR is
    left that looks whole (only `DIR.partial`), the store checks clean and keeps every
    memory, and the next `imprint backup DIR` completes, verified, with a manifest that
    reads back."""
    env = {**os.environ, "IMPRINT_DATA_DIR": str(data_dir), "IMPRINT_DELAY": "backup.copy:120:1"}
    start_daemon(data_dir, env)
    pid = json.loads((data_dir / "run" / "daemon.json").read_text())["pid"]
    folder = tmp_path / "snap"
    backup = subprocess.Popen(
        [sys.executable, "-m", "imprint.cli", "backup", str(folder)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_logged(data_dir, "fault.delay", "backup.copy")
        assert (tmp_path / "snap.partial").is_dir() and not folder.exists()
        os.kill(pid, signal.SIGKILL)
        out, err = backup.communicate(timeout=120)
    finally:
        if backup.poll() is None:
            backup.kill()
            backup.wait()
    assert backup.returncode == 2 and not out, (out, err)
    assert len(err.strip().splitlines()) == 1 and err.startswith("error: "), err
    assert not daemon_alive(data_dir)
    assert not folder.exists() and (tmp_path / "snap.partial").is_dir()
    assert cli(data_dir, "status", "--check").returncode == 0
    found = cli(data_dir, "search", "job queue PostgreSQL", "--mode", "lexical")
    assert filled["pg"] in found.stdout, found.stdout
    again = cli(data_dir, "backup", str(folder))
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip().endswith("; verified"), again.stdout
    assert not (tmp_path / "snap.partial").exists()
    assert set(read_manifest(folder)["workspaces"]) == {"default"}
