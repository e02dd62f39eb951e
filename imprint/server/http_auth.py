"""Bearer auth for `serve --http`, and what it prints so that clients can connect.

Over HTTP every request needs `Authorization: Bearer <token>`: one random token per data
dir, kept 0600 in `{data_dir}/http_token` (any local user can reach a loopback port; only
the owner can read that file), made on the first start or by `--rotate-token`. Another
user's connection is cut before it is read (`imprint._loopback`), token or not. Host and
Origin must name 127.0.0.1, localhost or [::1] at the server's own port; bodies are capped
by the SDK.
"""

from __future__ import annotations

import contextlib
import hmac
import os
import secrets
from pathlib import Path
from typing import NamedTuple

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from imprint._fs import private_dir

__all__ = [
    "OAUTH_PATHS",
    "BearerAuth",
    "BearerToken",
    "auth_hint",
    "client_config_lines",
    "http_app",
    "http_token",
    "http_token_path",
    "token_hint_lines",
]


def http_token_path(data_dir: Path) -> Path:
    return data_dir / "http_token"


class BearerToken(NamedTuple):
    value: str
    fresh: bool  # made just now (first start or rotated): the clients do not have it yet


def http_token(data_dir: Path, *, rotate: bool = False) -> BearerToken:
    """The data dir's bearer token, made once (random, 256 bits) and kept 0600; with
    `rotate`, a new one replaces it (atomically: a reader sees the old or the new)."""
    path = http_token_path(data_dir)
    if not rotate:
        with contextlib.suppress(FileNotFoundError):
            token = path.read_text(encoding="utf-8").strip()
            if len(token) >= 32:
                if path.stat().st_mode & 0o077:
                    os.chmod(path, 0o600)
                return BearerToken(token, fresh=False)
    private_dir(path.parent)
    token = secrets.token_urlsafe(32)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.unlink(missing_ok=True)  # O_EXCL below: never write through a planted file or link
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(token + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    return BearerToken(token, fresh=True)


# Where an OAuth client looks for an authorization server (RFC 9728, RFC 8414, OpenID
# discovery) and registers itself (RFC 7591). Imprint has none: these answer 404 at once, with
# the token hint, so a client reports it instead of waiting for a flow that cannot happen.
OAUTH_PATHS = (
    "/.well-known/oauth-protected-resource",
    "/.well-known/oauth-authorization-server",
    "/.well-known/openid-configuration",
    "/register",
    "/authorize",
    "/token",
)


def auth_hint(token_file: Path | str) -> str:
    """What a refused HTTP request is told. The token file by its name in the data dir,
    never its path: whoever is refused has no business knowing where the data dir (and the
    user's home) is; `serve --http` prints the path on its own terminal."""
    # Not "Authorization: Bearer <token>": Claude Code redacts what follows "Authorization:"
    # or "Bearer" in the error it shows, which would hide the hint.
    name = Path(token_file).name or "http_token"
    return (
        "imprint needs its bearer token (no OAuth): send the Authorization header with the "
        f"token kept in the {name} file of the server's data dir; `imprint serve --http "
        "--rotate-token` prints each client's config line"
    )


def _is_oauth_path(path: str) -> bool:
    # RFC 9728 and 8414 put the resource's or issuer's path after the well-known name.
    return any(path == p or path.startswith(f"{p}/") for p in OAUTH_PATHS)


class BearerAuth:
    """ASGI middleware: HTTP requests without the data dir's bearer token get 401 and reach
    nothing (the body is not even read).

    Every refusal is what OAuth-aware clients parse: a JSON body `{"error",
    "error_description"}` (RFC 6749 5.2) and `WWW-Authenticate: Bearer realm="imprint"`.
    A wrong bearer token adds `error="invalid_token"` and the hint to the header; a request
    with no Authorization header (or another scheme) gets the bare challenge, as RFC 6750
    3.1 asks of a request that carried no authentication (the client did not know it was
    needed: the challenge tells it, an error code would claim it tried). OAuth discovery
    and registration paths answer 404 with the hint, token or not: nothing secret is there
    to guard."""

    def __init__(self, app: ASGIApp, token: str, token_file: Path | str = "{data_dir}/http_token"):
        self.app = app
        self._token = token.encode()
        self._hint = auth_hint(token_file)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            if _is_oauth_path(scope.get("path", "")):
                body = {"error": "not_found", "error_description": self._hint}
                await JSONResponse(body, status_code=404)(scope, receive, send)
                return
            header = Headers(scope=scope).get("authorization")
            scheme, _, given = (header or "").partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(
                given.strip().encode(), self._token
            ):
                challenge = 'Bearer realm="imprint"'
                if scheme.lower() == "bearer":
                    # A header is one latin-1 line: a quoted-string, whatever the path holds.
                    line = (
                        " ".join(self._hint.split()).encode("latin-1", "replace").decode("latin-1")
                    )
                    quoted = line.replace("\\", "\\\\").replace('"', '\\"')
                    challenge += f', error="invalid_token", error_description="{quoted}"'
                body = {"error": "invalid_token", "error_description": self._hint}
                response = JSONResponse(
                    body, status_code=401, headers={"WWW-Authenticate": challenge}
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def http_app(
    server: MCPServer, port: int, token: str, token_file: Path | str = "{data_dir}/http_token"
) -> ASGIApp:
    """The streamable HTTP app behind the bearer check; Host and Origin at this exact port."""
    loopback = ("127.0.0.1", "localhost", "[::1]")
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{host}:{port}" for host in loopback],
        allowed_origins=[f"http://{host}:{port}" for host in loopback],
    )
    app = server.streamable_http_app(transport_security=security, host="127.0.0.1")
    return BearerAuth(app, token, token_file)


def client_config_lines(url: str, token: str, token_file: Path) -> list[str]:
    """What to paste into each client to connect, printed by `serve --http` when the token
    was just made (first start, `--rotate-token`): never again, so it stays out of the
    service manager's journal."""
    header = f"Authorization: Bearer {token}"
    cursor = (
        f'{{"mcpServers": {{"imprint": {{"url": "{url}", '
        f'"headers": {{"Authorization": "Bearer {token}"}}}}}}}}'
    )
    return [
        f"imprint: MCP over streamable HTTP at {url}",
        f"imprint: every request needs the header '{header}' (token kept in {token_file})",
        f"  Claude Code: claude mcp add --transport http imprint {url} --header '{header}'",
        f"  Codex (~/.codex/config.toml, then export IMPRINT_HTTP_TOKEN={token}):",
        f'    [mcp_servers.imprint] url = "{url}" bearer_token_env_var = "IMPRINT_HTTP_TOKEN"',
        f"  Cursor (~/.cursor/mcp.json): {cursor}",
    ]


def token_hint_lines(url: str, token_file: Path) -> list[str]:
    """What `serve --http` prints at a start that made no new token: where it is, not it."""
    return [
        f"imprint: MCP over streamable HTTP at {url}",
        f"imprint: every request needs 'Authorization: Bearer <token>' with the token kept in "
        f"{token_file}; `imprint serve --http --rotate-token` makes a new one and prints each "
        "client's config line",
    ]
