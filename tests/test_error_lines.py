"""Failures that are not Imprint's bugs say one line naming what failed and what to do, over
MCP, in the dashboard and from the configuration; nothing is changed and the server goes on
(issue 26, finding 8). A bug still names its tool and class, and logs its traceback."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog
from starlette.testclient import TestClient

from imprint.actors.lifecycle import Runtime
from imprint.config import Config, config_path, load_config, set_value
from imprint.dashboard import Guard, build_app
from imprint.errors import ConfigError, InputError
from imprint.recall.plan import parse_plan
from imprint.store.embedder import Embedder
from tests.support.dashboard_support import owner
from tests.support.tools import Session

DEEP = 5000  # a recall plan of 5,000 nested lists: past Python's recursion limit


def _one_line(text: str) -> str:
    assert "\n" not in text.strip(), text
    assert "Error executing tool" not in text and "Traceback" not in text, text
    return text


# -- config.toml ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b'search.limit = "\xff"\n', "is not UTF-8 text"),
        (b"x = " + b"[" * DEEP + b"]" * DEEP + b"\n", "nested too deeply"),
        (None, "is a folder, not a file"),
    ],
    ids=["invalid-utf8", "deep-nesting", "folder"],
)
def test_a_config_file_that_cannot_be_read_is_one_line(
    tmp_path: Path, content: bytes | None, said: str
) -> None:
    """config.toml with invalid UTF-8, nested deeper than tomllib reads, or a folder in its
    place: a one-line ConfigError naming the file (before: UnicodeDecodeError,
    RecursionError, IsADirectoryError tracebacks); `config set` changes nothing."""
    path = config_path(tmp_path)
    if content is None:
        path.mkdir(parents=True)
    else:
        path.write_bytes(content)
    with pytest.raises(ConfigError) as raised:
        load_config(tmp_path, environ={})
    message = _one_line(str(raised.value))
    assert message.startswith(f"config: {path} ") and said in message
    with pytest.raises(ConfigError):
        set_value(tmp_path, "search.limit", "5")
    assert path.is_dir() if content is None else path.read_bytes() == content


# -- the workspace's SQLite file -----------------------------------------------------------


@pytest.fixture
def stored(tmp_path: Path, embedder: Embedder) -> Path:
    """A data dir holding one memory in the default workspace; no runtime left running."""
    data = tmp_path / "data"
    runtime = Runtime(data, Config(), embedder=embedder).start()
    try:
        Session(runtime, tmp_path).ok("store", content="the kittiwake nests on ledges")
    finally:
        runtime.stop()
    return data


def _damage(db: Path, how: str) -> None:
    if how == "half":
        db.write_bytes(db.read_bytes()[: db.stat().st_size // 2])
    elif how == "100-bytes":
        db.write_bytes(db.read_bytes()[:100])
    else:  # the second page (the records table's root) overwritten: opens, fails on reading
        data = bytearray(db.read_bytes())
        data[4096:8192] = b"\xff" * 4096
        db.write_bytes(bytes(data))


@pytest.mark.parametrize("how", ["half", "100-bytes", "second-page"])
def test_a_damaged_sqlite_file_is_a_one_line_tool_error(
    stored: Path, tmp_path: Path, embedder: Embedder, how: str
) -> None:
    """A truncated or overwritten imprint.sqlite3: status, status --check, search and store
    each answer one line naming the file and what to do (before: `Error executing tool
    <name>`); the file is left byte for byte as it was, and the server keeps serving."""
    db = stored / "workspaces" / "default" / "imprint.sqlite3"
    _damage(db, how)
    before = db.read_bytes()
    runtime = Runtime(stored, Config(), embedder=embedder).start()
    try:
        session = Session(runtime, tmp_path)
        calls: list[tuple[str, dict[str, object]]] = [
            ("status", {}),
            ("status", {"check": True}),
            ("search", {"query": "kittiwake"}),
            ("store", {"content": "a gannet dives"}),
        ]
        for tool, args in calls:
            message = _one_line(session.error(tool, **args))
            assert "imprint.sqlite3" in message and "backup" in message, (tool, message)
        assert db.read_bytes() == before
        # The server still serves: another workspace works, and so does this one once
        # its file is back.
        assert session.ok("store", content="a gannet dives", workspace="other")
        db.write_bytes(before)
    finally:
        runtime.stop()


# -- arguments the store cannot take --------------------------------------------------------


@pytest.fixture
def session(tmp_path: Path, embedder: Embedder) -> Iterator[Session]:
    (tmp_path / "cwd").mkdir()
    runtime = Runtime(tmp_path / "data", Config(), embedder=embedder).start()
    try:
        yield Session(runtime, tmp_path / "cwd")
    finally:
        runtime.stop()


def test_a_nul_in_ingest_path_is_a_one_line_error(session: Session) -> None:
    """ingest_path {"path": "\\u0000"} names the argument (before: `Error executing tool
    ingest_path`, a ValueError from the file system)."""
    for path in ("\x00", "docs/\x00.md"):
        message = _one_line(session.error("ingest_path", path=path))
        assert message.startswith("path: ") and "NUL" in message


def test_a_deeply_nested_recall_plan_is_a_one_line_error(session: Session) -> None:
    """A plan of 5,000 nested lists is refused in one line naming plan and the depth
    allowed (before: RecursionError, `Error executing tool recall`); so is a parsed plan
    nested deeper than a plan can be, before anything walks it recursively."""
    message = _one_line(session.error("recall", question="q", plan="[" * DEEP + "]" * DEEP))
    assert message.startswith("plan: nested too deeply; at most 8 levels")
    nested: object = {"query": "x"}
    for _ in range(40):
        nested = [nested]
    with pytest.raises(InputError, match="nested too deeply"):
        parse_plan([{"tool": "search", "args": {"query": nested}}])
    assert parse_plan([{"tool": "search", "args": {"query": "ok"}}])


def test_a_store_after_the_chroma_folder_went_is_a_one_line_error(
    session: Session, tmp_path: Path
) -> None:
    """A store after the workspace's Chroma folder was deleted behind the server: one line
    naming the vector index and `imprint repair` (before: `Error executing tool store`);
    the acknowledged memory is still found."""
    stored = session.ok("store", content="the shearwater skims the swell").split()[1]
    shutil.rmtree(tmp_path / "data" / "workspaces" / "default" / "chroma")
    message = _one_line(session.error("store", content="the petrel patters"))
    assert "vector index (Chroma)" in message and "imprint repair" in message
    assert stored in session.ok("search", query="shearwater", mode="lexical")


def test_a_bug_names_its_tool_and_class_and_logs_the_traceback(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An exception that is not a store or input failure (a bug) answers one line with the
    tool, the class and the message, and its traceback is logged (not only
    `Error executing tool status`); the next call works. The bug is planted in the status
    row (IMPRINT_FAIL, imprint/_faults.py) for the first call only."""
    monkeypatch.setenv("IMPRINT_FAIL", "status.row:1")
    with structlog.testing.capture_logs() as logs:
        message = _one_line(session.error("status"))
    assert message.startswith("status: unexpected RuntimeError: failpoint status.row")
    crashed = [e for e in logs if e["event"] == "tool.crashed"]
    assert crashed and isinstance(crashed[0]["exc_info"], RuntimeError)
    assert session.ok("status").startswith("workspace default")


