"""Watched folders (issue 31 item 2): the daemon's watchers debounce file events into
batches, index what changed, remove what was deleted or became ignored, persist the folders
and rescan on start; `imprint watch` refuses what cannot be watched."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from imprint.actors.lifecycle import Runtime
from imprint.errors import InputError
from imprint.watch import FolderWatcher, WatchHost, format_watch, load_folders
from imprint.watch.watcher import moves_head
from tests.support.dashboard import Dash
from tests.support.git_ingest import _git
from tests.support.hardening import call, lexical

WAIT_SEC = 120.0


@pytest.fixture
def host(rt: Runtime) -> Iterator[WatchHost]:
    watches = WatchHost(rt.data_dir, lambda _t: rt, quiet_sec=0.1, max_wait_sec=2.0).start()
    try:
        yield watches
    finally:
        watches.stop()


def _tree(tmp_path: Path) -> Path:
    tree = tmp_path / "watched"
    tree.mkdir()
    (tree / ".gitignore").write_text("*.log.md\n")
    (tree / "a.md").write_text("# A\n\nopalwren first text\n")
    return tree


def _watch(host: WatchHost, tree: Path) -> FolderWatcher:
    host.add(str(tree))
    watcher = host.watcher(str(tree.resolve()))
    assert watcher is not None
    assert watcher.wait(lambda w: w.batches >= 1, WAIT_SEC)  # the first rescan
    return watcher


def _until(rt: Runtime, watcher: FolderWatcher, word: str, sources: list[str]) -> None:
    """Wait (batch by batch) until a lexical search for `word` finds exactly `sources`."""
    assert watcher.wait(lambda w: sorted(lexical(rt, word)) == sources, WAIT_SEC), lexical(rt, word)


def test_edits_additions_deletions_and_ignored_files(
    rt: Runtime, host: WatchHost, tmp_path: Path
) -> None:
    """A watched folder's new file becomes searchable, an edit replaces the old text, a
    deleted file is removed, and a file its .gitignore names is never indexed."""
    tree = _tree(tmp_path)
    watcher = _watch(host, tree)
    assert lexical(rt, "opalwren") == ["a.md"]
    (tree / "b.md").write_text("# B\n\nopalwren second text\n")
    (tree / "noise.log.md").write_text("# Log\n\nopalwren ignored text\n")
    _until(rt, watcher, "opalwren", ["a.md", "b.md"])
    (tree / "a.md").write_text("# A\n\nsilverlynx replaced text\n")
    _until(rt, watcher, "silverlynx", ["a.md"])
    (tree / "b.md").unlink()
    _until(rt, watcher, "opalwren", [])
    row = watcher.row()
    assert row.pending == 0 and row.last_indexed_at > 0
    (line,) = format_watch(host.rows())
    assert f"watch {tree.resolve()} (project watched)" in line
    assert "0 changed files not yet indexed" in line


def test_folders_persist_and_a_restart_rescans_what_changed(
    rt: Runtime, host: WatchHost, tmp_path: Path
) -> None:
    """The watched folders survive the host's stop (persisted 0600); a new host watches
    them again and its first batch indexes what changed while none watched."""
    tree = _tree(tmp_path)
    _watch(host, tree)
    host.stop()
    assert [f.path for f in load_folders(rt.data_dir)] == [str(tree.resolve())]
    assert (rt.data_dir / "watch.json").stat().st_mode & 0o777 == 0o600
    (tree / "a.md").unlink()
    (tree / "c.md").write_text("# C\n\ncopperhawk written while down\n")
    again = WatchHost(rt.data_dir, lambda _t: rt, quiet_sec=0.1).start()
    try:
        watcher = again.watcher(str(tree.resolve()))
        assert watcher is not None
        assert watcher.wait(lambda w: w.batches >= 1, WAIT_SEC)
        assert lexical(rt, "copperhawk") == ["c.md"]
        assert lexical(rt, "opalwren") == []
        again.remove(str(tree))
        assert load_folders(rt.data_dir) == []
    finally:
        again.stop()


def test_a_commit_that_changes_no_file_moves_the_recorded_commit(
    rt: Runtime, host: WatchHost, tmp_path: Path
) -> None:
    """A watched work tree: a commit of files already indexed (no working file changes,
    so no file event) starts a batch from the new HEAD alone, and file_summary then names
    the new commit; the batch counts no file as pending."""
    tree = _tree(tmp_path)
    _git(tree, "init", "-q")
    _git(tree, "add", "-A")
    _git(tree, "commit", "-q", "-m", "one")
    watcher = _watch(host, tree)
    first = _git(tree, "rev-parse", "HEAD")
    _, text = call(rt, tree, "file_summary", {"source": "a.md"})
    assert f"git: commit {first[:12]}; indexed text is the commit's" in text, text
    batches = watcher.batches
    _git(tree, "commit", "-q", "--allow-empty", "-m", "two")
    second = _git(tree, "rev-parse", "HEAD")

    def moved(w: FolderWatcher) -> bool:
        _, shown = call(rt, tree, "file_summary", {"source": "a.md"})
        return f"git: commit {second[:12]}" in shown

    assert watcher.wait(moved, WAIT_SEC)
    assert watcher.batches > batches
    assert "a new HEAD" in watcher.row().last_batch
    assert watcher.row().pending == 0


def test_only_what_moves_head_inside_git_starts_a_batch() -> None:
    """HEAD, a branch ref and the packed refs move on a commit, checkout or reset; the
    index, the reflogs, objects, lock files and a file named HEAD elsewhere do not count."""
    assert moves_head("/r/.git/HEAD") and moves_head("/r/.git/packed-refs")
    assert moves_head("/r/.git/refs/heads/main") and moves_head("/r/.git/refs/heads/feat/x")
    for quiet in (
        "/r/.git/index",
        "/r/.git/logs/HEAD",
        "/r/.git/refs/heads/main.lock",
        "/r/.git/objects/ab/cdef",
        "/r/.git/refs/heads",
        "/r/src/HEAD",
    ):
        assert not moves_head(quiet), quiet


def _writes(rt: Runtime) -> int:
    """How many writes the workspaces' journals have taken so far."""
    total = 0
    for file in rt.data_dir.rglob("imprint.sqlite3"):
        with sqlite3.connect(f"file:{file}?mode=ro", uri=True) as db:
            row = db.execute("SELECT seq FROM sqlite_sequence WHERE name='journal'").fetchone()
            total += row[0] if row else 0
    return total


