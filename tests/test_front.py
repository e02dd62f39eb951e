"""The daemon's static front on its own: which requests it answers from the handshake
snapshot, that each of those is one the SDK answers with the same result, and that it
passes every other line on to the SDK session behind it (read here from its pipe)."""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import pytest

from imprint.actors.lifecycle import Runtime
from imprint.config import Config
from imprint.daemon import _accepts
from imprint.daemon.front import Front
from imprint.server import build_server, load_handshake, session_replies
from tests.support.wire import initialize_request

pytestmark = pytest.mark.timeout(120)

MODERN = "2026-07-28"
PV = "io.modelcontextprotocol/protocolVersion"
CAPS = "io.modelcontextprotocol/clientCapabilities"
INFO = "io.modelcontextprotocol/clientInfo"
LEVEL = "io.modelcontextprotocol/logLevel"
ENVELOPE = {PV: MODERN, CAPS: {}, INFO: {"name": "front-test", "version": "1"}}
# Envelopes of real 2026 clients: each must take the fast path.
ANSWERED = [
    ENVELOPE,
    {PV: MODERN, CAPS: {}},
    {**ENVELOPE, LEVEL: "info", "progressToken": "t1"},
    {**ENVELOPE, "progressToken": 7, "com.example/trace": [1, 2]},
    {
        **ENVELOPE,
        CAPS: {
            "roots": {"listChanged": True},
            "sampling": {"tools": {}},
            "elicitation": {"form": {}, "url": {}},
            "extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html"]}},
            "experimental": {"x": {}},
            "com.example/own": 5,
        },
        INFO: {"name": "c", "version": "1", "title": "C", "websiteUrl": "https://c.example"},
    },
]
# Envelopes the SDK refuses: each must go to it, which answers in its own words.
REFUSED = [
    {**ENVELOPE, PV: "2027-01-01"},
    {**ENVELOPE, PV: 20260728},
    {PV: MODERN, INFO: {"name": "c", "version": "1"}},
    {**ENVELOPE, CAPS: []},
    {**ENVELOPE, CAPS: {"sampling": 5}},
    {**ENVELOPE, CAPS: {"elicitation": {"form": True}}},
    {**ENVELOPE, CAPS: {"roots": True}},
    {**ENVELOPE, INFO: {"name": 1, "version": "1"}},
    {**ENVELOPE, INFO: {"name": "c"}},
    {**ENVELOPE, INFO: {"name": "c", "version": "1", "title": 3}},
    {**ENVELOPE, LEVEL: "loud"},
    {**ENVELOPE, "progressToken": 1.5},
]
# Envelopes the SDK accepts that the front, checking less than the SDK does, leaves to it.
LEFT_TO_THE_SDK = [
    {**ENVELOPE, INFO: {"name": "c", "version": "1", "icons": [{"src": "x"}]}},
    {**ENVELOPE, "progressToken": True},
]


def _snapshot() -> dict[str, Any]:
    snapshot = load_handshake()
    assert snapshot is not None
    return snapshot


def test_the_fronts_envelope_keys_and_log_levels_are_the_sdks() -> None:
    """The front reads `_meta` without importing MCP: its key names and log levels are the
    ones the installed SDK uses."""
    import mcp_types

    assert _accepts.PROTOCOL_VERSION_KEY == mcp_types.PROTOCOL_VERSION_META_KEY
    assert _accepts.CLIENT_CAPABILITIES_KEY == mcp_types.CLIENT_CAPABILITIES_META_KEY
    assert _accepts.CLIENT_INFO_KEY == mcp_types.CLIENT_INFO_META_KEY
    assert _accepts.LOG_LEVEL_KEY == mcp_types.LOG_LEVEL_META_KEY
    assert set(get_args(mcp_types.LoggingLevel)) == _accepts.LOG_LEVELS


