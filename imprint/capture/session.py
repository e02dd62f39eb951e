"""One capture: a session's new turns, redacted, written as the source `session:<id>`, and
its summary memory replaced in place, through `imprint.writes` in one write.

Idempotent: a turn's record id comes from the session id and the uuid of the turn's first
transcript line, its chunk index from the state saved before it, and the summary's id from
the session id; the offset a capture reached is saved only after its write is acknowledged.
A capture that dies between the two is done again from the old offset and writes the same
records over themselves.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel

from imprint._faults import failpoint
from imprint._fs import atomic_write_text, private_dir
from imprint.actors.read_messages import Newest, ProjectRoots
from imprint.capture.formats import read_new
from imprint.capture.keep import Placed, keep_observations
from imprint.capture.observe import Observation, error_words, observe_turn, open_problem
from imprint.capture.refine import refine_summary
from imprint.capture.summary import Notes, render_turn, summary_text
from imprint.capture.transcript import ToolCall, Turn
from imprint.errors import InputError
from imprint.hooklib.compose import SESSION_ROOTS, pick_project, record_root, session_roots
from imprint.hooklib.queue import capture_dir
from imprint.hooklib.settings import excluded_folder, hook_settings
from imprint.logs import get_logger
from imprint.reads.deadline import Deadline
from imprint.redact import redact
from imprint.store.records import (
    SESSION_SUMMARY_KIND,
    Record,
    SupersedeLink,
    WriteBatch,
    content_sha,
    make_id,
    project_from_folder,
)
from imprint.types import MemoryId
from imprint.writes.gateway import Writes

__all__ = ["Captured", "SessionState", "capture", "capture_event", "load_state", "session_project"]

log = get_logger("imprint.capture")

_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
PIECE_CHARS = 4_000  # a turn longer than this is stored in pieces
READ_TIMEOUT_SEC = 30.0


class SessionState(BaseModel):
    """How far a session is captured; `<data dir>/capture/sessions/<id>.json`."""

    session_id: str
    client: str = "claude-code"
    notes: Notes = Notes()  # what the summary is made of, so far
    transcript: str = ""
    project: str = ""
    offset: int = 0  # where the next capture reads from
    read_to: int = 0  # the byte after the last line read
    chunks: int = 0  # records written: the next one's chunk index
    open_turn: str = ""  # the turn the next capture reads again (Gemini CLI), and
    open_chunk: int = 0  # the chunk index its records start at
    captured_at: float = 0.0
    open_problem: str = ""  # the id of the open problem memory the last capture left
    last_at: float = 0.0  # when the newest turn captured was said


def _state_file(data_dir: Path, session_id: str) -> Path:
    return private_dir(capture_dir(data_dir) / "sessions") / f"{session_id}.json"


def load_state(data_dir: Path, session_id: str) -> SessionState | None:
    path = _state_file(data_dir, session_id)
    if not path.exists():
        return None
    return SessionState.model_validate_json(path.read_text(encoding="utf-8"))


def session_project(cwd: str) -> str:
    """The name a session's folder gives a project, as a folder's ingest names it (which
    project it maps to is `mapped_project`'s, by its resolved root)."""
    return project_from_folder(Path(cwd).name) if cwd else ""


def mapped_project(writes: Writes, data_dir: Path, cwd: str) -> tuple[str, str]:
    """The project of a session in `cwd`, by its resolved root as the briefing maps it
    (`imprint.hooklib.compose.pick_project`), and the root to record it for ("" when an
    ingested folder or an earlier record names it)."""
    if not cwd:
        return "", ""
    try:
        here = Path(cwd).expanduser().resolve()
    except (OSError, RuntimeError):
        here = Path(cwd)
    ws = writes.open("", create=True)
    roots = Deadline(READ_TIMEOUT_SEC).wait(writes.reads.ask(ProjectRoots(workspace=ws)), "capture")
    return pick_project(here, roots, session_roots(data_dir), project_from_folder)


def excluded_session(data_dir: Path, cwd: str) -> bool:
    """Whether `hooks.exclude` names the session's folder (links resolved) or its project.
    Judged here, in the daemon, for every event whatever queued it (a client's hook, a
    backfill, a hand-written queue line), by the daemon's own settings."""
    exclude = hook_settings(data_dir).exclude
    if not exclude or not cwd:
        return False
    return excluded_folder(Path(cwd).expanduser(), exclude) or session_project(cwd) in exclude


def _redact_value(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: _redact_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact_value(v) for v in value]
    return value


def _redacted(turn: Turn) -> Turn:
    return Turn(
        key=turn.key,
        at=turn.at,
        prompt=redact(turn.prompt),
        texts=[redact(t) for t in turn.texts],
        tools=[
            ToolCall(
                name=call.name,
                input=_redact_value(call.input),
                output=redact(call.output),
                is_error=call.is_error,
            )
            for call in turn.tools
        ],
    )


def _pieces(text: str) -> list[str]:
    pieces: list[str] = []
    current = ""
    for line in text.splitlines(keepends=True):
        while len(line) > PIECE_CHARS:
            if current:
                pieces.append(current)
                current = ""
            pieces.append(line[:PIECE_CHARS])
            line = line[PIECE_CHARS:]
        if len(current) + len(line) > PIECE_CHARS:
            pieces.append(current)
            current = ""
        current += line
    if current.strip():
        pieces.append(current)
    return pieces


class Captured(NamedTuple):
    """What one capture did: turns written, and what of the transcript it passed over (a
    line too long to read, a turn too long to read whole), one line each."""

    turns: int
    skipped: tuple[str, ...] = ()
    excluded: bool = False  # `hooks.exclude` names the session's folder or project


def _observations(
    writes: Writes,
    ws: Any,
    state: SessionState,
    placed: list[Placed],
    summary_id: MemoryId,
    got_past: list[str],
) -> tuple[list[Record], list[SupersedeLink]]:
    """The observation memories of this capture's turns and the links they add; the
    session's open problem (an error nothing got past yet) kept, or, got past since the last
    capture, superseded by the newest fix (else by the session's summary); so is an open
    problem of an earlier session whose error this one got past (`got_past`)."""
    sid = state.session_id
    left: Observation | None = None
    if state.notes.open_error:
        left = open_problem(state.notes.open_error, state.last_at or time.time())
    if left is not None:
        placed = [*placed, Placed(left, sid, max(state.chunks - 1, 0), state.notes.turns)]
    kept = keep_observations(writes, ws, state.project, placed, Deadline(60))
    links = list(kept.links)
    open_id = make_id("memory", state.project, content_sha(left.text)) if left else ""
    if state.open_problem and state.open_problem != open_id:
        fixes = [r.id for r in kept.records if r.type == "bug" and r.kind != "open-problem"]
        by = fixes[-1] if fixes else summary_id
        old_open = MemoryId(state.open_problem)
        links.append(SupersedeLink(old=old_open, new=by, at=state.last_at))
    state.open_problem = open_id
    if got_past:
        fixes = [r.id for r in kept.records if r.type == "bug" and r.kind != "open-problem"]
        by = fixes[-1] if fixes else summary_id
        done = {link.old for link in links}
        for old in _open_problems(writes, ws, state.project, got_past):
            if old not in done and old != open_id:
                links.append(SupersedeLink(old=old, new=by, at=state.last_at))
    return kept.records, links


OPEN_LOOKED_AT = 20  # the newest open problems of a project a got-past error is checked against


def _open_problems(writes: Writes, ws: Any, project: str, got_past: list[str]) -> list[MemoryId]:
    """The open problems of `project` naming an error in `got_past` (most of its words)."""
    deadline = Deadline(30)
    found = deadline.wait(
        writes.reads.ask(
            Newest(
                workspace=ws,
                project=project,
                types=("bug",),
                kinds=("open-problem",),
                limit=OPEN_LOOKED_AT,
            )
        ),
        "capture",
    )
    past = [error_words(e.split(" -> then ")[0]) for e in got_past]
    out = []
    for record in found:
        words = error_words(record.content.removeprefix("Unresolved: "))
        if any(len(words & p) >= max(2, 0.6 * min(len(words), len(p))) for p in past):
            out.append(record.id)
    return out


def capture_event(writes: Writes, data_dir: Path, event: dict[str, str]) -> int:
    """Capture what the event's transcript holds past the session's saved offset; how many
    turns were written (`capture` also says what it passed over)."""
    return capture(writes, data_dir, event).turns


def _turn_records(state: SessionState, sid: str, key: str, clean: Turn) -> list[Record]:
    """A turn's records as stored (rendered, in pieces), numbered on from the session's
    last chunk (`state.chunks` moves past them)."""
    at = clean.at or time.time()
    records = []
    for piece_no, piece in enumerate(_pieces(render_turn(clean))):
        records.append(
            Record(
                id=make_id("session", sid, key, piece_no),
                content=piece,
                project=state.project,
                source=f"session:{sid}",
                source_type="content",
                chunk_index=state.chunks,
                chunk_count=state.chunks + 1,
                lang="text",
                kind="session",
                context=f"session {sid} | turn {state.notes.turns}",
                created_at=at,
                content_sha=content_sha(piece),
            )
        )
        state.chunks += 1
    return records


def capture(writes: Writes, data_dir: Path, event: dict[str, str]) -> Captured:
    """Capture what the event's transcript holds past the session's saved offset.
    InputError for an event that names no readable transcript.

    A Cursor event is counted and captures nothing: Cursor's hooks name no transcript in a
    format Imprint reads (and no Cursor build is pinned here to check one against), and the
    events Imprint installs for it (session start, stop, pre-compact, session end) carry no
    text of the conversation."""
    if event.get("client") == "cursor":
        return Captured(0)
    cwd = event.get("cwd", "")
    if excluded_session(data_dir, cwd):
        return Captured(0, excluded=True)
    sid = event.get("session_id", "")
    if not _SESSION_ID.match(sid):
        raise InputError(f"capture: {sid!r} is not a session id")
    path = Path(event.get("transcript_path", "")).expanduser()
    if not path.is_absolute() or not path.is_file():
        raise InputError(f"capture: session {sid}: no transcript at {str(path)!r}")
    state = load_state(data_dir, sid)
    root = ""
    if state is None:
        project, root = mapped_project(writes, data_dir, cwd)
        state = SessionState(
            session_id=sid,
            client=event.get("client", "claude-code"),
            transcript=str(path),
            project=project,
        )
    if state.project in hook_settings(data_dir).exclude:  # the project, as it was mapped
        return Captured(0, excluded=True)
    batch = read_new(path, state.offset, state.client)
    skipped = tuple(batch.skipped)
    if batch.end in (state.offset, state.read_to) and batch.resume == state.offset and not skipped:
        return Captured(0)  # nothing new (a re-read open turn included)
    source = f"session:{sid}"
    records: list[Record] = []
    placed: list[Placed] = []
    errors_before = set(state.notes.errors)
    for turn in batch.turns:
        if turn.key == state.open_turn:
            state.chunks = state.open_chunk  # read again: its records are written over
        if batch.resume < batch.end and turn is batch.turns[-1]:
            state.open_turn, state.open_chunk = turn.key, state.chunks
        clean = _redacted(turn)
        state.notes.add(clean)
        state.last_at = max(state.last_at, clean.at)
        for obs in observe_turn(clean, state.last_at or time.time()):
            placed.append(Placed(obs, sid, state.chunks, state.notes.turns))
            state.notes.conclude(obs.kind, obs.text)
        records.extend(_turn_records(state, sid, turn.key, clean))
    if state.notes.turns == 0:
        # Nothing said yet (Gemini writes its chat file before the first answer): no
        # `(0 turns)` summary for search to find; the next capture reads from here again.
        return Captured(0, skipped)
    priority = writes.runtime.priority
    priority.turn("capture.refine")  # the model's next request is a recall's, if one is due
    summary = refine_summary(writes.runtime, summary_text(sid, state.project, state.notes))
    records.append(
        Record(
            id=make_id(SESSION_SUMMARY_KIND, state.project, sid),
            content=summary,
            project=state.project,
            source=source,
            source_type="memory",
            type="milestone",
            kind=SESSION_SUMMARY_KIND,
            created_at=state.last_at or time.time(),
            content_sha=content_sha(summary),
        )
    )
    ws = writes.open("", create=True)
    # Embedded here, an inference at a time, each after a recall in flight (the writer
    # would embed them all in one go, holding the cores through a recall).
    vectors = writes.runtime.embedder().embed(
        [r.indexed_text for r in records], between=lambda: priority.turn("capture.embed")
    )
    writes.write(ws, WriteBatch(upserts=tuple(records)), embeddings=vectors)
    summary_id = records[-1].id
    got_past = [e for e in state.notes.errors if e not in errors_before and " -> then " in e]
    kept, links = _observations(writes, ws, state, placed, summary_id, got_past)
    records.extend(kept)
    writes.write(ws, WriteBatch(upserts=tuple(records), supersede=tuple(links)))
    failpoint("capture.before_state")  # written, offset not saved: the replay case
    # The briefing maps this root so too; a record it cannot read whole is kept unchanged.
    if root and not record_root(data_dir, root, state.project):
        log.warning("capture.roots_unreadable", record=str(data_dir / SESSION_ROOTS))
    state.offset, state.read_to = batch.resume, batch.end
    state.captured_at = time.time()
    atomic_write_text(_state_file(data_dir, sid), state.model_dump_json())
    return Captured(len(batch.turns), skipped)
