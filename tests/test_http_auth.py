"""The HTTP transport's refusals in the shape OAuth-aware MCP clients parse (issue 28,
item 2): JSON bodies, RFC 6750 challenges, and OAuth discovery answered at once."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from imprint.actors.lifecycle import Runtime
from imprint.config import Config
from imprint.server import build_server, http_app

PORT = 8766
BASE = f"http://127.0.0.1:{PORT}"
TOKEN = "t" * 43
TOKEN_FILE = Path("/home/someone/.local/share/imprint/http_token")
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


@pytest.fixture
def client() -> Iterator[TestClient]:
    """The ASGI app `serve --http` runs, with its lifespan (an unstarted runtime: nothing
    here touches the store)."""
    server = build_server(Runtime(Path(os.devnull), Config()))
    app = http_app(server, PORT, TOKEN, TOKEN_FILE)
    with TestClient(app, base_url=BASE) as test_client:
        yield test_client


def _names_the_token(text: str) -> bool:
    """The hint names the token's file and the header, never where the data dir is."""
    return "http_token" in text and "Authorization header" in text and "/home" not in text


def test_no_refusal_names_a_local_path(client: TestClient) -> None:
    """Issue 43 (low): a 401 (no token, a wrong one) or a 404 (OAuth discovery) names no
    local path, neither in its body nor in its challenge: only the token file's name, in
    the data dir (whose path `serve --http` prints on its own terminal)."""
    answers = [
        client.post("/mcp", json=INIT, headers=ACCEPT),
        client.post("/mcp", json=INIT, headers={**ACCEPT, "Authorization": "Bearer no"}),
        client.get("/.well-known/oauth-protected-resource"),
        client.post("/register", json={}),
    ]
    for answer in answers:
        assert answer.status_code in (401, 404)
        shown = answer.text + answer.headers.get("www-authenticate", "")
        for part in ("/home", "someone", ".local", "share/imprint"):
            assert part not in shown, (part, shown)
        assert "http_token" in answer.json()["error_description"]


def test_no_header_gets_a_json_401_and_a_bare_bearer_challenge(client: TestClient) -> None:
    """No Authorization header: 401, a JSON body whose error_description names the token
    file and the header, and `WWW-Authenticate: Bearer realm="imprint"` without an error
    code (RFC 6750 3.1). Before: plain text `Unauthorized: ...{data_dir}/http_token`."""
    answer = client.post("/mcp", json=INIT, headers=ACCEPT)
    assert answer.status_code == 401
    assert answer.headers["content-type"].startswith("application/json")
    body = answer.json()
    assert body["error"] == "invalid_token"
    assert _names_the_token(body["error_description"])
    assert answer.headers["www-authenticate"] == 'Bearer realm="imprint"'


@pytest.mark.parametrize("auth", [f"Bearer {'x' * 43}", "Bearer ", f"bearer {TOKEN}x"])
def test_a_wrong_token_gets_invalid_token_with_the_hint_in_the_challenge(
    client: TestClient, auth: str
) -> None:
    """A wrong bearer token: 401, JSON body, and a challenge with
    error="invalid_token" and the hint as error_description."""
    answer = client.post("/mcp", json=INIT, headers={**ACCEPT, "Authorization": auth})
    assert answer.status_code == 401
    assert answer.json()["error"] == "invalid_token"
    challenge = answer.headers["www-authenticate"]
    assert challenge.startswith('Bearer realm="imprint", error="invalid_token", ')
    assert 'error_description="' in challenge and _names_the_token(challenge)


@pytest.mark.parametrize(
    "path",
    [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-authorization-server",
        "/.well-known/oauth-authorization-server/mcp",
        "/.well-known/openid-configuration",
        "/register",
    ],
)
@pytest.mark.parametrize("method", ["GET", "POST"])
def test_oauth_discovery_is_answered_404_with_the_token_hint(
    client: TestClient, path: str, method: str
) -> None:
    """OAuth discovery and registration: 404 with a JSON body naming the token, so a
    client fails at once with Imprint's message (before: 401 plain text, which Claude Code
    could not parse and mcp-remote waited on)."""
    answer = client.request(method, path, json={} if method == "POST" else None)
    assert answer.status_code == 404
    assert _names_the_token(answer.json()["error_description"])


def test_another_scheme_gets_the_bare_challenge(client: TestClient) -> None:
    """`Basic ...` is no bearer token at all: the bare challenge (RFC 6750 3.1), the hint in
    the JSON body."""
    answer = client.post("/mcp", json=INIT, headers={**ACCEPT, "Authorization": "Basic eA=="})
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"] == 'Bearer realm="imprint"'
    assert _names_the_token(answer.json()["error_description"])


def test_the_right_token_still_reaches_the_server(client: TestClient) -> None:
    """With the token the session answers initialize as before."""
    headers = {**ACCEPT, "Authorization": f"Bearer {TOKEN}"}
    answer = client.post("/mcp", json=INIT, headers=headers)
    assert answer.status_code == 200, answer.text
    assert "imprint" in answer.text


def test_a_token_file_path_outside_latin_1_still_gives_a_valid_challenge() -> None:
    """A token file under a non-latin-1 folder: the challenge is still a header (and
    neither it nor the JSON body names the folder)."""
    server = build_server(Runtime(Path(os.devnull), Config()))
    odd = Path("/home/юзер/imprint/http_token")
    with TestClient(http_app(server, PORT, TOKEN, odd), base_url=BASE) as test_client:
        answer = test_client.post("/mcp", json=INIT, headers={"Authorization": "Bearer no"})
    assert answer.status_code == 401
    assert "юзер" not in answer.text and "http_token" in answer.json()["error_description"]
    assert "error_description=" in answer.headers["www-authenticate"]
