"""`imprint serve --http --database URL --issuer ISS --resource RES`: bad arguments are one
line naming the option, before anything starts; the team keys are configuration keys; the
write-scope gate reads which tools a JSON-RPC body calls."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from imprint.cli import app
from imprint.config import Config

pytest.importorskip("psycopg")

from imprint.server.team_server import _tool_calls

DB = "postgresql://postgres@127.0.0.1:1/postgres"  # nothing listens: never reached


@pytest.mark.parametrize(
    ("argv", "start"),
    [
        (["serve", "--database", DB], "--database: only with --http"),
        (["serve", "--http", "--issuer", "http://iss.test"], "--database: give"),
        (
            ["serve", "--http", "--database", DB, "--issuer", "iss", "--resource", "http://r/mcp"],
            "--issuer: 'iss' is not an http(s) URL",
        ),
        (
            ["serve", "--http", "--database", DB, "--issuer", "http://i.test", "--resource", ""],
            "--resource: '' is not an http(s) URL",
        ),
        (
            ["serve", "--http", "--database", DB, "--dev-issuer", "--issuer", "http://i.test"],
            "--dev-issuer: not with --issuer",
        ),
    ],
)
def test_bad_team_server_arguments_are_one_line(argv: list[str], start: str) -> None:
    """Each refusal names its option in one line, and nothing is served."""
    result = CliRunner().invoke(app, argv)
    assert result.exit_code != 0
    line = str(result.exception)
    assert line.startswith(start) and "\n" not in line, line


def test_the_team_keys_are_configuration_keys() -> None:
    """team.database (secret), team.issuer, team.resource, team.teams_claim, team.host."""
    team = Config().team
    assert (team.database, team.issuer, team.resource) == ("", "", "")
    assert (team.teams_claim, team.host) == ("groups", "127.0.0.1")
    from imprint.config import SECRET_KEYS

    assert "team.database" in SECRET_KEYS


def test_the_gate_finds_the_tools_a_body_calls() -> None:
    """One call, a batch, anything else: the tool names called, nothing for the rest."""
    one = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"store"}}'
    batch = b'[{"method":"tools/call","params":{"name":"delete"}},{"method":"tools/list"}]'
    assert _tool_calls(one) == ["store"]
    assert _tool_calls(batch) == ["delete"]
    assert _tool_calls(b"not json") == [] and _tool_calls(b'{"method":"tools/list"}') == []
    assert _tool_calls(b'{"method":"tools/call","params":{"name":7}}') == []


def test_each_call_opens_only_a_workspace_of_the_token_and_writes_need_the_scope() -> None:
    """Behind the HTTP gate, the tools check again: a read-only token's write is one line,
    another user's workspace is one line, the caller's own and team workspaces open, each
    write recorded as the token's subject."""
    from types import SimpleNamespace
    from typing import Any

    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
    from mcp.server.auth.provider import AccessToken

    from imprint.errors import InputError
    from imprint.server.team_server import PoolAccess

    def ctx(scopes: list[str]) -> Any:
        token = AccessToken(
            token="t", client_id="c", scopes=scopes, subject="ann",
            claims={"sub": "ann", "groups": ["core"]},
        )  # fmt: skip
        request = SimpleNamespace(user=AuthenticatedUser(token))
        return SimpleNamespace(request_context=SimpleNamespace(request=request))

    access = PoolAccess(pool=None, embedder=None, teams_claim="groups")  # type: ignore[arg-type]
    reader, writer = ctx(["imprint:read"]), ctx(["imprint:read", "imprint:write"])
    with pytest.raises(InputError, match=r"^authorization: this token lacks imprint:write"):
        access.open(reader, "", write=True)
    with pytest.raises(InputError, match=r"^workspace: 'user:bob' is not one of yours"):
        access.open(writer, "user:bob", write=True)
    own = access.open(writer, "", write=True)
    team = access.open(reader, "team:core", write=False)
    assert (own.store.name, own.actor, team.store.name) == ("user:ann", "ann", "team:core")
    assert own.workspaces == ("user:ann", "team:core") and own.redact
    anonymous: Any = SimpleNamespace(request_context=SimpleNamespace(request=SimpleNamespace()))
    with pytest.raises(InputError, match=r"^authorization: no token"):
        access.open(anonymous, "", write=False)
