"""`imprint serve --http --database URL --issuer ISS --resource RES`: the stateless team server.

One process, no daemon, no data dir: every request carries its bearer token and is answered
from PostgreSQL (`store.postgres`) through the storage seam, so any number of these processes
on one database serve the same users and any of them answers any request (the MCP session is
stateless: no session id ties a client to one process). A write is acknowledged only after its
transaction commits, so another server reads it at once.

Authorization is the MCP spec's (`team_auth`): a JWT for RES from ISS with `imprint:read`
reaches the endpoint; a `tools/call` of a write tool without `imprint:write` is answered 403
`insufficient_scope` naming that scope before it reaches the tool (and the tool checks again).
The token's tenancy picks the workspace: `user:<sub>` unless the call names one of its teams.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import (
    AuthenticatedUser,
    BearerAuthBackend,
    RequireAuthMiddleware,
)
from mcp.server.auth.routes import build_resource_metadata_url
from mcp.server.mcpserver import Context
from mcp.server.transport_security import (
    DEFAULT_MAX_REQUEST_BODY_SIZE,
    TransportSecuritySettings,
)
from psycopg_pool import ConnectionPool
from starlette.applications import Starlette
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from imprint import __version__
from imprint.errors import InputError
from imprint.reads.on_store import Embed
from imprint.server.app import ImprintServer
from imprint.server.team_auth import (
    READ_SCOPE,
    WRITE_SCOPE,
    JwtVerifier,
    _url,
    resource_server_routes,
    tenant_of,
    workspace_for,
)
from imprint.store.embedder import Embedder
from imprint.store.postgres import PostgresStore
from imprint.tools.team import WRITE_TOOLS, Opened, register_team
from imprint.types import WorkspaceName

__all__ = ["PoolAccess", "WriteScopeGate", "build_team_server", "team_app"]

# A POST body is read whole to see which tools it calls: at most the SDK's own limit (one
# copy), a bigger one is 413 here as it would be further in.
MAX_BODY = DEFAULT_MAX_REQUEST_BODY_SIZE

INSTRUCTIONS = (
    "Imprint team memory: search and store what your sessions learned, in your own workspace "
    "(user:<you>, the default) or a team's (workspace=team:<name>)."
)


class PoolAccess:
    """The stores of one database, opened per call for the caller's workspace."""

    def __init__(
        self,
        pool: ConnectionPool,
        embedder: Embedder,
        teams_claim: str,
        redacts: Callable[[str], bool] = lambda ws: True,
    ) -> None:
        self.pool = pool
        self.redacts = redacts
        self.embedder = embedder
        self.teams_claim = teams_claim
        self.embed: Embed = lambda text: embedder.embed([text])[0]

    def open(self, ctx: Context[Any, Any], workspace: str, *, write: bool) -> Opened:
        request = ctx.request_context.request
        user = getattr(request, "user", None)
        if not isinstance(user, AuthenticatedUser):
            raise InputError("authorization: no token on this call")
        access = user.access_token
        if write and WRITE_SCOPE not in access.scopes:
            raise InputError(f"authorization: this token lacks {WRITE_SCOPE}; it may only read")
        tenant = tenant_of(access, self.teams_claim)
        name = workspace_for(tenant, workspace)
        store = PostgresStore(self.pool, WorkspaceName(name), self.embedder)
        return Opened(
            store=store,
            actor=tenant.subject,
            workspaces=tenant.workspaces,
            redact=self.redacts(name),
        )


def _tool_calls(body: bytes) -> list[str]:
    """The tool names a JSON-RPC body calls (one message or a batch); none for anything else."""
    try:
        parsed = json.loads(body)
    except ValueError:
        return []
    messages = parsed if isinstance(parsed, list) else [parsed]
    names = []
    for m in messages:
        if isinstance(m, dict) and m.get("method") == "tools/call":
            params = m.get("params")
            if isinstance(params, dict) and isinstance(params.get("name"), str):
                names.append(params["name"])
    return names


class WriteScopeGate:
    """403 `insufficient_scope` (scope="imprint:write") for a write tool's call by a token
    without that scope, as the MCP spec's step-up authorization has it; the body is handed on
    unchanged otherwise."""

    def __init__(self, app: ASGIApp, resource_metadata_url: str) -> None:
        self.app = app
        self.metadata = resource_metadata_url

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            chunks.append(chunk)
            more = message.get("more_body", False) and size <= MAX_BODY
        if size > MAX_BODY:
            # Past MAX_BODY: refused whole rather than passed on half-checked.
            await JSONResponse({"error": "request body too large"}, status_code=413)(
                scope, receive, send
            )
            return
        body = b"".join(chunks)
        user = scope.get("user")
        scopes = user.scopes if isinstance(user, AuthenticatedUser) else []
        writes = [n for n in _tool_calls(body) if n in WRITE_TOOLS]
        if writes and WRITE_SCOPE not in scopes:
            challenge = (
                f'Bearer error="insufficient_scope", scope="{WRITE_SCOPE}", '
                f'error_description="{writes[0]} needs {WRITE_SCOPE}", '
                f'resource_metadata="{self.metadata}"'
            )
            response = JSONResponse(
                {
                    "error": "insufficient_scope",
                    "error_description": f"{writes[0]} needs {WRITE_SCOPE}",
                },
                status_code=403,
                headers={"WWW-Authenticate": challenge},
            )
            await response(scope, receive, send)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def build_team_server(access: PoolAccess) -> ImprintServer:
    server = ImprintServer(
        name="imprint-team",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
        subscriptions=False,
    )
    register_team(server, access)
    return server


def team_app(
    server: ImprintServer, verifier: JwtVerifier, allowed_hosts: list[str] | None = None
) -> ASGIApp:
    """The MCP endpoint at /mcp (stateless, JSON answers) behind the token check, beside the
    RFC 9728 metadata. `allowed_hosts` are the Host headers accepted (DNS-rebinding
    protection); none: any (a server behind a proxy that checks them)."""
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=bool(allowed_hosts),
        allowed_hosts=allowed_hosts or [],
        allowed_origins=[f"http://{h}" for h in allowed_hosts or []]
        + [f"https://{h}" for h in allowed_hosts or []],
    )
    inner = server.streamable_http_app(
        stateless_http=True, json_response=True, transport_security=security
    )
    resource = _url(verifier.resource)
    metadata_url = build_resource_metadata_url(resource)
    protected = RequireAuthMiddleware(
        WriteScopeGate(inner, str(metadata_url)), [READ_SCOPE], resource_metadata_url=metadata_url
    )
    authed = AuthenticationMiddleware(
        AuthContextMiddleware(protected),
        backend=BearerAuthBackend(verifier, resource_server_url=resource),
    )
    meta = Starlette(routes=list(resource_server_routes(verifier.resource, verifier.issuer)))

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await inner(scope, receive, send)  # the session manager's task group
        elif scope["type"] == "http" and scope["path"].startswith("/.well-known/"):
            await meta(scope, receive, send)
        else:
            await authed(scope, receive, send)

    return app
