"""The archive commands: export and import (JSON Lines, `imprint.reads.export`), backup and
restore (a snapshot of the data dir, `imprint.writes.backup`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from imprint._fs import atomic_write_lines
from imprint.cli._app import WorkspaceOpt, err, setup
from imprint.errors import ImprintError, InputError

__all__ = ["backup", "export", "import_", "restore"]


def _refuse_beside_daemon(root: Path, what: str) -> None:
    from imprint.daemon import daemon_alive

    if daemon_alive(root):
        raise ImprintError(f"{what}: a daemon owns {root}; run `imprint stop` first, then {what}")


def export(
    file: Annotated[str, typer.Argument(help="the file to write, or - for stdout")],
    workspace: WorkspaceOpt = "",
    all_: Annotated[bool, typer.Option("--all", help="every workspace, not only one")] = False,
) -> None:
    """Write memories, facts and ingested sources as JSON Lines (no vectors, no settings)."""
    from imprint.reads.export import export_lines
    from imprint.workspaces import list_workspaces, resolve_workspace

    root, _config = setup()
    if all_ and workspace:
        raise InputError("--all, --workspace: give one of them")
    names = list_workspaces(root) if all_ else [resolve_workspace(root, workspace, must_exist=True)]
    if file == "-":
        for line in export_lines(root, names):
            sys.stdout.write(line)
        sys.stdout.flush()
        return
    target = Path(file).expanduser().resolve()
    # Written beside the target and renamed over it: a file named FILE is always whole. Its
    # folder, when it exists, keeps its mode (a share's 2775 is not Imprint's to narrow).
    lines = atomic_write_lines(target, export_lines(root, names), narrow=False)
    err.print(f"exported {', '.join(names) or 'no workspaces'}: {lines} lines to {target}")


def _progress_bar() -> Progress:
    return Progress(
        TextColumn("[bold]import"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    )


def import_(
    file: Annotated[Path, typer.Argument(help="an export file (imprint export)")],
    workspace: WorkspaceOpt = "",
    replace: Annotated[
        bool,
        typer.Option(
            "--replace",
            help="write the file's version of a memory or source the store holds otherwise "
            "(default: leave the store's as it is, and count it)",
        ),
    ] = False,
    database: Annotated[
        str,
        typer.Option(
            "--database",
            help="a team store's PostgreSQL URL: import into its --workspace user:<sub> or "
            "team:<name> instead of this machine's store",
        ),
    ] = "",
) -> None:
    """Import an export: checked whole first, embedded again, ids, dates and supersede links
    kept; importing it twice changes nothing, and what the store holds otherwise than the
    file is left as it is unless --replace. Beside a running daemon, the daemon imports it
    (it keeps serving); otherwise this process does."""
    from imprint.actors.lifecycle import running
    from imprint.daemon import ask_import, daemon_alive
    from imprint.workspaces import validate_name
    from imprint.writes import Writes
    from imprint.writes.import_check import read_export
    from imprint.writes.imports import import_file

    root, config = setup()
    if not file.is_file():
        raise InputError(f"file: {str(file)!r} is not a file")
    parsed = read_export(file)  # refused here, whole, before anything is sent or written
    if database:
        from imprint.cli.team import import_to_team

        typer.echo(import_to_team(parsed, database, workspace, config))
        return
    if workspace:
        validate_name(workspace)  # a bad name refused here, in its words
    if daemon_alive(root):
        with _progress_bar() as bar:
            task = bar.add_task("", total=parsed.records)
            text = ask_import(
                root,
                file.resolve(),
                workspace,
                lambda n: bar.update(task, total=n),
                lambda n: bar.advance(task, n),
                replace,
            )
        typer.echo(text)
        return
    with running(root, config, reindex=False) as runtime, _progress_bar() as bar:
        task = bar.add_task("", total=parsed.records)
        report = import_file(
            Writes(runtime), parsed, workspace, lambda n: bar.advance(task, n), replace
        )
    typer.echo(report.line())


def backup(
    folder: Annotated[
        Path | None,
        typer.Argument(help="a new folder; default: {data dir}/backups/<UTC time>"),
    ] = None,
) -> None:
    """A consistent snapshot of every workspace, also while a daemon serves, with a manifest
    of checksums. The config file is not included."""
    from imprint.actors.lifecycle import running
    from imprint.daemon import ask_backup, daemon_alive
    from imprint.writes.backup import backup_data_dir

    root, config = setup()
    dest = folder.expanduser().resolve() if folder is not None else None
    if daemon_alive(root):
        typer.echo(ask_backup(root, str(dest) if dest else ""))
        return
    with running(root, config, reindex=False) as runtime:
        typer.echo(backup_data_dir(runtime, dest))


def restore(
    folder: Annotated[Path, typer.Argument(help="a folder `imprint backup` wrote")],
) -> None:
    """Put a backup back (the folders it replaces are kept aside) and check it record by
    record. Needs the store to itself: run `imprint stop` first."""
    from imprint.writes.restore import restore_backup

    root, config = setup()
    _refuse_beside_daemon(root, "restore")
    clean, lines = restore_backup(root, config, folder)
    for line in lines:
        typer.echo(line)
    if not clean:
        raise typer.Exit(1)
