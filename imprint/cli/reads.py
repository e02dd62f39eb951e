"""The read commands: search, status, recall (each prints exactly what its MCP tool
returns) and trace (per-recall timings from the log)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from imprint import config as cfg
from imprint.cli._app import WorkspaceOpt, setup
from imprint.cli._daemon import via_daemon
from imprint.errors import ImprintError

__all__ = ["recall", "search", "status", "trace"]


def search(
    query: Annotated[str, typer.Argument(help="what to look for")],
    project: Annotated[str, typer.Option(help="only this project")] = "",
    type: Annotated[str, typer.Option(help="only this record type")] = "",
    lang: Annotated[str, typer.Option(help="only this language")] = "",
    layer: Annotated[str, typer.Option(help="only this layer (docs, source, test, config)")] = "",
    limit: Annotated[int | None, typer.Option(help="results, 1-50; default search.limit")] = None,
    mode: Annotated[
        str | None, typer.Option(help="hybrid, semantic or lexical; default search.mode")
    ] = None,
    max_chars: Annotated[
        int | None, typer.Option("--max-chars", help="budget, 1200-12000; default search.max_chars")
    ] = None,
    since: Annotated[
        str, typer.Option("--since", help="only records stored on or after this date, YYYY-MM-DD")
    ] = "",
    workspace: WorkspaceOpt = "",
) -> None:
    """Print exactly what the MCP search tool returns."""
    from imprint.actors.lifecycle import running
    from imprint.reads.gateway import ActorReads
    from imprint.reads.search import SearchArgs, checked_mode, parse_since, search_text

    root, config = setup()
    parse_since(since, "--since")  # refused here in the option's own name, daemon or not
    args: dict[str, object] = {
        "query": query,
        "project": project,
        "type": type,
        "lang": lang,
        "layer": layer,
        "limit": limit,
        "mode": mode,
        "max_chars": max_chars,
        "since": since,
        "workspace": workspace,
    }
    via = via_daemon(root, "search", args)
    if via is not None:
        typer.echo(via)
        return
    given = {k: v for k, v in args.items() if k in SearchArgs.model_fields}
    searched = SearchArgs.model_validate({**given, "mode": checked_mode(mode)})
    with running(root, config, reindex=False) as runtime:
        text = search_text(ActorReads(runtime), searched, max_chars, workspace)
    typer.echo(text)


def status(
    workspace: WorkspaceOpt = "",
    check: Annotated[
        bool, typer.Option("--check", help="compare both indexes record by record")
    ] = False,
) -> None:
    """Counts per project, facts, and whether the two indexes agree."""
    from imprint.actors.lifecycle import running
    from imprint.daemon import ask_status, daemon_alive
    from imprint.reads.gateway import ActorReads
    from imprint.reads.status import StatusRow, status_row

    root, config = setup()
    alive = daemon_alive(root)
    if alive:
        # The daemon's row, typed: the exit code below never depends on the text.
        row = StatusRow.model_validate(ask_status(root, workspace, check))
    else:
        with running(root, config, reindex=False) as runtime:
            row = status_row(ActorReads(runtime), workspace, check)
    from imprint.cli.watch import watch_lines
    from imprint.daemon.status_text import status_lines

    for line in status_lines(root, row, watch_lines(root, alive)):
        typer.echo(line)
    if not row.consistent:
        raise typer.Exit(1)


def recall(
    question: Annotated[str, typer.Argument(help="the whole question")],
    plan: Annotated[str, typer.Option("--plan", help="JSON list of read steps")] = "",
    max_chars: Annotated[
        int | None, typer.Option("--max-chars", help="budget, 1200-12000; default search.max_chars")
    ] = None,
    no_condense: Annotated[bool, typer.Option("--no-condense", help="evidence, no answer")] = False,
    workspace: WorkspaceOpt = "",
) -> None:
    """Print exactly what the MCP recall tool returns."""
    from imprint.actors.lifecycle import running
    from imprint.reads.gateway import ActorReads
    from imprint.recall.respond import RecallArgs, recall_text

    root, config = setup()
    args: dict[str, object] = {
        "question": question,
        "max_chars": max_chars,
        "condense": not no_condense,
        "workspace": workspace,
    }
    if plan:
        args["plan"] = plan
    via = via_daemon(root, "recall", args)
    if via is not None:
        typer.echo(via)
        return
    with running(root, config, reindex=False) as runtime:
        asked = RecallArgs(
            question=question, plan=plan or None, max_chars=max_chars, condense=not no_condense
        )
        text = recall_text(ActorReads(runtime), asked, workspace, cwd=Path.cwd())
    typer.echo(text)


def trace(
    log: Annotated[Path | None, typer.Argument(help="JSON log; default: the data dir's")] = None,
    recall: Annotated[str, typer.Option("--recall", help="only this recall id (prefix)")] = "",
    svg: Annotated[
        Path | None,
        typer.Option("--svg", help="write the recall's waterfall (as the dashboard draws it)"),
    ] = None,
) -> None:
    """Per-recall timings from the JSON log: each step and model phase, the slowest marked."""
    from imprint.logs import log_files, log_path
    from imprint.trace import render_trace, write_svg

    path = log or log_path(cfg.data_dir())
    if not path.is_file():
        raise ImprintError(f"log: {str(path)!r} is not a file")
    if svg is not None:
        if not recall:
            raise ImprintError("--svg: needs --recall ID (one recall per picture)")
        files = [path] if log else log_files(cfg.data_dir())
        typer.echo(write_svg(files, recall, svg))
        return
    raise typer.Exit(render_trace(path, recall))
