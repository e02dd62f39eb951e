"""The team server as an OAuth 2.1 resource server (MCP authorization spec), and its tenancy.

`JwtVerifier` is the MCP SDK's `TokenVerifier` for JWT access tokens: the issuer's JWKS is
found through its metadata (`ISS/.well-known/openid-configuration`, else
`ISS/.well-known/oauth-authorization-server`), cached by PyJWT's `PyJWKClient` and fetched
again for a `kid` it does not hold; `iss`, `aud` (= the server's resource URL, RFC 8707), `exp`
and `nbf` are checked by PyJWT. No crypto here. `resource_server_routes` are the RFC 9728
metadata (bare and path-suffixed); the SDK's bearer middleware answers 401 with
`resource_metadata` and 403 `insufficient_scope`.

Tenancy: the token's `sub` owns the workspace `user:<sub>` (the default); each name in the
teams claim (`groups` unless configured) is the workspace `team:<name>`. Nothing else is
reachable: `workspace_for` refuses any other name with one line and no data.
"""

from __future__ import annotations

import json
import threading
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import jwt
from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.routes import build_resource_metadata_url, create_protected_resource_routes
from pydantic import AnyHttpUrl, BaseModel, ConfigDict
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.routing import Mount, Route
from starlette.types import ASGIApp

from imprint.errors import InputError

__all__ = [
    "READ_SCOPE",
    "SCOPES",
    "WRITE_SCOPE",
    "JwtVerifier",
    "Tenant",
    "guarded_app",
    "resource_server_routes",
    "tenant_of",
    "workspace_for",
]

READ_SCOPE = "imprint:read"
WRITE_SCOPE = "imprint:write"
SCOPES = (READ_SCOPE, WRITE_SCOPE)
# Asymmetric algorithms only: a JWKS holds public keys, and `none` or HMAC with a public key
# as the secret must never verify.
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA")
METADATA_PATHS = ("/.well-known/openid-configuration", "/.well-known/oauth-authorization-server")
HTTP_TIMEOUT_SEC = 10.0
# PyJWKClient fetches the JWKS again for an unknown `kid` at most this often: a flood of
# tokens with made-up kids costs the issuer one request per period, not one per token.
KID_REFRESH_COOLDOWN_SEC = 30.0
# Clock skew allowed on exp / nbf.
LEEWAY_SEC = 30


def _get_json(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=HTTP_TIMEOUT_SEC) as response:
        body = json.loads(response.read(1_000_000))
    if not isinstance(body, dict):
        raise ValueError(f"{url}: not a JSON object")
    return body


