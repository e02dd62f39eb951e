"""The team server as an OAuth 2.1 resource server: JWTs checked against a local issuer's JWKS
(found through its metadata), the RFC 9728 metadata, 401 / 403 as the MCP spec has them, and
the tenancy that maps a token to the workspaces it may reach."""

from __future__ import annotations

import anyio
import httpx
import pytest
from starlette.responses import PlainTextResponse
from starlette.types import Receive, Scope, Send

from imprint.errors import InputError
from imprint.server.team_auth import JwtVerifier, guarded_app, tenant_of, workspace_for
from tests.support.team_issuer import Issuer, issuer  # noqa: F401 (a fixture)

RES = "http://team.imprint.test:8400/mcp"


def test_a_valid_token_names_its_subject_scopes_and_resource(issuer: Issuer) -> None:  # noqa: F811
    """A token of this issuer for this resource verifies: sub, scopes, the resource."""
    verifier = JwtVerifier(issuer.url, RES)
    access = verifier.verify(issuer.token("alice", RES, scope="imprint:read"))
    assert access is not None
    assert (access.subject, access.scopes, access.resource) == ("alice", ["imprint:read"], RES)


@pytest.mark.parametrize("case", ["audience", "expired", "unknown key", "other issuer", "junk"])
def test_a_token_not_for_this_server_is_refused(issuer: Issuer, case: str) -> None:  # noqa: F811
    """Wrong audience, expired, signed by a key the issuer never published, another issuer's
    name, not a JWT at all: each is refused."""
    token = {
        "audience": lambda: issuer.token("alice", "http://other.test/mcp"),
        "expired": lambda: issuer.token("alice", RES, lifetime=-120),
        "unknown key": lambda: issuer.token("alice", RES, kid="k9", unpublished_key=True),
        "other issuer": lambda: issuer.token("alice", RES, iss="http://evil.test"),
        "junk": lambda: "not.a.jwt",
    }[case]()
    assert JwtVerifier(issuer.url, RES, kid_refresh_cooldown=0).verify(token) is None


def test_a_rotated_key_is_fetched_once_for_its_unknown_kid(issuer: Issuer) -> None:  # noqa: F811
    """The JWKS is cached; a token with a kid the cache lacks fetches it again, once."""
    verifier = JwtVerifier(issuer.url, RES, kid_refresh_cooldown=0)
    assert verifier.verify(issuer.token("alice", RES)) is not None
    assert verifier.verify(issuer.token("alice", RES)) is not None
    assert issuer.jwks_fetches == 1
    issuer.rotate("k2")
    assert verifier.verify(issuer.token("bob", RES, kid="k2")) is not None
    assert issuer.jwks_fetches == 2


def test_tenancy_own_workspace_teams_and_nothing_else(issuer: Issuer) -> None:  # noqa: F811
    """`user:<sub>` by default, `team:<name>` per group; any other workspace is one line."""
    verifier = JwtVerifier(issuer.url, RES)
    carol = verifier.verify(issuer.token("carol", RES, groups=["core"]))
    dave = verifier.verify(issuer.token("dave", RES))
    assert carol is not None and dave is not None
    tenant = tenant_of(carol)
    assert tenant.workspaces == ("user:carol", "team:core")
    assert workspace_for(tenant, "") == "user:carol"
    assert workspace_for(tenant, "team:core") == "team:core"
    with pytest.raises(InputError, match=r"^workspace: 'team:core' is not one of yours"):
        workspace_for(tenant_of(dave), "team:core")
    with pytest.raises(InputError, match="not one of yours"):
        workspace_for(tenant, "user:dave")


async def _inner(scope: Scope, receive: Receive, send: Send) -> None:
    await PlainTextResponse(f"hello {scope['user'].access_token.subject}")(scope, receive, send)


def test_http_401_with_metadata_403_for_scope_and_the_metadata_document(
    issuer: Issuer,  # noqa: F811
) -> None:
    """Over HTTP: no token or a bad one is 401 naming the metadata URL; a token without
    imprint:read is 403 insufficient_scope; the metadata names the resource, issuer, scopes."""
    anyio.run(_http_checks, issuer)


async def _http_checks(issuer: Issuer) -> None:  # noqa: F811
    app = guarded_app(_inner, JwtVerifier(issuer.url, RES))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(
        transport=transport, base_url="http://team.imprint.test:8400"
    ) as c:
        bare = await c.get("/mcp/")
        assert bare.status_code == 401
        assert (
            'resource_metadata="http://team.imprint.test:8400/.well-known/oauth-protected-resource/mcp"'
            in bare.headers["www-authenticate"]
        )
        wrong = await c.get(
            "/mcp/", headers={"authorization": "Bearer " + issuer.token("a", "http://x/")}
        )
        assert wrong.status_code == 401
        nosc = await c.get(
            "/mcp/", headers={"authorization": "Bearer " + issuer.token("a", RES, scope="profile")}
        )
        assert nosc.status_code == 403 and "insufficient_scope" in nosc.headers["www-authenticate"]
        ok = await c.get("/mcp/", headers={"authorization": "Bearer " + issuer.token("alice", RES)})
        assert (ok.status_code, ok.text) == (200, "hello alice")
        for path in (
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-protected-resource",
        ):
            meta = (await c.get(path)).json()
            assert meta["resource"] == RES
            assert meta["authorization_servers"] == [issuer.url]
            assert meta["scopes_supported"] == ["imprint:read", "imprint:write"]
