"""`imprint watch`: register a folder with the data dir's daemon (started if none runs),
which keeps it indexed as it changes; `--list` and `--stop PATH`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from imprint.cli._app import WorkspaceOpt, setup
from imprint.errors import ImprintError

__all__ = ["watch", "watch_lines"]


def watch_lines(root: Path, alive: bool) -> list[str]:
    """The status lines of the watched folders: the daemon's rows when it runs, else the
    persisted list (watched again when a daemon starts)."""
    from imprint.watch import WatchRow, format_watch, load_folders

    if alive:
        from imprint.daemon import ask_watch

        return format_watch([WatchRow.model_validate(r) for r in ask_watch(root, {"op": "list"})])
    return [
        f"  watch {f.path}: not watched now (no daemon runs; `imprint watch --list` starts one)"
        for f in load_folders(root)
    ]


def watch(
    path: Annotated[Path | None, typer.Argument(help="a folder to keep indexed")] = None,
    project: Annotated[str, typer.Option(help="project name; default: the folder's name")] = "",
    workspace: WorkspaceOpt = "",
    list_: Annotated[bool, typer.Option("--list", help="list the watched folders")] = False,
    stop: Annotated[Path | None, typer.Option("--stop", help="stop watching this folder")] = None,
) -> None:
    """Keep a folder indexed: the daemon watches it (and again after it restarts),
    re-ingests changed files in batches and removes deleted or newly ignored ones."""
    from imprint.daemon import ask_watch
    from imprint.watch import WatchRow, format_watch

    chosen = sum(x for x in (path is not None, list_, stop is not None))
    if chosen != 1:
        raise ImprintError("watch: give exactly one of PATH, --list or --stop PATH")
    if project and path is None:
        raise ImprintError("--project: only with PATH")
    root, _ = setup()
    if list_:
        request: dict[str, str] = {"op": "list"}
    elif stop is not None:
        request = {"op": "stop", "path": str(stop.expanduser().resolve())}
    else:
        assert path is not None
        target = path.expanduser().resolve()
        if not target.is_dir():
            raise ImprintError(f"path: {str(path)!r} is not a folder")
        request = {"op": "add", "path": str(target), "project": project, "workspace": workspace}
    rows = [WatchRow.model_validate(r) for r in ask_watch(root, request)]
    if not rows:
        typer.echo("no folder is watched")
    for line in format_watch(rows):
        typer.echo(line.strip())