class JwtVerifier:
    """Verifies JWT access tokens issued by `issuer` for `resource`. Thread-safe."""

    def __init__(
        self,
        issuer: str,
        resource: str,
        *,
        kid_refresh_cooldown: float = KID_REFRESH_COOLDOWN_SEC,
    ) -> None:
        self.issuer = issuer.rstrip("/")
        self.resource = resource
        self._cooldown = kid_refresh_cooldown
        self._jwks: jwt.PyJWKClient | None = None
        self._lock = threading.Lock()

    def jwks_client(self) -> jwt.PyJWKClient:
        """The JWKS client, made on first use from the issuer's metadata (whose `issuer` must
        be ours: metadata naming another issuer is not trusted)."""
        with self._lock:
            if self._jwks is None:
                errors: list[str] = []
                for path in METADATA_PATHS:
                    try:
                        meta = _get_json(self.issuer + path)
                    except (OSError, ValueError) as exc:
                        errors.append(f"{path}: {exc}")
                        continue
                    if str(meta.get("issuer", "")).rstrip("/") != self.issuer:
                        errors.append(f"{path}: names issuer {meta.get('issuer')!r}")
                        continue
                    if not isinstance(meta.get("jwks_uri"), str):
                        errors.append(f"{path}: no jwks_uri")
                        continue
                    self._jwks = jwt.PyJWKClient(
                        meta["jwks_uri"],
                        cache_keys=False,
                        lifespan=300,
                        timeout=HTTP_TIMEOUT_SEC,
                        cooldown_duration=self._cooldown,
                    )
                    break
                else:
                    raise jwt.PyJWKClientError(
                        f"issuer {self.issuer}: no usable metadata ({'; '.join(errors)})"
                    )
            return self._jwks

    def verify(self, token: str) -> AccessToken | None:
        """The token's access, or None for any token that is not valid here (bad signature,
        unknown key, other issuer or audience, expired, not yet valid, no `sub`)."""
        try:
            key = self.jwks_client().get_signing_key_from_jwt(token)
            claims = jwt.decode(
                token,
                key.key,
                algorithms=list(ALGORITHMS),
                audience=self.resource,
                issuer=self.issuer,
                leeway=LEEWAY_SEC,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except jwt.PyJWTError:
            return None
        sub = claims.get("sub")
        if not isinstance(sub, str) or not sub:
            return None
        scope = claims.get("scope", "")
        scopes = scope.split() if isinstance(scope, str) else []
        client = claims.get("client_id") or claims.get("azp") or sub
        return AccessToken(
            token=str(token),
            client_id=str(client),
            scopes=scopes,
            expires_at=int(claims["exp"]),
            resource=self.resource,
            subject=sub,
            claims=claims,
        )

    async def verify_token(self, token: str) -> AccessToken | None:
        # The JWKS fetch blocks: off the event loop.
        return await anyio.to_thread.run_sync(self.verify, token)


@dataclass(frozen=True)
class Tenant:
    """Whom a token speaks for and the workspaces it may reach."""

    subject: str
    own: str
    teams: tuple[str, ...]

    @property
    def workspaces(self) -> tuple[str, ...]:
        return (self.own, *self.teams)


def tenant_of(token: AccessToken, teams_claim: str = "groups") -> Tenant:
    """`user:<sub>` and a `team:<name>` per name in the teams claim (a list or a space-separated
    string; other shapes give no teams)."""
    claims = token.claims or {}
    raw = claims.get(teams_claim, [])
    names: Sequence[object] = raw.split() if isinstance(raw, str) else raw
    if not isinstance(names, list | tuple):
        names = []
    teams = tuple(dict.fromkeys(f"team:{n}" for n in names if isinstance(n, str) and n))
    subject = token.subject or ""
    return Tenant(subject=subject, own=f"user:{subject}", teams=teams)


def workspace_for(tenant: Tenant, asked: str) -> str:
    """The workspace a call reaches: the caller's own for "", else one of theirs by name."""
    if not asked:
        return tenant.own
    if asked in tenant.workspaces:
        return asked
    allowed = ", ".join(tenant.workspaces)
    raise InputError(f"workspace: {asked!r} is not one of yours; allowed: {allowed}")


class _Url(BaseModel):
    # As the SDK's AuthSettings: a path-less URL keeps its exact spelling (issuer comparison
    # is exact: no trailing slash may be added).
    model_config = ConfigDict(url_preserve_empty_path=True)
    url: AnyHttpUrl


def _url(text: str) -> AnyHttpUrl:
    return _Url(url=text).url  # type: ignore[arg-type]


def resource_server_routes(resource: str, issuer: str) -> list[Route]:
    """RFC 9728 protected resource metadata at `/.well-known/oauth-protected-resource` and at
    its path-suffixed form for a resource URL with a path."""
    routes = create_protected_resource_routes(
        resource_url=_url(resource),
        authorization_servers=[_url(issuer)],
        scopes_supported=list(SCOPES),
        resource_name="Imprint team memory",
    )
    # The SDK registers the path-suffixed form (RFC 9728 section 3.1); clients that probe the
    # bare path first find the same document there.
    bare = "/.well-known/oauth-protected-resource"
    extra = [Route(bare, r.endpoint, methods=r.methods) for r in routes if r.path != bare]
    return routes + extra


def guarded_app(inner: ASGIApp, verifier: JwtVerifier, path: str = "/mcp") -> Starlette:
    """`inner` (the MCP endpoint) at `path`, open only to a valid token for this resource with
    `imprint:read` (401 with `resource_metadata` without one, 403 `insufficient_scope`
    without the scope), beside the metadata routes. Writes check `imprint:write` per call."""
    resource = _url(verifier.resource)
    protected = RequireAuthMiddleware(
        inner, [READ_SCOPE], resource_metadata_url=build_resource_metadata_url(resource)
    )
    backend = BearerAuthBackend(verifier, resource_server_url=resource)
    return Starlette(
        routes=[
            *resource_server_routes(verifier.resource, verifier.issuer),
            Mount(path, protected),
        ],
        middleware=[Middleware(AuthenticationMiddleware, backend=backend)],
    )
