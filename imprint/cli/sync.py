"""`imprint sync DIR`: this machine's changes into a shared folder, the other machines'
from it (`imprint.writes.sync`). Beside a running daemon, the daemon's writers do it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from imprint.cli._app import WorkspaceOpt, setup
from imprint.errors import InputError

__all__ = ["sync"]


def sync(
    folder: Annotated[
        Path, typer.Argument(metavar="DIR", help="the folder a sync tool or git repository shares")
    ],
    workspace: WorkspaceOpt = "",
    all_: Annotated[bool, typer.Option("--all", help="every workspace, not only one")] = False,
) -> None:
    """Write this machine's memories, facts, sources, supersede links and deletions since
    its last sync into DIR (a file of its own per sync), and take the other machines'."""
    from imprint.daemon import ask_sync, daemon_alive

    root, config = setup()
    if all_ and workspace:
        raise InputError("--all, --workspace: give one of them")
    target = folder.expanduser().resolve()
    if not target.is_dir():
        raise InputError(
            f"DIR: {str(target)!r} is not a folder; give the folder a sync tool or git "
            "repository shares (make it first)"
        )
    if daemon_alive(root):
        typer.echo(ask_sync(root, str(target), workspace, all_))
        return
    from imprint.actors.lifecycle import running
    from imprint.writes import Writes
    from imprint.writes.sync import sync_folder

    with running(root, config, reindex=False) as runtime:
        typer.echo(sync_folder(Writes(runtime), target, workspace, all_))
