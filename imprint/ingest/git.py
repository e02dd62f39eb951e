"""What git takes in a work tree, asked of git with the folder's own configuration inert.

Inside a git work tree ingest takes what git would: tracked files plus untracked ones that
are not ignored (`git ls-files --cached --others --exclude-standard`), and records the
commit each file was indexed at and the blob that commit holds for it.

A folder's `.git/config` is not ours: several keys run programs (`core.fsmonitor` on every
`ls-files`, hooks, pagers), and `include.path` pulls in more. So every command runs with no
system or global configuration, the keys that run programs overridden on the command line
(the command line wins over every file, included ones too), no prompt, no optional locks
(nothing writes the index), a scrubbed environment (no GIT_DIR or GIT_WORK_TREE from the
caller) and a timeout. Nothing here runs a command that would apply filters (`status`,
`diff`): whether a working copy differs from its commit is judged by hashing the file as git
hashes a blob. When the folder itself is ignored, git is missing, refuses the folder
(another user's, "dubious ownership"), fails or is too slow, the caller walks the folder
with its own ignore rules.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from imprint.logs import get_logger

__all__ = ["GIT_TIMEOUT_SEC", "GitListing", "blob_sha", "git_command", "git_listing"]

log = get_logger("imprint.ingest.git")

GIT_TIMEOUT_SEC = 20.0
# Keys that make git run a program, overridden whatever the folder's configuration says.
INERT = (
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.pager=cat",
    "-c",
    "core.untrackedCache=false",
)


class GitListing(BaseModel):
    """The files git takes under a folder (relative to it), the commit checked out ("" in a
    repository with none yet) and the blob that commit holds for each tracked file."""

    model_config = ConfigDict(frozen=True)

    files: tuple[str, ...]
    commit: str
    blobs: dict[str, str]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL="/dev/null",
        GIT_TERMINAL_PROMPT="0",
        GIT_OPTIONAL_LOCKS="0",
        GIT_PAGER="cat",
        PAGER="cat",
        LC_ALL="C",
    )
    return env


def git_command(folder: Path, *args: str) -> list[str]:
    """The argument list that runs `git args` in `folder` with its configuration inert."""
    return ["git", "-C", str(folder), *INERT, *args]


def _git(folder: Path, *args: str, timeout: float) -> bytes | None:
    """stdout of one git command, or None when it failed, timed out or git is missing."""
    try:
        done = subprocess.run(
            git_command(folder, *args),
            env=_env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.info("ingest.git.unavailable", folder=str(folder), error=type(exc).__name__)
        return None
    if done.returncode != 0:
        return None
    return done.stdout


def git_listing(folder: Path, timeout: float = GIT_TIMEOUT_SEC) -> GitListing | None:
    """What git takes under `folder`, or None when it is not inside a work tree git will
    read (or git failed: the caller falls back to its own walk)."""
    inside = _git(folder, "rev-parse", "--is-inside-work-tree", timeout=timeout)
    if inside is None or inside.strip() != b"true":
        return None
    if _git(folder, "check-ignore", "-q", ".", timeout=timeout) is not None:
        # The folder itself is ignored (a home directory under a dotfiles repository that
        # ignores `*`): git would take nothing, yet the folder was named; walk it.
        return None
    listed = _git(
        folder, "ls-files", "-z", "--cached", "--others", "--exclude-standard", timeout=timeout
    )
    if listed is None:
        return None
    files = sorted({p.decode("utf-8", "surrogateescape") for p in listed.split(b"\0") if p})
    head = _git(folder, "rev-parse", "--verify", "-q", "HEAD", timeout=timeout)
    commit = head.decode().strip() if head else ""
    blobs: dict[str, str] = {}
    if commit:
        tree = _git(folder, "ls-tree", "-r", "-z", "HEAD", "--", ".", timeout=timeout)
        for entry in (tree or b"").split(b"\0"):
            meta, _, name = entry.partition(b"\t")
            fields = meta.split()
            if len(fields) == 3 and fields[1] == b"blob":
                blobs[name.decode("utf-8", "surrogateescape")] = fields[2].decode()
    return GitListing(files=tuple(files), commit=commit, blobs=blobs)


def blob_sha(data: bytes) -> str:
    """The id git gives `data` as a blob (SHA-1 of "blob <size>\\0" and the bytes), so a
    working copy is compared with its commit without running git (nor its filters)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()
