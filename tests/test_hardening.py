"""Attacks from the local review (issues 10 and 18) replayed against the store and the tools.

Each test replays one finding, bounded in size and time, on this machine only.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client

from imprint.actors.lifecycle import Runtime
from imprint.config import Config
from imprint.ingest.pipeline import ingest_path
from imprint.server import build_server
from imprint.store.embedder import Embedder
from imprint.tools._reads import ActorReads
from imprint.tools.search import search_rows
from imprint.tools.status import status_row

HANG_LIMIT_SEC = 30.0


@pytest.fixture
def rt(data_dir: Path, embedder: Embedder) -> Iterator[Runtime]:
    """An embedded-store runtime with the default configuration."""
    runtime = Runtime(data_dir, Config(), embedder=embedder).start()
    try:
        yield runtime
    finally:
        runtime.stop()


def call(runtime: Runtime, cwd: Path, tool: str, args: dict[str, Any]) -> tuple[bool, str]:
    """One tool call through an in-memory MCP client: (is_error, text)."""

    async def go() -> tuple[bool, str]:
        async with Client(build_server(runtime, cwd)) as client:
            result = await client.call_tool(tool, args)
            return bool(result.is_error), getattr(result.content[0], "text", "")

    return anyio.run(go)


def lexical(runtime: Runtime, word: str) -> list[str]:
    return [h.record.source for h in search_rows(ActorReads(runtime), word, mode="lexical").hits]


# --- issue 10 point 1: symlinks escape the allowed roots ------------------------------------


@pytest.fixture
def linked_tree(tmp_path: Path) -> Path:
    """An allowed folder holding links out (a file, a folder), a link loop and a link in."""
    outside = tmp_path / "outside"
    (outside / "keys").mkdir(parents=True)
    (outside / "id_rsa.md").write_text("# Key\n\nsapphirekeymaterial lives here.\n")
    (outside / "keys" / "deploy.md").write_text("# Deploy\n\nobsidiantokenvalue here.\n")
    tree = tmp_path / "allowed" / "proj"
    tree.mkdir(parents=True)
    (tree / "real.md").write_text("# Real\n\nturquoisenotebook content.\n")
    (tree / "notes.md").symlink_to(outside / "id_rsa.md")
    (tree / "stash").symlink_to(outside / "keys", target_is_directory=True)
    (tree / "loop").symlink_to(tree, target_is_directory=True)
    (tree / "alias.md").symlink_to(tree / "real.md")
    return tree


def test_symlinks_out_of_the_roots_are_counted_and_never_read(
    rt: Runtime, linked_tree: Path
) -> None:
    """A file link and a folder link leading out of the roots are skipped and counted; a
    link loop ends; a link that stays inside is ingested."""
    report = ingest_path(rt, linked_tree, project="proj", roots=[linked_tree])
    assert report.outside == 2, report.summary()
    assert "2 outside the allowed roots" in report.summary()
    assert lexical(rt, "sapphirekeymaterial") == []
    assert lexical(rt, "obsidiantokenvalue") == []
    assert sorted(lexical(rt, "turquoisenotebook")) == ["alias.md", "real.md"]


def test_ingest_path_tool_does_not_follow_links_out_of_the_roots(
    rt: Runtime, linked_tree: Path
) -> None:
    """Through MCP (roots = the server's working directory) the same links stay unread."""
    is_error, text = call(rt, linked_tree.parent, "ingest_path", {"path": "proj"})
    assert not is_error, text
    assert lexical(rt, "sapphirekeymaterial") == []
    assert lexical(rt, "obsidiantokenvalue") == []
    assert "2 outside the allowed roots" in text
    assert lexical(rt, "turquoisenotebook")


# --- issue 18 point 7: a file swapped for a FIFO --------------------------------------------


def test_file_swapped_for_a_fifo_is_skipped(rt: Runtime, tmp_path: Path) -> None:
    """A file replaced by a FIFO between listing and reading is skipped; ingest ends."""
    tree = tmp_path / "fifo"
    tree.mkdir()
    (tree / "a.md").write_text("# A\n\ncobaltfirstfile text.\n")
    (tree / "b.md").write_text("# B\n\nsoon a fifo.\n")
    target = tree / "b.md"

    def swap(done: int, total: int, source: str) -> None:
        if source == "b.md":
            target.unlink()
            os.mkfifo(target)

    result: list[Any] = []
    worker = threading.Thread(
        target=lambda: result.append(ingest_path(rt, tree, project="fifo", progress=swap)),
        daemon=True,
    )
    worker.start()
    worker.join(HANG_LIMIT_SEC)
    hung = worker.is_alive()
    if hung:
        # Release the blocked reader so the thread ends: a writer opens and closes the FIFO.
        os.close(os.open(target, os.O_WRONLY))
        worker.join(HANG_LIMIT_SEC)
    assert not hung, "ingest blocked on the FIFO"
    report = result[0]
    assert (report.files, report.skipped) == (1, 1)
    assert lexical(rt, "cobaltfirstfile") == ["a.md"]
    assert status_row(rt).consistent
