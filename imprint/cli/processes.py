"""The commands about the data dir's owner process: serve (stdio or HTTP), stop,
dashboard, and the hidden daemon command."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from imprint import config as cfg
from imprint.cli._app import err, setup
from imprint.errors import ImprintError

__all__ = ["daemon", "dashboard", "serve", "stop"]


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
    database: Annotated[
        str,
        typer.Option(
            "--database",
            envvar="IMPRINT_DATABASE_URL",
            help="with --http: serve the team store in this PostgreSQL (a stateless team "
            "server; default team.database)",
        ),
    ] = "",
    issuer: Annotated[
        str, typer.Option("--issuer", help="with --database: the OAuth issuer of the tokens")
    ] = "",
    resource: Annotated[
        str, typer.Option("--resource", help="with --database: this server's resource URL")
    ] = "",
    dev_issuer: Annotated[
        bool,
        typer.Option(
            "--dev-issuer",
            help="with --database: issue tokens from a throwaway issuer in this process (on "
            "127.0.0.1, for trying out; prints a token for user dev in team dev)",
        ),
    ] = False,
) -> None:
    """Serve MCP. Over stdio (the default) it bridges to the data dir's shared daemon,
    starting it if needed; with --http this process owns the data dir and serves both.
    With --http --database URL --issuer ISS --resource RES it is a stateless team server on
    PostgreSQL instead: no data dir, OAuth bearer tokens, any number of them on one database."""
    from imprint.daemon import bridge_stdio

    if rotate_token and not http:
        raise ImprintError("--rotate-token: only with --http (stdio needs no token)")
    root, config = setup()
    database = database or config.team.database
    if database or issuer or resource or dev_issuer:
        if not http:
            raise ImprintError("--database: only with --http (the team server is HTTP)")
        from imprint.cli.team import serve_team

        serve_team(
            config,
            database,
            issuer or config.team.issuer,
            resource or config.team.resource,
            port or config.server.http_port,
            dev_issuer=dev_issuer,
        )
        return
    if not http:
        raise typer.Exit(bridge_stdio(root, allow))
    _serve_http(root, config, port, rotate_token)


def _serve_http(root: Path, config: cfg.Config, port: int, rotate_token: bool) -> None:
    """`serve --http`: this process owns the data dir and serves MCP over HTTP beside its
    socket, with a bearer token."""
    import signal
    import threading

    import uvicorn

    from imprint._loopback import LoopbackConfig
    from imprint.daemon import Daemon
    from imprint.logs import add_secret
    from imprint.server import (
        build_server,
        client_config_lines,
        http_app,
        http_token,
        http_token_path,
        token_hint_lines,
    )

    daemon = Daemon(root, config, idle_exit_sec=None, kind="serve --http")
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


def stop() -> None:
    """Stop the data dir's shared daemon (or `serve --http`) now; the next client starts one."""
    from imprint.daemon import stop_daemon

    typer.echo(stop_daemon(cfg.data_dir()))


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
    root, _ = setup()
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


def daemon() -> None:
    """Run the data dir's shared owner process (started on demand by `serve`)."""
    from imprint.daemon import run_daemon

    root, config = setup()
    raise typer.Exit(run_daemon(root, config, idle_exit_sec=config.server.idle_exit_sec))
