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
from imprint.daemon import daemon_alive, stop_daemon
from imprint.ingest.pipeline import ingest_path
from imprint.reads.facts import KgQueryArgs, fact_rows
from imprint.reads.gateway import ActorReads
from imprint.reads.search import SearchArgs, search_text
from imprint.store.embedder import Embedder
from imprint.tools.kg_query import format_facts
from imprint.writes import Writes
from imprint.writes.backup import read_manifest
from imprint.writes.content import ingest_text
from imprint.writes.facts import edit_facts
from imprint.writes.memories import delete_records, store_memory

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

QUERIES = [
    "how does an actor stop",
    "tomatoes sun watering",
    "purple kangaroo protocol",
    "retry with exponential backoff",
    "release checklist",
    "job queue decision",
]


def cli(
    data: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "imprint.cli", *args],
        env={**os.environ, "IMPRINT_DATA_DIR": str(data), **(env or {})},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def _runtime(data: Path, embedder: Embedder) -> Runtime:
    return Runtime(data, Config(), embedder=embedder, reindex=False).start()


@pytest.fixture
def filled(data_dir: Path, small_tree: Path, embedder: Embedder) -> dict[str, str]:
    """A data dir holding an ingested tree, inline content, memories and facts (one
    ended); the memories' ids by name."""
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
        edit_facts(writes, "add", "job queue", "runs on", "PostgreSQL", source="adr-7")
        edit_facts(writes, "add", "linter", "is", "ruff")
        ended = edit_facts(writes, "add", "linter", "is", "flake8")
        edit_facts(writes, "end", fact_id=ended.split()[1].removeprefix("fact:"))
    finally:
        rt.stop()
    return ids


def _answers(data: Path, embedder: Embedder) -> list[str]:
    """What search (each mode) and kg_query answer in the active workspace."""
    rt = _runtime(data, embedder)
    try:
        reads = ActorReads(rt)
        out = [
            search_text(reads, SearchArgs(query=q, mode=mode))
            for q in QUERIES
            for mode in ("hybrid", "semantic", "lexical")
        ]
        ws = reads.open("")
        for args in (KgQueryArgs(), KgQueryArgs(include_ended=True), KgQueryArgs(subject="linter")):
            out.append(format_facts(fact_rows(reads, ws, args)))
        return out
    finally:
        rt.stop()


def test_export_import_round_trip_gives_the_same_answers(
    filled: dict[str, str], data_dir: Path, tmp_path: Path, embedder: Embedder
) -> None:
    """Two exports of one store are byte-identical; imported into an empty data dir, the
    export gives the same search output (every mode) and kg_query output, and exports back
    to the same bytes; a second import writes nothing and changes nothing."""
    first, second = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    for file in (first, second):
        done = cli(data_dir, "export", str(file))
        assert done.returncode == 0, done.stderr
    assert first.read_bytes() == second.read_bytes()
    header = json.loads(first.read_text().splitlines()[0])
    assert header["version"] == 1
    assert header["workspaces"]["default"] == {
        "memories": 2,
        "sources": 6,
        "chunks": header["workspaces"]["default"]["chunks"],
        "facts": 3,
    }
    assert header["workspaces"]["default"]["chunks"] >= 6
    stdout = cli(data_dir, "export", "-")
    assert stdout.returncode == 0 and stdout.stdout.encode() == first.read_bytes()

    other = tmp_path / "other"
    imported = cli(other, "import", str(first))
    assert imported.returncode == 0, imported.stderr
    assert "already there" in imported.stdout
    again = cli(other, "export", str(tmp_path / "back.jsonl"))
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "back.jsonl").read_bytes() == first.read_bytes()
    assert _answers(other, embedder) == _answers(data_dir, embedder)

    twice = cli(other, "import", str(first))
    assert twice.returncode == 0, twice.stderr
    assert " 0 written," in twice.stdout, twice.stdout
    cli(other, "export", str(tmp_path / "after.jsonl"))
    assert (tmp_path / "after.jsonl").read_bytes() == first.read_bytes()
    checked = cli(other, "status", "--check")
    assert checked.returncode == 0, checked.stdout


def test_a_damaged_export_is_refused_naming_the_line_and_nothing_is_written(
    filled: dict[str, str], data_dir: Path, tmp_path: Path
) -> None:
    """A truncated export (cut mid-line, or whole lines lost), an unknown format version and
    a corrupt line are each refused with one line naming the line; the target data dir
    gets no workspace at all."""
    file = tmp_path / "full.jsonl"
    assert cli(data_dir, "export", str(file)).returncode == 0
    lines = file.read_text().splitlines(keepends=True)
    header = json.loads(lines[0])
    cases = {
        "cut": ("".join(lines)[:-40], f"line {len(lines)}: cut short"),
        "lost": ("".join(lines[:-2]), f"line {len(lines) - 1}: the file ends after"),
        "version": (
            json.dumps({**header, "version": 99}) + "\n" + "".join(lines[1:]),
            "line 1: format version 99 is not known",
        ),
        "corrupt": ("".join(lines[:3]) + '{"line": "memory"}\n' + "".join(lines[3:]), "line 4:"),
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


def start_daemon(data: Path, env: dict[str, str] | None = None) -> None:
    """Start a daemon owning `data` as `imprint serve` starts it (by a short-lived process
    of its own, which returns once the daemon answers), with `env` added to its environment."""
    started = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, pathlib; from imprint.daemon import connect; "
            "connect(pathlib.Path(sys.argv[1])).close()",
            str(data),
        ],
        env={**os.environ, "IMPRINT_DATA_DIR": str(data), **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert started.returncode == 0, started.stderr


@pytest.fixture
def daemon(data_dir: Path) -> Iterator[Path]:
    """A real daemon process owning the data dir, started as `imprint serve` starts it (by
    a short-lived process of its own, which returns once the daemon answers)."""
    start_daemon(data_dir)
    try:
        yield data_dir
    finally:
        stop_daemon(data_dir)


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