def test_every_2026_request_the_front_answers_gets_that_answer_from_the_sdk() -> None:
    """For server/discover and tools/list under each envelope: where the front answers from
    the snapshot, a live SDK session answers the same result; real clients' envelopes are
    answered; envelopes the SDK refuses (and a cursor or another param) are passed on."""
    snapshot = _snapshot()
    served = snapshot["modern"]
    cases = [
        (method, {"_meta": meta})
        for method in ("server/discover", "tools/list")
        for meta in [*ANSWERED, *REFUSED, *LEFT_TO_THE_SDK]
    ]
    cases += [
        ("tools/list", {"_meta": ENVELOPE, "cursor": "x"}),
        ("server/discover", {"_meta": ENVELOPE, "extra": 1}),
        ("tools/list", {"_meta": "envelope"}),
        ("tools/list", {}),
    ]
    requests = [
        {"jsonrpc": "2.0", "id": n, "method": method, "params": params}
        for n, (method, params) in enumerate(cases)
    ]
    server = build_server(Runtime(Path(os.devnull), Config()))
    replies = session_replies(server, requests)
    answered = []
    for request in requests:
        version = _accepts.modern_version(request["params"], served)
        reply = replies[request["id"]]
        if version is not None:
            answered.append(request["params"]["_meta"])
            assert reply.get("result") == served[version][request["method"]], request
        elif request["params"].get("_meta") in REFUSED:
            assert "error" in reply, request
    assert answered == ANSWERED + ANSWERED


