"""The write commands: ingest (through the daemon when one owns the store) and repair."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape as markup_escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from imprint.cli._app import WorkspaceOpt, err, setup
from imprint.cli._daemon import via_daemon
from imprint.errors import ImprintError

__all__ = ["ingest", "memory_restore", "repair"]


def ingest(
    path: Annotated[Path, typer.Argument(help="a file or folder to ingest")],
    project: Annotated[str, typer.Option(help="project name; default: the folder's name")] = "",
    workspace: WorkspaceOpt = "",
) -> None:
    """Ingest a file or folder: unchanged files are skipped, changed ones replaced."""
    from imprint.actors.lifecycle import running
    from imprint.reads.layout import escape_field
    from imprint.writes.content import ingest_roots
    from imprint.writes.files import ingest_path

    root, config = setup()
    target = str(path.expanduser().resolve())

    async def shown(done: float, total: float | None, source: str | None) -> None:
        line = f"ingest {int(done)}/{int(total or 0)} {escape_field(source or '')}"
        err.print(line, end="\r", markup=False, highlight=False)

    args: dict[str, object] = {"path": target, "project": project, "workspace": workspace}
    # Through the daemon the session's cwd is no root: both ways read under exactly
    # ingest.allowed_roots and the path named here (`ingest_roots`).
    text = via_daemon(root, "ingest_path", args, allow=[target], cwd_root=False, progress=shown)
    if text is not None:
        typer.echo(text)
        return
    with (
        running(root, config) as runtime,
        Progress(
            TextColumn("[bold]ingest"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.description}"),
            console=err,
            transient=True,
        ) as bar,
    ):
        task = bar.add_task("", total=None)

        def progress(done: int, total: int, source: str) -> None:
            # A file name may hold terminal escapes, bidi overrides or rich markup.
            name = markup_escape(escape_field(source)[-60:])
            bar.update(task, completed=done, total=total, description=name)

        # The path named here, and the configured roots: a link inside may lead only there.
        roots = ingest_roots(config.ingest.allowed_roots, None, [Path(target)])
        report = ingest_path(
            runtime, path, project=project, workspace=workspace, progress=progress, roots=roots
        )
    typer.echo(report.summary())


def repair(workspace: WorkspaceOpt = "") -> None:
    """Rebuild whichever index disagrees from the other (re-embedding missing vectors) and
    say what was found and done. Needs the store to itself: run `imprint stop` first."""
    from imprint.actors.lifecycle import running
    from imprint.daemon import daemon_alive
    from imprint.writes.repair import repair_workspace

    root, config = setup()
    if daemon_alive(root):
        raise ImprintError(f"repair: a daemon owns {root}; run `imprint stop` first, then repair")
    with running(root, config, reindex=False) as runtime:
        result = repair_workspace(runtime, workspace)
    for line in result.found:
        typer.echo(f"found: {line}")
    for line in result.done:
        typer.echo(f"done: {line}")
    for line in result.left:
        typer.echo(f"left: {line}")
    if not result.found:
        typer.echo("nothing to repair: the indexes agree record by record")
    if result.left:
        raise typer.Exit(1)


def memory_restore(
    ids: Annotated[list[str], typer.Argument(help="ids of superseded memories")],
    workspace: WorkspaceOpt = "",
) -> None:
    """Show superseded memories again (undo a supersede, a store's or capture's); the memory
    that replaced each stays."""
    from imprint.actors.lifecycle import running
    from imprint.writes.gateway import Writes
    from imprint.writes.memories import restore_memories

    root, config = setup()
    args: dict[str, object] = {"content": "", "restore": ids, "workspace": workspace}
    text = via_daemon(root, "store", args)
    if text is None:
        with running(root, config, reindex=False) as runtime:
            text = restore_memories(Writes(runtime), ids, workspace)
    typer.echo(text)
