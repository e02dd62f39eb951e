"""The daemon's typed requests (`imprint.daemon.requests`) and its handler table: each request
read the way the daemon always read it, a wrong type refused as one DaemonError line before
the runtime is waited for, and every operation a hello may name answered by one handler."""

from __future__ import annotations

import json

import pytest

from imprint.daemon.handlers import HANDLERS
from imprint.daemon.hosting import answer_backup, answer_import, answer_status, answer_sync
from imprint.daemon.requests import (
    BackupRequest,
    CaptureRequest,
    DashboardRequest,
    HookAsk,
    ImportRequest,
    Request,
    SessionHello,
    StatusRequest,
    SyncRequest,
    WatchAsk,
    hello_line,
)
from imprint.errors import DaemonError, StoreError


def test_each_request_reads_its_fields_and_their_defaults() -> None:
    """A body with the fields gives them; an empty one the defaults (sync and import need
    their folder or file)."""
    assert StatusRequest.parse({"workspace": "w", "check": True}) == StatusRequest("w", True)
    assert StatusRequest.parse({}) == StatusRequest("", False)
    assert BackupRequest.parse({"dest": "/tmp/b"}).dest == "/tmp/b"
    assert BackupRequest.parse({}).dest == ""
    assert SyncRequest.parse({"dir": "/d", "all": 1}) == SyncRequest("/d", "", True)
    got = ImportRequest.parse({"path": "/f.jsonl", "workspace": "w", "replace": True})
    assert got == ImportRequest("/f.jsonl", "w", True)


@pytest.mark.parametrize(
    ("parse", "body", "message"),
    [
        (StatusRequest.parse, {"check": "yes"}, "status: workspace must be a string"),
        (StatusRequest.parse, {"workspace": 3}, "status: workspace must be a string"),
        (BackupRequest.parse, {"dest": ["x"]}, "backup: dest must be a folder path"),
        (SyncRequest.parse, {}, "sync: dir must be a folder path"),
        (SyncRequest.parse, {"dir": "/d", "workspace": 1}, "sync: dir must be a folder path"),
        (ImportRequest.parse, {"path": 1}, "import: path must be a file path"),
        (ImportRequest.parse, {"path": "/f", "replace": "no"}, "import: replace must be true"),
    ],
)
def test_a_wrong_type_is_one_daemon_error_naming_the_field(
    parse: object, body: dict[str, object], message: str
) -> None:
    """A request whose field has the wrong type is refused with the field's name; the error
    is a StoreError too, as the daemon's failures always were."""
    with pytest.raises(DaemonError, match=message) as info:
        parse(body)  # type: ignore[operator]
    assert isinstance(info.value, StoreError)


def test_a_refused_request_is_answered_before_the_runtime_is_waited_for() -> None:
    """The answer to a request that does not read is its error line, at once: the runtime
    (still starting, say) is never asked for."""

    def no_runtime(_timeout: float) -> object:
        raise AssertionError("the runtime was waited for")

    for answer, body in (
        (answer_status, {"check": "yes"}),
        (answer_backup, {"dest": 1}),
        (answer_sync, {"dir": ""}),
    ):
        reply = json.loads(answer(body, no_runtime))  # type: ignore[arg-type]
        assert set(reply) == {"error"}, reply
    sent: list[str] = []
    answer_import({"path": 1}, no_runtime, sent.append)  # type: ignore[arg-type]
    assert [set(json.loads(line)) for line in sent] == [{"error"}], sent


def test_every_operation_a_hello_names_has_one_handler_in_the_daemons_order() -> None:
    """The table holds the operations the daemon answers, in the order it looks for them
    (a hello naming two is answered by the first)."""
    assert list(HANDLERS) == [
        "dashboard",
        "capture",
        "status",
        "hook",
        "watch",
        "backup",
        "sync",
        "import",
    ]
    assert all(callable(handle) for handle in HANDLERS.values())


SERVES = {"data_dir": "/d", "id": "x"}

# Each typed request beside the dict the previous client sent for it.
_OLD_WIRE: list[tuple[Request, dict[str, object]]] = [
    (StatusRequest("w", True), {"status": {"workspace": "w", "check": True}}),
    (
        StatusRequest("", False, text=True),
        {"status": {"workspace": "", "check": False, "text": True}},
    ),
    (BackupRequest("/b"), {"backup": {"dest": "/b"}}),
    (SyncRequest("/s", "w", True), {"sync": {"dir": "/s", "workspace": "w", "all": True}}),
    (
        ImportRequest("/f.jsonl", "", False),
        {"import": {"path": "/f.jsonl", "workspace": "", "replace": False}},
    ),
    (DashboardRequest(8123), {"dashboard": {"port": 8123}}),
    (
        HookAsk({"event": "prompt-submit", "cwd": "/w"}),
        {"hook": {"event": "prompt-submit", "cwd": "/w"}},
    ),
    (WatchAsk({"op": "list"}), {"watch": {"op": "list"}}),
]


@pytest.mark.parametrize(("request_", "old"), _OLD_WIRE)
def test_a_typed_request_sends_the_bytes_the_old_dict_did(
    request_: Request, old: dict[str, object]
) -> None:
    """Old and new clients and daemons still talk: the line is the old dict's, byte for
    byte, and its operation is one the daemon's table answers."""
    want = (json.dumps({**old, "pid": 42, "serves": SERVES}) + "\n").encode()
    assert hello_line(request_, SERVES, 42) == want
    assert request_.op in HANDLERS


def test_a_poke_and_a_session_hello_send_the_old_bytes() -> None:
    poke = (json.dumps({"capture": {}, "serves": SERVES}) + "\n").encode()
    assert hello_line(CaptureRequest(), SERVES) == poke
    fields = {"cwd": "/w", "pid": 7, "roots": ["/r"], "serves": SERVES}
    assert SessionHello("/w", 7, ["/r"], SERVES).line() == (json.dumps(fields) + "\n").encode()
    closed = {**fields, "cwd_root": False}
    assert (
        SessionHello("/w", 7, ["/r"], SERVES, cwd_root=False).line()
        == (json.dumps(closed) + "\n").encode()
    )


@pytest.mark.parametrize(
    "request_", [r for r, _ in _OLD_WIRE if hasattr(r, "parse")], ids=lambda r: r.op
)
def test_the_daemon_reads_an_old_clients_dict_as_the_type_the_new_one_sends(
    request_: StatusRequest | BackupRequest | SyncRequest | ImportRequest,
) -> None:
    """What an old client sent (a hand-built dict, as it reaches the handler) parses to
    the very request a new client builds."""
    old = dict(next(o for r, o in _OLD_WIRE if r is request_))
    body = old[request_.op]
    assert isinstance(body, dict)
    assert type(request_).parse(body) == request_
