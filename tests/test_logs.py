"""Logs keep no user data: no locals in tracebacks, no query strings, no secrets; private files."""

from __future__ import annotations

import json
import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from imprint.logs import configure_logging, get_logger, log_path
from imprint.store.embedder import Embedder


@pytest.fixture
def logged(tmp_path: Path) -> Iterator[Path]:
    """A data dir for `_configure`; logging is reset to stderr-only afterwards."""
    try:
        yield tmp_path / "data"
    finally:
        configure_logging(None, to_file=False)


def _configure(data_dir: Path) -> None:
    # In the test body, not a fixture: pytest swaps capfd's stream between setup and call.
    configure_logging(data_dir, level="info")


def _flush() -> None:
    for handler in logging.getLogger().handlers:
        handler.flush()


def _crash_with(memory: str) -> None:
    query = f"what did I store about {memory}"  # a local the old renderers printed
    raise ValueError(f"lookup failed after {len(query)} characters")


def test_tracebacks_are_logged_without_local_variables(
    logged: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """An exception logged with its traceback shows the frames and the message, never a
    frame's local variables (memory contents, queries), in the JSON file and on stderr."""
    _configure(logged)
    log = get_logger("imprint.test")
    try:
        _crash_with("my bank PIN " + str(4400 + 17) + "-secret")  # not in the source line
    except ValueError:
        log.exception("tool.failed")
    _flush()
    text = log_path(logged).read_text(encoding="utf-8")
    err = capfd.readouterr().err
    assert "lookup failed after" in text and "_crash_with" in text
    assert "lookup failed after" in err and "_crash_with" in err
    assert "4417-secret" not in text
    assert "4417-secret" not in err
    record = json.loads(text.splitlines()[-1])
    assert all("locals" not in frame for exc in record["exception"] for frame in exc["frames"])


def test_mcp_info_lines_and_url_query_strings_stay_out(
    logged: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """The mcp library's INFO lines (failing tool calls with their text) are dropped; a URL's
    query string (access_token=...) is cut from any line that is kept."""
    _configure(logged)
    logging.getLogger("mcp.server.mcpserver.server").info(
        "Tool %r failed: %r", "ingest_url", "fetch https://h.example/a?access_token=tok-111"
    )
    get_logger("imprint.test").warning(
        "ingest_url.failed", url="https://h.example/page?access_token=tok-222&x=1#frag"
    )
    logging.getLogger("httpx").warning("GET http://127.0.0.1:9/x?key=tok-333 failed")
    _flush()
    text = log_path(logged).read_text(encoding="utf-8")
    err = capfd.readouterr().err
    for secret in ("tok-111", "tok-222", "tok-333"):
        assert secret not in text and secret not in err
    assert "https://h.example/page?..." in text  # the path stays: only the query goes
    assert "http://127.0.0.1:9/x?..." in err


def test_registered_secrets_and_secret_fields_are_masked(
    logged: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """An API key registered by a provider never appears, whatever carries it (an error
    text, a field); fields named like secrets show only whether they are set."""
    from imprint.logs import add_secret

    _configure(logged)
    add_secret("sk-live-abcdef123456")
    log = get_logger("imprint.test")
    log.warning("provider.failed", error="401 for key sk-live-abcdef123456", api_key="sk-other")
    _flush()
    text = log_path(logged).read_text(encoding="utf-8")
    err = capfd.readouterr().err
    for secret in ("sk-live-abcdef123456", "sk-other"):
        assert secret not in text and secret not in err
    record = json.loads(text.splitlines()[-1])
    assert record["error"] == "401 for key ***" and record["api_key"] == "set"


def test_console_log_lines_escape_control_and_bidi_characters(
    logged: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """A logged value holding a clear-screen and a bidi override (a file name) reaches
    stderr as visible escapes; a traceback keeps its line breaks; the JSON file holds no raw
    control or bidi character either."""
    _configure(logged)
    log = get_logger("imprint.test")
    log.warning("ingest.outside_roots", source="z\x1b[2J\u202eevil.md")
    try:
        raise ValueError("two\nlines")
    except ValueError:
        log.exception("tool.failed")
    _flush()
    err = capfd.readouterr().err
    assert "source=z\\x1b[2J\\u202eevil.md" in err
    assert "\x1b" not in err and "\u202e" not in err
    assert "Traceback (most recent call last):\n" in err
    text = log_path(logged).read_text(encoding="utf-8")
    assert all(c.isprintable() or c == "\n" for c in text)


def test_recall_logs_the_questions_length_and_hash_never_its_text(
    logged: Path, tmp_path: Path, embedder: Embedder
) -> None:
    """`recall.start` names the question by its length and a short hash only: the text
    (user data) is in neither the JSON log nor the trace built from it."""
    from imprint.actors.lifecycle import Runtime
    from imprint.config import Config
    from imprint.reads.gateway import ActorReads
    from imprint.recall.respond import RecallArgs, recall_text
    from imprint.trace import build_waterfall, read_recall_events

    _configure(logged)
    question = "where is the amethystvault passphrase kept"
    rt = Runtime(tmp_path / "store", Config(), embedder=embedder).start()
    try:
        recall_text(
            ActorReads(rt),
            RecallArgs(
                question=question, plan=[{"tool": "search", "args": {"query": "amethystvault"}}]
            ),
        )
    finally:
        rt.stop()
    _flush()
    text = log_path(logged).read_text(encoding="utf-8")
    assert "amethystvault" not in text
    ((rid, events),) = read_recall_events([log_path(logged)]).items()
    start = next(e for e in events if e["event"] == "recall.start")
    assert start["question_chars"] == len(question) and len(start["question_sha"]) == 12
    trace = build_waterfall(rid, events)
    assert trace.question == f"question of {len(question)} chars, sha {start['question_sha']}"


def test_log_folder_and_file_are_private_under_a_loose_umask(tmp_path: Path) -> None:
    """With umask 022 the log folder is still 0700 and the JSON file 0600."""
    old = os.umask(0o022)
    try:
        configure_logging(tmp_path / "data", level="warning")
        get_logger("imprint.test").warning("hello")
        _flush()
    finally:
        os.umask(old)
        configure_logging(None, to_file=False)
    path = log_path(tmp_path / "data")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "data").stat().st_mode) == 0o700
