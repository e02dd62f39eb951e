"""Every method the server answers fails with the JSON-RPC code the MCP spec gives it and
one line saying why (issue 28, item 4), over a real newline-delimited session."""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from imprint.actors.lifecycle import Runtime
from imprint.config import Config
from imprint.server import build_server, serve_lines

INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601


class Lines:
    """A client writing raw JSON-RPC lines to one `serve_lines` session."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._reader = sock.makefile("rb")
        self._next = 0

    def ask(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self._next += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next, "method": method}
        if params is not None:
            message["params"] = params
        self._sock.sendall((json.dumps(message) + "\n").encode())
        while True:
            reply = json.loads(self._reader.readline())
            if reply.get("id") == self._next:
                return dict(reply)

    def error(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        reply = self.ask(method, params)
        assert "error" in reply, reply
        error = dict(reply["error"])
        assert "\n" not in error["message"]
        return error


@pytest.fixture
def lines() -> Iterator[Lines]:
    """An initialized session of a server with every tool (an unstarted runtime: these
    requests touch no store)."""
    server = build_server(Runtime(Path(os.devnull), Config()))
    ours, theirs = socket.socketpair()
    reader = ours.makefile("r", encoding="utf-8", newline="\n")
    writer = ours.makefile("w", encoding="utf-8", newline="\n")
    thread = threading.Thread(target=anyio.run, args=(serve_lines, server, reader, writer))
    thread.start()
    client = Lines(theirs)
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t"}}
    client.ask("initialize", {**init, "clientInfo": {"name": "t", "version": "1"}})
    theirs.sendall(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
    try:
        yield client
    finally:
        theirs.shutdown(socket.SHUT_WR)
        thread.join(timeout=30)
        for closable in (reader, writer, ours, theirs):
            closable.close()


def test_an_unknown_prompt_is_invalid_params_naming_it(lines: Lines) -> None:
    """prompts/get for a prompt the server lacks: -32602 naming the prompt (before: code 0)."""
    error = lines.error("prompts/get", {"name": "nope"})
    assert error["code"] == INVALID_PARAMS
    assert "unknown prompt 'nope'" in error["message"]


def test_an_unknown_resource_is_invalid_params(lines: Lines) -> None:
    """resources/read of a resource the server lacks: -32602 naming the URI."""
    error = lines.error("resources/read", {"uri": "file:///nowhere"})
    assert error["code"] == INVALID_PARAMS
    assert "file:///nowhere" in error["message"]


def test_an_unknown_tool_is_invalid_params(lines: Lines) -> None:
    """tools/call of a tool the server lacks: the spec's protocol error -32602 naming it,
    not a tool result."""
    error = lines.error("tools/call", {"name": "nope", "arguments": {}})
    assert error["code"] == INVALID_PARAMS
    assert "unknown tool 'nope'" in error["message"]


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("no/such/method", {}),
        (
            "completion/complete",
            {"ref": {"type": "ref/prompt", "name": "x"}, "argument": {"name": "a", "value": ""}},
        ),
        ("logging/setLevel", {"level": "debug"}),
        ("resources/subscribe", {"uri": "file:///x"}),
    ],
)
def test_a_method_not_offered_is_method_not_found_in_one_clear_line(
    lines: Lines, method: str, params: dict[str, Any]
) -> None:
    """A method the server does not offer: -32601 whose message names the method and what
    the server does answer (before: a bare "Method not found")."""
    error = lines.error(method, params)
    assert error["code"] == METHOD_NOT_FOUND
    assert repr(method) in error["message"] and "tools/list" in error["message"]


def test_unreadable_params_name_the_argument(lines: Lines) -> None:
    """tools/list with a cursor that is not a string: -32602 naming `cursor` (before:
    "Invalid request parameters" with nothing named)."""
    error = lines.error("tools/list", {"cursor": 5})
    assert error["code"] == INVALID_PARAMS
    assert "cursor" in error["message"]


def test_the_methods_offered_still_answer(lines: Lines) -> None:
    """ping and the lists answer results: the briefing as the one prompt and the one
    resource template (no fixed resources), and tools/list all 17 tools."""
    assert lines.ask("ping")["result"] == {}
    prompts = lines.ask("prompts/list")["result"]["prompts"]
    assert [p["name"] for p in prompts] == ["briefing"]
    assert [a["name"] for a in prompts[0]["arguments"]] == ["project"]
    assert lines.ask("resources/list")["result"]["resources"] == []
    templates = lines.ask("resources/templates/list")["result"]["resourceTemplates"]
    assert [t["uriTemplate"] for t in templates] == ["imprint://briefing/{project}"]
    assert len(lines.ask("tools/list")["result"]["tools"]) == 17
