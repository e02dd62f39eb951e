"""The session-start briefing and a prompt's memories: what they hold, their budget, and
nothing when the project has nothing; then the whole path, a real daemon answering a real
`imprint hook session-start`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from imprint.actors.lifecycle import Runtime
from imprint.daemon import Daemon
from imprint.reads.briefing import (
    PROMPT_MAX_CHARS,
    SUMMARY_KIND,
    HookRequest,
    briefing_text,
    hook_context,
    project_for,
    prompt_context,
)
from imprint.reads.deadline import Deadline
from imprint.reads.gateway import ActorReads
from imprint.store.records import Record, WriteBatch, make_id
from imprint.writes.facts import edit_facts
from imprint.writes.files import ingest_path
from imprint.writes.gateway import Writes
from imprint.writes.memories import store_memory
from tests.conftest import TOPICS, write_tree

IMPRINT = str(Path(sys.executable).with_name("imprint"))


def _store(rt: Runtime, project: str, kind: str, text: str) -> None:
    store_memory(Writes(rt), text, project=project, type=kind)


def _summary(rt: Runtime, project: str, text: str) -> None:
    writes = Writes(rt)
    ws = writes.open("", create=True)
    record = Record(
        id=make_id("summary", project, text),
        content=text,
        project=project,
        source="session:s1",
        source_type="content",
        kind=SUMMARY_KIND,
    )
    writes.write(ws, WriteBatch(upserts=(record,)))


def _brief(rt: Runtime, project: str, max_chars: int = 2000) -> str:
    reads = ActorReads(rt)
    return briefing_text(reads, reads.open(""), project, max_chars, Deadline(30))


def test_the_briefing_holds_each_kind_under_its_heading(rt: Runtime) -> None:
    """Decisions, bugs with fixes, preferences, the facts about the project that hold now
    and its last session, each under its heading, newest first, then how to search."""
    _store(rt, "shop", "decision", "Use PostgreSQL for orders, not MySQL.")
    _store(rt, "shop", "decision", "Payments go through Stripe.")
    _store(rt, "shop", "bug", "Checkout crashed on empty carts; fixed by a guard in cart.py.")
    _store(rt, "shop", "preference", "Tests use pytest, never unittest.")
    _store(rt, "shop", "note", "A plain note is not part of the briefing.")
    _store(rt, "other", "decision", "Another project's decision.")
    edit_facts(Writes(rt), "add", "shop", "deploys to", "fly.io")
    _summary(rt, "shop", "Asked to fix checkout; touched cart.py; ran pytest.")
    text = _brief(rt, "shop")
    lines = text.splitlines()
    assert lines[0] == "Imprint memory for project shop (newest first):"
    order = [ln for ln in lines if ln.endswith(":") and not ln.startswith("-")][1:]
    assert order == [
        "Decisions:",
        "Bugs and their fixes:",
        "Preferences:",
        "Facts that hold now:",
        "Last sessions:",
    ]
    decisions = lines[lines.index("Decisions:") + 1 : lines.index("Bugs and their fixes:")]
    assert [d.split(" (id ")[0] for d in decisions] == [
        '- "Payments go through Stripe."',
        '- "Use PostgreSQL for orders, not MySQL."',
    ]
    assert any('"shop deploys to fly.io" (id fact:' in ln for ln in lines)
    assert any("Asked to fix checkout" in ln for ln in lines)
    assert "plain note" not in text and "Another project" not in text
    assert lines[-1].startswith('For more: search(query, project="shop")')


def test_the_briefing_stays_within_its_budget_and_keeps_every_kind(rt: Runtime) -> None:
    """Many long decisions and a 600-character budget: the briefing fits, and the bug and
    the preference are not crowded out by the decisions."""
    for i in range(12):
        _store(rt, "big", "decision", f"Decision {i}: " + "a long rationale " * 20)
    _store(rt, "big", "bug", "The importer dropped rows; fixed by batching.")
    _store(rt, "big", "preference", "Keep functions short.")
    text = _brief(rt, "big", max_chars=600)
    assert len(text) <= 600
    assert "importer dropped rows" in text and "Keep functions short" in text
    assert len(_brief(rt, "big", max_chars=2000)) <= 2000


def test_a_superseded_decision_is_left_out_of_the_briefing(rt: Runtime) -> None:
    """A decision superseded by a newer one no longer holds: the briefing shows the newer
    one only."""
    old = store_memory(
        Writes(rt), "Decision: the queue polls PostgreSQL.", project="p", type="decision"
    )
    store_memory(
        Writes(rt),
        "Decision: the queue moved to Redis streams.",
        project="p",
        type="decision",
        supersedes=[old],
    )
    text = _brief(rt, "p")
    assert "Redis streams" in text and "PostgreSQL" not in text, text


def test_nothing_when_the_project_has_nothing(rt: Runtime, tmp_path: Path) -> None:
    """A project with only plain notes, and a folder that maps to no project: empty."""
    _store(rt, "quiet", "note", "Only a note.")
    assert _brief(rt, "quiet") == ""
    unknown = HookRequest(event="session-start", cwd=str(tmp_path / "nowhere"))
    assert hook_context(rt, unknown) == ""


def test_a_folder_maps_to_its_ingested_project_or_its_repository_name(
    rt: Runtime, tmp_path: Path
) -> None:
    """cwd inside a folder ingested as project `docs-site`: that project; a git checkout
    named `shop` with memories in project `shop`: shop."""
    tree = write_tree(tmp_path / "site", TOPICS)
    ingest_path(rt, tree, project="docs-site")
    (tree / "deep").mkdir()
    shop = tmp_path / "shop"
    (shop / ".git").mkdir(parents=True)
    (shop / "src").mkdir()
    _store(rt, "shop", "decision", "Use PostgreSQL.")
    reads = ActorReads(rt)
    ws = reads.open("")
    assert project_for(reads, ws, tree / "deep", Deadline(30)) == "docs-site"
    assert project_for(reads, ws, shop / "src", Deadline(30)) == "shop"
    assert project_for(reads, ws, tmp_path / "elsewhere", Deadline(30)) == ""


def test_prompt_context_only_for_clearly_relevant_memories(rt: Runtime) -> None:
    """A prompt about the stored decision gets it (under PROMPT_MAX_CHARS); a prompt about
    nothing stored gets nothing."""
    _store(rt, "shop", "decision", "We chose PostgreSQL over MySQL for the order database.")
    _store(rt, "shop", "preference", "Commit messages are in the imperative mood.")
    reads = ActorReads(rt)
    ws = reads.open("")
    found = prompt_context(
        reads, ws, "shop", "Which database did we choose for orders?", Deadline(30)
    )
    assert "PostgreSQL" in found and len(found) < PROMPT_MAX_CHARS
    assert prompt_context(reads, ws, "shop", "bake a sourdough loaf", Deadline(30)) == ""


def test_session_start_hook_prints_the_briefing_from_the_daemon(
    daemon: Daemon, tmp_path: Path
) -> None:
    """The whole path: `imprint hook SessionStart --client claude-code` in a folder of
    project `shop` asks the running daemon and prints Claude Code's JSON with the
    briefing as additionalContext; the run is counted ok."""
    _store(daemon.wait_runtime(120), "shop", "decision", "Use PostgreSQL for orders.")
    shop = tmp_path / "shop"
    shop.mkdir()
    event = json.dumps({"session_id": "s1", "cwd": str(shop), "hook_event_name": "SessionStart"})
    done = subprocess.run(
        [IMPRINT, "hook", "SessionStart", "--client", "claude-code"],
        input=event.encode(),
        capture_output=True,
        timeout=120,
        # A bound for a loaded test machine: the hook's answer is what is checked here.
        env={**os.environ, "IMPRINT_HOOKS_TIMEOUT_MS_SESSION_START": "30000"},
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "SessionStart"
    assert "Use PostgreSQL for orders." in out["additionalContext"]
    from imprint.hooklib.state import read_state

    row = read_state(daemon.data_dir)["claude-code"]["session-start"]
    assert row["runs"] == 1 and "failures" not in row