def test_every_handshake_tools_list_the_front_answers_gets_that_answer_from_the_sdk() -> None:
    """After `initialize`, each tools/list the front answers from the snapshot gets the same
    list from a live SDK session; one carrying the 2026 envelope (which the SDK refuses on a
    handshake session) or a bad progress token is passed on."""
    snapshot = _snapshot()
    init = initialize_request("front-test")
    variants: list[Any] = [
        None,
        {},
        {"_meta": None},
        {"_meta": {}},
        {"_meta": {"progressToken": "p"}},
        {"_meta": {"progressToken": 3}},
        {"_meta": 5},
        {"_meta": {"progressToken": 1.5}},
        {"_meta": ENVELOPE},
        {"cursor": "x"},
    ]
    requests: list[dict[str, Any]] = [
        init,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    for n, params in enumerate(variants, start=2):
        request = {"jsonrpc": "2.0", "id": n, "method": "tools/list"}
        requests.append(request if params is None else {**request, "params": params})
    server = build_server(Runtime(Path(os.devnull), Config()))
    replies = session_replies(server, requests)
    listed = snapshot["versions"][init["params"]["protocolVersion"]]["tools/list"]
    answered = [n for n, p in enumerate(variants, start=2) if _accepts.legacy_plain_list(p)]
    assert answered == [2, 3, 4, 5, 6, 7]
    for n in answered:
        assert replies[n]["result"] == listed, variants[n - 2]
    assert [n for n in range(2, len(variants) + 2) if "error" in replies[n]] == [8, 9, 10]


class _Wire:
    """A front over a socket pair, seen from both sides: the client's socket and what it
    reads, and what the SDK session behind the front reads."""

    def __init__(self) -> None:
        self._ours, self.client = socket.socketpair()
        self.client.settimeout(30)  # a bound for a failing test, never reached by a passing one
        self.front = Front(self._ours, self._ours.makefile("rb"), _snapshot())
        self.replies = self.client.makefile("rb")
        self.passed = open(os.dup(self.front.reader.fileno()), "rb")  # noqa: SIM115

    def rest(self) -> bytes:
        """Every byte the front still sent the client, once the daemon side is shut."""
        self._ours.shutdown(socket.SHUT_RDWR)
        return self.replies.read()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._ours.shutdown(socket.SHUT_RDWR)
        self.front.close()
        for closable in (self.passed, self.replies, self._ours, self.client):
            closable.close()


@contextlib.contextmanager
def _front() -> Iterator[_Wire]:
    wire = _Wire()
    try:
        yield wire
    finally:
        wire.close()


def _line(message: dict[str, Any]) -> bytes:
    return (json.dumps(message) + "\n").encode()


def _request(rid: object, method: str, meta: object = ENVELOPE, **params: object) -> bytes:
    return _line(
        {"jsonrpc": "2.0", "id": rid, "method": method, "params": {"_meta": meta, **params}}
    )


def test_a_2026_opening_is_answered_and_replayed_and_what_it_cannot_answer_is_passed_on() -> None:
    """A 2026 client's server/discover is answered from the snapshot (its id echoed) and
    replayed to the SDK session; a later discover and plain tools/list are answered and not
    passed on; a tools/list with a cursor, one without the envelope, an `initialize` and a
    tool call go to the SDK session, in order."""
    served = _snapshot()["modern"][MODERN]
    with _front() as wire:
        client, client_reads, passed = wire.client, wire.replies, wire.passed
        opening = _request("d-1", "server/discover")
        client.sendall(opening)
        assert json.loads(client_reads.readline()) == {
            "jsonrpc": "2.0",
            "id": "d-1",
            "result": served["server/discover"],
        }
        assert passed.readline() == opening
        client.sendall(_request(2, "tools/list") + _request(3, "server/discover"))
        assert json.loads(client_reads.readline())["result"] == served["tools/list"]
        assert json.loads(client_reads.readline())["id"] == 3
        later = [
            _request(4, "tools/list", cursor="x"),
            _line({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}),
            _line(initialize_request("front-test")),
            _request(6, "tools/call", name="status", arguments={}),
        ]
        client.sendall(b"".join(later))
        assert [passed.readline() for _ in later] == later
        assert wire.rest() == b""


def test_a_handshake_session_passes_an_enveloped_tools_list_to_the_sdk() -> None:
    """After the static `initialize`, a plain tools/list is answered from the snapshot, but
    one carrying the 2026 envelope goes to the SDK session (which refuses it on a handshake
    session), as does a server/discover."""
    init = initialize_request("front-test")
    listed = _snapshot()["versions"][init["params"]["protocolVersion"]]["tools/list"]
    with _front() as wire:
        client, client_reads, passed = wire.client, wire.replies, wire.passed
        client.sendall(_line(init))
        assert json.loads(client_reads.readline())["id"] == 1
        assert json.loads(passed.readline()) == init
        client.sendall(_line({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        assert json.loads(client_reads.readline()) == {"jsonrpc": "2.0", "id": 2, "result": listed}
        later = [_request(3, "tools/list"), _request(4, "server/discover")]
        client.sendall(b"".join(later))
        assert [passed.readline() for _ in later] == later
        assert wire.rest() == b""


@pytest.mark.parametrize(
    "opening",
    [
        _request(1, "tools/list", cursor="x"),
        _request(1, "tools/list", meta={**ENVELOPE, PV: "2027-01-01"}),
        _request(1, "tools/call", name="status", arguments={}),
        _line({"jsonrpc": "2.0", "id": 1, "method": "server/discover"}),
        _line({"id": 1, "method": "server/discover", "params": {"_meta": ENVELOPE}}),
        _line(
            {
                "jsonrpc": "2.0",
                "id": 1.5,
                "method": "server/discover",
                "params": {"_meta": ENVELOPE},
            }
        ),
        _line({**initialize_request("front-test"), "id": True}),
    ],
    ids=[
        "cursor",
        "unknown-version",
        "tool-call",
        "no-envelope",
        "no-jsonrpc",
        "float-id",
        "bool-id",
    ],
)
def test_an_opening_the_front_cannot_answer_as_the_sdk_would_is_passed_on(opening: bytes) -> None:
    """An opening the snapshot does not answer exactly as the SDK would (a cursor, a version
    it lacks, another method, no envelope, not a JSON-RPC request the SDK reads) goes to the
    SDK session, and so does a plain tools/list after it."""
    with _front() as wire:
        follow = _line({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        again = _request(3, "tools/list")
        wire.client.sendall(opening + follow + again)
        assert [wire.passed.readline() for _ in range(3)] == [opening, follow, again]
        assert wire.rest() == b""