def test_a_burst_is_a_few_writes_not_one_per_file(
    rt: Runtime, host: WatchHost, tmp_path: Path
) -> None:
    """400 files written at once are indexed in a few grouped writes (well under one per
    file), and every one is searchable after."""
    tree = _tree(tmp_path)
    watcher = _watch(host, tree)
    before = _writes(rt)
    for i in range(400):
        (tree / f"f{i:03}.md").write_text(f"# F{i}\n\namberfox burst file {i}\n")
    assert watcher.wait(lambda w: len(lexical(rt, "f399")) == 1, WAIT_SEC)
    assert watcher.wait(lambda w: w.row().pending == 0, WAIT_SEC)
    assert 0 < _writes(rt) - before <= 40


def test_bad_requests_change_nothing(host: WatchHost, rt: Runtime, tmp_path: Path) -> None:
    """A relative path, a file, a missing folder, a bad project name, an unknown op and a
    folder not watched are each refused with a line naming the argument; nothing is kept."""
    file = tmp_path / "f.md"
    file.write_text("x")
    cases = [
        ({"op": "add", "path": "rel/dir"}, "path: 'rel/dir' must be absolute"),
        ({"op": "add", "path": str(file)}, "is not a folder"),
        ({"op": "add", "path": str(tmp_path / "nope")}, "is not a folder"),
        ({"op": "add", "path": str(tmp_path), "project": "-bad"}, "project: '-bad'"),
        ({"op": "rename"}, "op: 'rename' is not allowed; add, list or stop"),
        ({"op": "stop", "path": str(tmp_path)}, "is not watched; watched: none"),
    ]
    for request, words in cases:
        with pytest.raises(InputError, match=words.replace("(", r"\(")):
            host.answer(request)
    assert host.answer({"op": "list"}) == {"rows": []}
    assert load_folders(rt.data_dir) == []


def test_a_file_deleted_during_its_reingest_leaves_no_record(
    rt: Runtime, host: WatchHost, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file deleted after it was read and embedded but before its write is not written:
    neither its new text nor its old one stays searchable."""
    import imprint.writes.files as pipeline

    tree = _tree(tmp_path)
    watcher = _watch(host, tree)
    real = pipeline.delay

    def delete_then(name: str) -> None:  # the failpoint between embedding and the write
        if name == "ingest.file.embedded" and (tree / "a.md").exists():
            (tree / "a.md").unlink()
        real(name)

    monkeypatch.setattr(pipeline, "delay", delete_then)
    (tree / "a.md").write_text("# A\n\ntealmoth new text\n")
    _until(rt, watcher, "opalwren", [])
    assert lexical(rt, "tealmoth") == []


def test_the_dashboard_and_the_status_tool_show_each_watched_folder(
    dash: Dash,
    tmp_path: Path,
) -> None:
    """The overview lists a watched folder with its state, files not yet indexed and last
    indexed change; the status tool's text has its line."""
    tree = _tree(tmp_path)
    watches = WatchHost(dash.runtime.data_dir, lambda _t: dash.runtime, quiet_sec=0.1).start()
    try:
        _watch(watches, tree)
        dash.sign_in()
        html = dash.client.get("/").text
        assert "<h2>watched folders</h2>" in html
        assert f"<tr><td>{tree.resolve()}</td><td>watched</td><td>watching</td><td>0</td>" in html
        is_error, text = call(dash.runtime, tree, "status", {})
        assert not is_error, text
        assert f"watch {tree.resolve()} (project watched): watching; 0 changed files" in text
    finally:
        watches.stop()
    assert "watched folders" not in dash.client.get("/").text


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ([], "watch: give exactly one of PATH, --list or --stop PATH"),
        (["--list", "--stop", "x"], "watch: give exactly one of PATH, --list or --stop PATH"),
        (["--list", "--project", "p"], "--project: only with PATH"),
        (["no/such/folder"], "path: 'no/such/folder' is not a folder"),
    ],
)
def test_the_command_refuses_bad_arguments_in_one_line(
    tmp_path: Path, args: list[str], words: str
) -> None:
    """`imprint watch` with no choice, two choices, --project without PATH or a missing
    folder exits 2 with one line naming the argument, and starts no daemon."""
    import os
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "imprint.cli", "watch", *args],
        env={**os.environ, "IMPRINT_DATA_DIR": str(tmp_path / "data")},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"error: {words}\n"
    assert not (tmp_path / "data" / "run" / "daemon.json").exists()


def test_status_without_a_daemon_lists_the_persisted_folders(tmp_path: Path) -> None:
    """`imprint status` with no daemon running names each persisted folder as not watched
    now (a daemon started again watches it)."""
    from imprint.watch import WatchedFolder, save_folders
    from tests.support.archive import cli

    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    save_folders(data, [WatchedFolder(path=str(tmp_path))])
    done = cli(data, "status")
    assert done.returncode == 0, done.stderr
    assert f"  watch {tmp_path}: not watched now (no daemon runs;" in done.stdout