# -- the dashboard's plan validator ----------------------------------------------------------


def test_the_dashboard_refuses_deep_plans_in_one_line(tmp_path: Path, embedder: Embedder) -> None:
    """The recall form and its live validator on a 5,000-deep plan: a one-line refusal
    (form: 400; validator: its usual {"ok": false}), a 5,000-deep body: 400 (before: 500
    from a RecursionError)."""
    runtime = Runtime(tmp_path / "data", Config(), embedder=embedder).start()
    try:
        guard = Guard(8766)
        app = build_app(runtime, guard, owner(), cwd=tmp_path)
        with TestClient(app, base_url="http://127.0.0.1:8766") as client:
            assert client.get(f"/?token={guard.issue_token()}").status_code == 200
            headers = {"Origin": "http://127.0.0.1:8766", "X-CSRF-Token": guard.csrf}
            plan = "[" * DEEP + "]" * DEEP
            answer = client.post("/recall/validate", json={"plan": plan}, headers=headers)
            assert answer.status_code == 200
            assert answer.json()["ok"] is False
            assert _one_line(answer.json()["error"]).startswith("plan: nested too deeply")
            body = '{"plan": ' + "[" * DEEP + "]" * DEEP + "}"
            deep = client.post(
                "/recall/validate",
                content=body,
                headers={**headers, "Content-Type": "application/json"},
            )
            assert deep.status_code == 400 and deep.json()["ok"] is False
            form = client.post(
                "/recall",
                data={"csrf": guard.csrf, "question": "q", "plan": plan},
                headers={"Origin": "http://127.0.0.1:8766"},
            )
            assert form.status_code == 400 and "plan: nested too deeply" in form.text
    finally:
        runtime.stop()
