"""`imprint status` and the dashboard's overview show, per client, the last capture and the
hook failures, read from the hooks state file and the capture worker's counts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient
from typer.testing import CliRunner

from imprint.cli import app as cli_app
from imprint.dashboard import Guard, build_app
from imprint.hooklib.queue import capture_dir
from imprint.hooklib.state import record_run
from imprint.reads.hook_report import client_hooks, hooks_lines, when
from imprint.store.embedder import Embedder
from tests.support.dashboard_support import ingested_runtime, owner

CAPTURED_AT = 1_790_000_000.0


def _history(root: Path) -> None:
    """A claude-code session start that timed out, a stop and a session end that worked,
    three captures counted by the worker, and a gemini session start that worked."""
    record_run(root, "claude-code", "session-start", error="no answer within 1500 ms")
    record_run(root, "claude-code", "stop", elapsed_ms=12)
    record_run(root, "claude-code", "session-end", elapsed_ms=15)
    record_run(root, "gemini", "session-start", elapsed_ms=90)
    row = {"captures": 3, "turns": 7, "failures": 1, "last_capture_at": CAPTURED_AT}
    stats = {"claude-code": {**row, "last_error": "no transcript"}}
    (capture_dir(root) / "clients.json").write_text(json.dumps(stats))


def test_client_hooks_counts_runs_failures_and_the_last_capture(tmp_path: Path) -> None:
    """Per client: every event's runs and failures summed, the newest failure with its
    event and reason, and the worker's capture counts; clients in the client order."""
    _history(tmp_path)
    claude, gemini = client_hooks(tmp_path)
    assert (claude.client, claude.runs, claude.failures) == ("claude-code", 3, 1)
    assert claude.last_error == "session-start: no answer within 1500 ms"
    assert (claude.captures, claude.turns, claude.last_capture) == (3, 7, CAPTURED_AT)
    assert (claude.capture_failures, claude.last_capture_error) == (1, "no transcript")
    assert (gemini.client, gemini.runs, gemini.failures, gemini.last_capture) == (
        "gemini", 1, 0, None,
    )  # fmt: skip


def test_hooks_lines_name_the_last_capture_and_each_failure(tmp_path: Path) -> None:
    """The status section: a line per client with its last capture, and lines naming the
    last hook failure and the failed captures; nothing at all when no hook has run."""
    assert hooks_lines(client_hooks(tmp_path)) == []
    _history(tmp_path)
    lines = hooks_lines(client_hooks(tmp_path))
    assert lines[0] == "hooks:"
    assert lines[1] == (
        f"  claude-code: last capture {when(CAPTURED_AT)} (3 captures, 7 turns); "
        "3 hook runs, 1 failed"
    )
    assert lines[2].startswith("    last hook failure ")
    assert lines[2].endswith(": session-start: no answer within 1500 ms")
    assert lines[3] == "    1 captures failed, the last: no transcript"
    assert lines[4] == "  gemini: last capture never (0 captures, 0 turns); 1 hook runs, 0 failed"


def test_imprint_status_ends_with_the_hooks_section(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`imprint status` (no daemon) prints the store's status, then the hooks section."""
    root = tmp_path / "data"
    monkeypatch.setenv("IMPRINT_DATA_DIR", str(root))
    _history(root)
    result = CliRunner().invoke(cli_app, ["status"])
    assert result.exit_code == 0, result.output
    out = result.output.splitlines()
    at = out.index("hooks:")
    assert out[at:] == hooks_lines(client_hooks(root))


@pytest.fixture
def overview(tmp_path: Path, embedder: Embedder, small_tree: Path) -> Iterator[str]:
    """The overview page's HTML with the hook history of `_history` in the data dir."""
    with ingested_runtime(tmp_path / "data", small_tree, embedder) as runtime:
        _history(runtime.data_dir)
        guard = Guard(8767)
        app = build_app(runtime, guard, owner(), cwd=small_tree)
        with TestClient(app, base_url="http://127.0.0.1:8767") as client:
            page = client.get(f"/?token={guard.issue_token()}")
            assert page.status_code == 200, page.text
            yield page.text


def test_dashboard_overview_shows_each_clients_last_capture_and_failures(overview: str) -> None:
    """The overview's hooks table: a row per client with its captures, hook runs, failures
    and the last failure's event and reason."""
    assert "<h2>hooks</h2>" in overview
    assert "<td>claude-code</td>" in overview and "<td>gemini</td>" in overview
    assert "3 (7 turns, " in overview and "1 failed: no transcript" in overview
    assert "session-start: no answer within 1500 ms" in overview
