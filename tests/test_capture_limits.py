"""Capture that always goes forward, and `hooks.exclude` that holds for every event source
(issue 43, findings 10 and 9) replayed.

Finding 10: a Claude Code line over MAX_READ_BYTES, or a Gemini CLI turn whose copies pass
it, stopped a session's capture for good with nothing counted; now capture passes over it,
goes on with what follows, and counts the skip where `imprint status` and `imprint hooks
status` show it. Finding 9: `capture --backfill` and a folder reached through a link were
captured although `hooks.exclude` names the folder; now the daemon judges every event on
the folder's resolved path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from imprint.actors.lifecycle import Runtime
from imprint.capture.session import load_state
from imprint.capture.transcript import MAX_READ_BYTES
from imprint.capture.worker import CaptureWorker
from imprint.daemon import Daemon
from imprint.hooklib.queue import client_stats, enqueue
from imprint.hooks.status import status_lines
from imprint.reads.hook_report import client_hooks, hooks_lines
from imprint.writes import Writes
from tests.support.capture_support import Transcript, session_records
from tests.support.dashboard import Dash

IMPRINT = str(Path(sys.executable).with_name("imprint"))
WAIT_SEC = 120.0


def _drain(rt: Runtime, event: dict[str, str]) -> CaptureWorker:
    """One hook's event queued and drained by the daemon's worker."""
    worker = CaptureWorker(rt.data_dir, lambda _timeout: rt)
    enqueue(rt.data_dir, event)
    worker.drain(Writes(rt))
    return worker


def _contents(rt: Runtime, project: str, sid: str) -> str:
    return " ".join(r.content for r in session_records(rt, project, f"session:{sid}"))


def test_a_claude_code_line_over_the_read_limit_is_passed_over_and_counted(
    tmp_path: Path, rt: Runtime
) -> None:
    """A turn, one line of MAX_READ_BYTES + 1 MiB (a tool's huge output), then a later turn:
    the captures go past the line to the later turn, the skip is counted per client and
    shown by `imprint status` and `imprint hooks status` in words."""
    cwd = tmp_path / "demo"
    cwd.mkdir()
    t = Transcript(tmp_path / "claude" / "s-big.jsonl", "s-big", cwd)
    t.turn("first question tealfinch", "first answer")
    huge = {"type": "user", "message": {"role": "user", "content": "x" * (MAX_READ_BYTES + 2**20)}}
    t.append(huge)
    t.turn("second question amberwren", "second answer")
    for _ in range(3):  # three Stop hooks: each capture reads on from the last
        _drain(rt, t.event())
    text = _contents(rt, "demo", "s-big")
    assert "tealfinch" in text and "amberwren" in text
    state = load_state(rt.data_dir, "s-big")
    assert state is not None and state.offset == t.path.stat().st_size
    row = client_stats(rt.data_dir)["claude-code"]
    assert row["skipped"] == 1 and "a line of" in row["last_skip"], row
    assert row["failures"] == 0
    shown = "\n".join(hooks_lines(client_hooks(rt.data_dir)))
    assert "capture skipped 1 lines or turns too long to read" in shown, shown
    status = "\n".join(status_lines(rt.data_dir, home=tmp_path, project=tmp_path))
    assert "capture skipped 1 lines or turns too long to read" in status, status


def test_the_dashboards_overview_shows_a_skipped_line(
    tmp_path: Path,
    dash: Dash,
) -> None:
    """The overview's hooks table says what capture passed over, as status does."""
    t = Transcript(tmp_path / "claude" / "s-dash.jsonl", "s-dash", tmp_path)
    t.append({"type": "user", "message": {"role": "user", "content": "z" * (MAX_READ_BYTES + 1)}})
    t.turn("a later question", "an answer")
    _drain(dash.runtime, t.event())
    dash.sign_in()
    html = dash.client.get("/").text
    assert "1 skipped as too long to read: session s-dash: a line of" in html, html


def _gemini(path: Path, *records: dict[str, object]) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write("".join(json.dumps(r) + "\n" for r in records))


def test_a_gemini_turn_whose_copies_pass_the_read_limit_is_closed_and_capture_goes_on(
    tmp_path: Path, rt: Runtime
) -> None:
    """Gemini CLI appends a message again each time it changes: a turn whose copies pass
    MAX_READ_BYTES was read again from its prompt forever. It is closed where the read
    stopped (counted), and the next prompt is captured."""
    path = tmp_path / "session-2026-01-02T10-00-abcd.jsonl"
    _gemini(path, {"sessionId": "g-big", "projectHash": "h", "startTime": "2026-01-02"})
    _gemini(path, {"id": "u1", "type": "user", "content": [{"text": "first prompt greyheron"}]})
    copy = 2**20
    for n in range(MAX_READ_BYTES // copy + 2):  # each copy a little longer than the last
        _gemini(path, {"id": "g1", "type": "gemini", "content": "y" * (copy + n)})
    _gemini(path, {"id": "u2", "type": "user", "content": [{"text": "second prompt bluejay"}]})
    _gemini(path, {"id": "g2", "type": "gemini", "content": "second reply"})
    event = {
        "client": "gemini",
        "session_id": "g-big",
        "transcript_path": str(path),
        "cwd": str(tmp_path / "gem"),
        "hook_event_name": "AfterAgent",
    }
    for _ in range(3):
        _drain(rt, event)
    text = _contents(rt, "gem", "g-big")
    assert "greyheron" in text and "bluejay" in text
    row = client_stats(rt.data_dir)["gemini"]
    assert row["skipped"] == 1 and "a turn of over" in row["last_skip"], row


# --- finding 9: hooks.exclude for every event source -----------------------------------------


@pytest.fixture
def excluded_home(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A home whose Claude Code keeps three sessions: one in an excluded folder, one in a
    link to it, one in an open folder (the barrier: captured last)."""
    home = tmp_path / "home"
    secret, link, open_ = tmp_path / "secret", tmp_path / "link", tmp_path / "open"
    secret.mkdir()
    open_.mkdir()
    link.symlink_to(secret)
    for sid, cwd in (("s-secret", secret), ("s-link", link), ("s-open", open_)):
        t = Transcript(home / ".claude" / "projects" / f"-{sid}" / f"{sid}.jsonl", sid, cwd)
        t.turn(f"{sid} prompt rubythroat", "an answer")
        os.utime(t.path, (1e9 + (sid == "s-open"), 1e9 + (sid == "s-open")))  # open: newest
    yield home, secret


def _captured_when(d: Daemon, sid: str) -> threading.Event:
    """An event set after a drain of the daemon's worker that captured `sid`."""
    assert d.capture is not None
    worker, captured = d.capture, threading.Event()
    original = worker._finish

    def finish(taken: object) -> None:
        original(taken)  # type: ignore[arg-type]
        if load_state(d.data_dir, sid) is not None:
            captured.set()

    worker._finish = finish  # type: ignore[method-assign]
    return captured


def _env(d: Daemon, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("IMPRINT_")}
    env.update(IMPRINT_DATA_DIR=str(d.data_dir), HOME=str(home))
    return env


def test_backfill_and_a_linked_folder_are_excluded_by_the_daemon(
    daemon: Daemon,
    excluded_home: tuple[Path, Path],
) -> None:
    """`imprint capture --backfill` against a real daemon, `hooks.exclude` naming a folder:
    neither the folder's session nor the one in a link to it is captured; the open
    folder's is."""
    home, secret = excluded_home
    daemon.wait_runtime(120)
    (daemon.data_dir / "config.toml").write_text(f'[hooks]\nexclude = ["{secret}"]\n')
    captured = _captured_when(daemon, "s-open")
    done = subprocess.run(
        [IMPRINT, "capture", "--backfill"],
        env=_env(daemon, home),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "queued 3 claude-code transcripts" in done.stdout
    assert captured.wait(WAIT_SEC)
    assert load_state(daemon.data_dir, "s-secret") is None
    assert load_state(daemon.data_dir, "s-link") is None
    rt = daemon.wait_runtime(120)
    assert _contents(rt, "secret", "s-secret") == "" and _contents(rt, "link", "s-link") == ""
    assert "rubythroat" in _contents(rt, "open", "s-open")


def test_a_stop_hook_in_a_link_to_an_excluded_folder_queues_nothing(
    rt: Runtime, excluded_home: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Stop hook of a session in a link to the excluded folder hands nothing off (the
    hook judges the resolved folder), nor does one whose entry names the link; an event
    queued by other means for it is refused by the daemon's worker, which judges again."""
    import io

    import imprint.hooks.capture
    from imprint.hooks.entry import run_hook

    home, secret = excluded_home
    link = secret.parent / "link"
    handed: list[dict[str, object]] = []
    monkeypatch.setattr(imprint.hooks.capture, "hand_off", handed.append)
    monkeypatch.setenv("IMPRINT_DATA_DIR", str(rt.data_dir))
    linked = home / ".claude" / "projects" / "-s-link" / "s-link.jsonl"
    event = {"session_id": "s-link", "transcript_path": str(linked), "cwd": str(link)}
    for entry, cwd in ((secret, link), (link, secret)):
        (rt.data_dir / "config.toml").write_text(f'[hooks]\nexclude = ["{entry}"]\n')
        raw = json.dumps({**event, "cwd": str(cwd), "hook_event_name": "Stop"}).encode()
        assert run_hook("Stop", "claude-code", io.BytesIO(raw)) == 0
        assert handed == [], (entry, cwd)
    (rt.data_dir / "config.toml").write_text(f'[hooks]\nexclude = ["{secret}"]\n')
    _drain(rt, {"client": "claude-code", **event})
    assert load_state(rt.data_dir, "s-link") is None
    _drain(rt, {"client": "claude-code", **event, "cwd": str(secret.parent / "open")})
    assert load_state(rt.data_dir, "s-link") is not None  # the same event, an open folder


def test_an_excluded_project_is_not_captured_from_a_folder_inside_it(
    rt: Runtime, tmp_path: Path
) -> None:
    """`hooks.exclude` naming a project: a session in a subfolder of the folder ingested as
    that project is that project's (as its briefing maps it), so it is not captured."""
    from imprint.writes.files import ingest_path

    site = tmp_path / "site"
    (site / "sub").mkdir(parents=True)
    (site / "a.md").write_text("# A\n\nsome text\n")
    ingest_path(rt, site, project="docs-site")
    (rt.data_dir / "config.toml").write_text('[hooks]\nexclude = ["docs-site"]\n')
    t = Transcript(tmp_path / "claude" / "s-sub.jsonl", "s-sub", site / "sub")
    t.turn("a prompt in the excluded project", "an answer")
    _drain(rt, t.event())
    assert load_state(rt.data_dir, "s-sub") is None
