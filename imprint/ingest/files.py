"""Which files ingest takes from a folder, and how one is read.

Inside a git work tree, what git takes (`imprint.ingest.git`: tracked plus untracked files
that are not ignored, asked of git with the folder's configuration inert). Elsewhere, or when
git cannot answer, a walk that honours the same ignore files (`.gitignore` in any folder,
`.git/info/exclude`), read here rather than by git and matched in time linear in each name
(`imprint.ingest.ignore`), the whole walk under WALK_TIMEOUT_SEC.

Nothing outside the allowed roots is read: every folder walked is resolved first (symlinks,
`..`, loops), and one whose real path leaves the roots is counted and skipped. A file is
opened with O_NOFOLLOW | O_NONBLOCK and read only if the opened descriptor is a regular
file, so a symlink or FIFO swapped in after the listing is refused rather than followed or
waited on.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from imprint._faults import hold
from imprint._fs import read_regular
from imprint.errors import InputError
from imprint.ingest.git import GitListing, git_listing
from imprint.ingest.ignore import IgnoreRules

__all__ = ["WALK_TIMEOUT_SEC", "Selection", "select_files", "walk", "within"]

SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox"}
IGNORE_FILE_MAX_BYTES = 1 << 20
# A walk past this is refused whole (nothing ingested or removed): a folder built to be
# endless (a million empty folders, rules that cost the most each name allows) must not
# hold an ingest, or the daemon it runs in, for good.
WALK_TIMEOUT_SEC = 300.0


class Selection(BaseModel):
    """The folder sources are relative to, the candidate files under it, how many folders
    were left out for leaving the roots, and git's view when the folder is in a work tree."""

    model_config = ConfigDict(frozen=True)

    root: Path
    files: tuple[str, ...]
    outside: int = 0
    git: GitListing | None = None


def within(path: Path, roots: Sequence[Path]) -> bool:
    """True when `path` (already resolved) is one of `roots` or under one."""
    return any(path == r or path.is_relative_to(r) for r in roots)


def _ignore_rules(file: Path) -> IgnoreRules | None:
    """The rules of one ignore file (.gitignore, .git/info/exclude), or None."""
    data = read_regular(file, IGNORE_FILE_MAX_BYTES)
    if not data:
        return None
    return IgnoreRules.from_lines(data.decode("utf-8", "replace").splitlines())


def _ignored(rel: str, chain: Sequence[tuple[str, IgnoreRules]]) -> bool:
    """Whether git would ignore `rel` (a folder ends in "/"): the deepest ignore file with a
    matching rule decides, as in git, and its last matching rule (a `!` re-includes)."""
    for base, rules in reversed(chain):
        result = rules.check(rel[len(base) + 1 :] if base else rel)
        if result is not None:
            return result
    return False


def _walk_files(
    folder: Path, roots: Sequence[Path] | None = None, deadline: float | None = None
) -> tuple[list[str], int]:
    """Files under `folder` that the ignore rules keep (following symlinked folders whose
    real path stays within `roots`, each real folder once), and how many folders were left
    out for leaving them.

    The rules honoured: `.git/info/exclude` and a `.gitignore` in any folder, deeper ones
    first (used outside a work tree, or when git cannot answer). Past `deadline` (a
    time.monotonic() instant; default WALK_TIMEOUT_SEC from now) it is refused."""
    roots = roots or [folder.resolve()]
    deadline = time.monotonic() + WALK_TIMEOUT_SEC if deadline is None else deadline
    top: list[tuple[str, IgnoreRules]] = []
    exclude = _ignore_rules(folder / ".git" / "info" / "exclude")
    if exclude is not None:
        top.append(("", exclude))
    chains: dict[str, list[tuple[str, IgnoreRules]]] = {"": top}
    found: list[str] = []
    outside = 0
    visited = {folder.resolve()}
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=True):
        hold("ingest.walk")  # a test's stand-in for a rule that held the interpreter lock
        if time.monotonic() > deadline:
            raise InputError(
                f"path: walking {str(folder)!r} took over {WALK_TIMEOUT_SEC:g} s "
                f"(at {len(found)} files); nothing was ingested or removed: ingest a smaller "
                "folder, or add its .gitignore rules to a git work tree (git lists it then)"
            )
        here = Path(dirpath).relative_to(folder).as_posix()
        here = "" if here == "." else here
        chain = chains.pop(here)
        if ".gitignore" in filenames:
            rules = _ignore_rules(Path(dirpath, ".gitignore"))
            chain = [*chain, (here, rules)] if rules is not None else chain
        kept = []
        for d in sorted(dirnames):
            rel = f"{here}/{d}" if here else d
            if d in SKIP_DIRS or d.startswith(".") or _ignored(rel + "/", chain):
                continue
            real = Path(dirpath, d).resolve()
            if not within(real, roots):
                outside += 1
            elif real not in visited:  # a loop, or a second link to a folder already walked
                visited.add(real)
                kept.append(d)
                chains[rel] = chain
        dirnames[:] = kept
        for name in filenames:
            rel = f"{here}/{name}" if here else name
            if not _ignored(rel, chain):
                found.append(rel)
    return sorted(found), outside


def walk(path: Path, roots: Sequence[Path] | None = None) -> tuple[Path, list[str], int]:
    """The folder sources are relative to, the candidate files under it, and how many
    folders were left out for leaving `roots`."""
    chosen = select_files(path, roots)
    return chosen.root, list(chosen.files), chosen.outside


def select_files(
    path: Path, roots: Sequence[Path] | None = None, deadline: float | None = None
) -> Selection:
    """The files ingest takes under `path` (a file: itself): git's choice inside a work
    tree, else the walk's (under `deadline`, see `_walk_files`)."""
    if not path.exists():
        raise InputError(f"path: {str(path)!r} does not exist")
    if not os.access(path, os.R_OK):
        raise InputError(f"path: {str(path)!r} is not readable")
    if path.is_file():
        return Selection(root=path.parent, files=(path.name,))
    if not path.is_dir():
        raise InputError(f"path: {str(path)!r} is neither a file nor a folder")
    listing = git_listing(path)
    if listing is not None:
        return Selection(root=path, files=listing.files, git=listing)
    found, outside = _walk_files(path, roots, deadline)
    return Selection(root=path, files=tuple(found), outside=outside)
