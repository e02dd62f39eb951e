"""git-aware ingest (issue 31 item 3): inside a work tree ingest takes what git takes,
records the commit each file was indexed at, prunes what became ignored, and runs git with
the folder's own configuration inert."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from imprint.actors.lifecycle import Runtime
from imprint.ingest.git import blob_sha, git_command, git_listing
from imprint.writes.files import ingest_path
from tests.support.git_ingest import _git
from tests.support.hardening import call, lexical


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A work tree: a committed file, a committed file in a hidden folder, an untracked
    file, an ignored file and an ignored folder."""
    tree = tmp_path / "proj"
    (tree / ".config").mkdir(parents=True)
    (tree / "build").mkdir()
    _git(tree, "init", "-q")
    (tree / ".gitignore").write_text("build/\n*.tmp.md\n")
    (tree / "kept.md").write_text("# Kept\n\ncobaltheron committed text\n")
    (tree / ".config" / "notes.md").write_text("# Notes\n\ncobaltheron hidden but tracked\n")
    _git(tree, "add", "-A")
    _git(tree, "commit", "-q", "-m", "one")
    (tree / "draft.md").write_text("# Draft\n\ncobaltheron untracked text\n")
    (tree / "scratch.tmp.md").write_text("# Scratch\n\ncobaltheron ignored text\n")
    (tree / "build" / "out.md").write_text("# Out\n\ncobaltheron ignored folder\n")
    return tree


def test_takes_what_git_takes_and_prunes_what_became_ignored(rt: Runtime, repo: Path) -> None:
    """Tracked files (a hidden folder's too) and untracked ones that are not ignored are
    ingested, ignored ones are not; a file that becomes ignored is removed on the next
    ingest."""
    ingest_path(rt, repo)
    assert sorted(lexical(rt, "cobaltheron")) == [".config/notes.md", "draft.md", "kept.md"]
    (repo / ".gitignore").write_text("build/\n*.tmp.md\ndraft.md\n")
    report = ingest_path(rt, repo)
    assert report.removed == 1
    assert sorted(lexical(rt, "cobaltheron")) == [".config/notes.md", "kept.md"]


def test_file_summary_shows_the_commit_and_whether_the_copy_differs(
    rt: Runtime, repo: Path
) -> None:
    """file_summary names the commit a file was indexed at and says whether the text
    indexed is the commit's; an uncommitted edit, once indexed, is said to differ; an
    untracked file is said to be untracked."""
    head = _git(repo, "rev-parse", "HEAD")
    ingest_path(rt, repo)
    is_error, text = call(rt, repo, "file_summary", {"source": "kept.md"})
    assert not is_error, text
    assert f"git: commit {head[:12]}; indexed text is the commit's; working copy as indexed" in text
    _, untracked = call(rt, repo, "file_summary", {"source": "draft.md"})
    assert "untracked at that commit" in untracked
    (repo / "kept.md").write_text("# Kept\n\ncobaltheron edited, not committed\n")
    ingest_path(rt, repo)
    _, edited = call(rt, repo, "file_summary", {"source": "kept.md"})
    assert "indexed text differs from the commit (uncommitted changes)" in edited
    _git(repo, "commit", "-q", "-am", "two")
    ingest_path(rt, repo)  # nothing to read again: only the recorded commit moves
    _, committed = call(rt, repo, "file_summary", {"source": "kept.md"})
    new_head = _git(repo, "rev-parse", "HEAD")
    assert f"commit {new_head[:12]}; indexed text is the commit's" in committed
    assert sorted(lexical(rt, "cobaltheron")) == [".config/notes.md", "draft.md", "kept.md"]


def test_a_repositorys_fsmonitor_runs_when_git_is_asked_plainly_but_not_by_ingest(
    tmp_path: Path, repo: Path
) -> None:
    """A `core.fsmonitor` command in the folder's .git/config writes a marker when plain
    `git ls-files` runs there (the danger is real), and never when ingest lists the folder
    (the listing is still git's: untracked and hidden tracked files, no ignored ones)."""
    marker = tmp_path / "fsmonitor-ran"
    with (repo / ".git" / "config").open("a") as config:
        config.write(f"[core]\n\tfsmonitor = touch {marker}; echo\n\tpager = touch {marker}\n")
    listing = git_listing(repo)
    assert listing is not None
    assert not marker.exists()
    assert sorted(listing.files) == [".config/notes.md", ".gitignore", "draft.md", "kept.md"]
    assert listing.blobs["kept.md"] == blob_sha((repo / "kept.md").read_bytes())
    assert "core.fsmonitor=false" in git_command(repo, "ls-files")
    subprocess.run(["git", "-C", str(repo), "ls-files"], capture_output=True, check=False)
    assert marker.exists()  # the same listing asked plainly runs the folder's program


def test_outside_a_work_tree_the_walk_keeps_its_rules(rt: Runtime, tmp_path: Path) -> None:
    """A folder in no work tree is walked as before: its .gitignore holds and hidden
    folders are skipped; nothing records a commit."""
    tree = tmp_path / "plain"
    (tree / ".hidden").mkdir(parents=True)
    (tree / ".gitignore").write_text("skip.md\n")
    (tree / "a.md").write_text("# A\n\nmauvefinch text\n")
    (tree / "skip.md").write_text("# S\n\nmauvefinch skipped\n")
    (tree / ".hidden" / "h.md").write_text("# H\n\nmauvefinch hidden\n")
    assert git_listing(tree) is None
    ingest_path(rt, tree)
    assert lexical(rt, "mauvefinch") == ["a.md"]
    _, text = call(rt, tree, "file_summary", {"source": "a.md"})
    assert "git:" not in text


def test_a_folder_its_work_tree_ignores_is_walked(rt: Runtime, tmp_path: Path) -> None:
    """A folder inside a work tree that ignores it (a home folder under a dotfiles
    repository ignoring `*`) is walked with its own rules rather than taken as empty."""
    home = tmp_path / "home"
    notes = home / "notes"
    notes.mkdir(parents=True)
    _git(home, "init", "-q")
    (home / ".gitignore").write_text("*\n")
    (notes / "n.md").write_text("# N\n\nrustylark note\n")
    assert git_listing(notes) is None
    ingest_path(rt, notes)
    assert lexical(rt, "rustylark") == ["n.md"]
