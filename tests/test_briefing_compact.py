"""A briefing at the default budget holds what holds now: about twenty current decisions,
preferences and facts of a project (issue 44's labelled sessions have 16 to 22 each) fit in
`hooks.context_chars` = 2,000, each line cut to its core clause with its id and date, and the
last session's summary does not say again what the sections above it say."""

from __future__ import annotations

import re
from types import SimpleNamespace

from imprint.hooklib.compose import FENCE, FRAME, compose_briefing, core, session_digest

DAY = 86_400.0
START = 1_793_000_000.0  # 2026-10-26


def _rec(n: int, text: str) -> SimpleNamespace:
    return SimpleNamespace(id=f"{n:016x}", content=text, created_at=START + n * DAY)


DECISIONS = [
    "We'll use Dramatiq for the ingestion worker, because Celery's prefetch starves long jobs.",
    "Let's version the public API in the URL path, since clients cache by path.",
    "We decided to store thumbnails as WebP in the uploads bucket under thumbs/.",
    "We'll keep RabbitMQ as the broker for Dramatiq; the ops team already runs it.",
    "Let's go with pypdfium2 for page rendering, because it streams page by page.",
    "We'll use Alembic for the schema migrations of the jobs database.",
    "Let's run OCR with tesseract 5 in a separate pool, so that parsing is not blocked.",
    "We'll emit one structlog event per job with its duration and page count.",
]
PREFERENCES = [
    "Use conventional commit prefixes from now on (feat:, fix:) instead of plain messages.",
    "Never run migrations against staging without a backup taken the same day.",
    "Please prefer pytest fixtures over setUp methods in new tests.",
    "Don't use print for diagnostics in the worker, use the structlog logger.",
    "Always pin worker dependencies to exact versions in requirements.txt.",
    "Please never commit the model weights to git, they live in the artefact store.",
    "Always keep the sample documents under 1 MB in tests/fixtures.",
    "Please prefer pathlib over os.path in new code of the worker.",
]
FACTS = [
    "The staging database now lives on pg-staging-3 since 2026-11-15.",
    "The dead-letter queue is now on RabbitMQ as docingest.dlq.",
    "The worker image is now built by the platform pipeline, not by our CI.",
    "Invoices are no longer parsed by this service; billing owns them now.",
]


def _briefing(max_chars: int = 2000) -> tuple[str, list[SimpleNamespace]]:
    decisions = [_rec(40 - i, t) for i, t in enumerate(DECISIONS)]
    preferences = [_rec(30 - i, t) for i, t in enumerate(PREFERENCES)]
    facts = [_rec(20 - i, t) for i, t in enumerate(FACTS)]
    concluded = "\n".join(f"- Decided: {d.content}" for d in decisions[:3])
    summary = SimpleNamespace(
        id="5e551011aaaaaaaa",
        content=(
            "Session in project docingest (4 turns, id ing-21):\nConcluded:\n"
            f"{concluded}\n- Preference: {preferences[0].content}\n"
            "Errors and what followed:\n- pytest tests/test_thumbs.py failed -> then Edit "
            "worker/thumbs.py -> then it passed\nAsked:\n- make thumbnails faster"
        ),
        created_at=START + 41 * DAY,
    )
    memories = [
        ("Decisions", decisions),
        ("Bugs and their fixes", []),
        ("Preferences", preferences),
        ("Facts that hold now", facts),
        ("Open problems", []),
    ]
    text = compose_briefing("docingest", memories, set(), [], [summary], max_chars)
    return text, [*decisions, *preferences, *facts]


def test_the_items_that_hold_now_fit_the_default_budget() -> None:
    text, current = _briefing()
    assert len(text) <= 2000
    assert FRAME in text and text.splitlines().count(FENCE) == 2
    shown = [r for r in current if f"id {r.id}," in text]
    assert len(shown) >= 0.8 * len(current), text
    for record in shown:
        line = next(ln for ln in text.splitlines() if f"id {record.id}," in ln)
        assert core(record.content)[:40] in line, line  # each item keeps its core clause
        assert re.search(r"\(id [0-9a-f]{16}, (20\d\d-)?\d\d-\d\d\)$", line), line


def test_the_last_session_does_not_repeat_the_sections() -> None:
    text, _ = _briefing()
    session = next(ln for ln in text.splitlines() if "id 5e551011aaaaaaaa" in ln)
    assert "ing-21" in session and "4 turns" in session
    assert "Dramatiq" not in session  # a decision shown above
    assert "conventional commit" not in session  # a preference shown above
    assert "pytest tests/test_thumbs.py failed" in session  # what only the session says


def test_a_core_clause_drops_the_reason_only_when_it_says_enough() -> None:
    assert core(DECISIONS[0]) == "We'll use Dramatiq for the ingestion worker"
    assert core("Use X, because Y.") == "Use X, because Y."
    assert session_digest("Session in project p (2 turns, id s):\nAsked:\n- why", []) == (
        "Session s (2 turns): Asked: - why"
    )


def test_a_line_a_newer_one_says_it_replaces_is_not_shown_as_current() -> None:
    """Capture links a reversal only when the two statements are also near in meaning; the
    briefing leaves out an older line that a newer decision, preference or fact names as
    replaced, in its own section or another, and keeps one nothing newer replaces."""
    socket = _rec(1, "We'll use slack-go/slack with Socket Mode, because of no public endpoint.")
    toml = _rec(2, "We'll use TOML for the opsbot config.")
    sqlite = _rec(3, "Incidents are stored in SQLite, one file per cluster.")
    events = _rec(10, "Let's switch from Socket Mode to the Events API behind the ingress.")
    yaml = _rec(11, "From now on use YAML for the opsbot config instead of TOML.")
    memories = [
        ("Decisions", [events, sqlite, toml, socket]),
        ("Bugs and their fixes", []),
        ("Preferences", [yaml]),
        ("Facts that hold now", []),
        ("Open problems", []),
    ]
    text = compose_briefing("opsbot", memories, set(), [], [], 4000)
    for shown in (events, yaml, sqlite):
        assert f"id {shown.id}," in text, text
    for replaced in (socket, toml):
        assert replaced.id not in text, text
    # An older line that itself rejects the term stays ("Postgres, not SQLite" is no SQLite).
    older = _rec(0, "We chose Postgres rather than SQLite for incidents.")
    newer = _rec(5, "Let's keep Postgres instead of SQLite for incidents.")
    text = compose_briefing("opsbot", [("Decisions", [newer, older])], set(), [], [], 4000)
    assert f"id {older.id}," in text and f"id {newer.id}," in text


def test_an_older_session_that_says_nothing_new_takes_no_line() -> None:
    decision = _rec(5, "We'll pin dramatiq==1.17.0 in requirements.txt for the worker.")
    said = decision.content
    older = SimpleNamespace(
        id="01de55101aaaaaaa",
        content=f"Session in project p (3 turns, id s-old):\nConcluded:\n- Decided: {said}",
        created_at=START + 5 * DAY,
    )
    newest = SimpleNamespace(
        id="0e3e55101aaaaaaa",
        content=f"Session in project p (1 turns, id s-new):\nConcluded:\n- Decided: {said}",
        created_at=START + 6 * DAY,
    )
    text = compose_briefing("p", [("Decisions", [decision])], set(), [], [newest, older], 2000)
    assert "Session s-new (1 turns):" in text  # the last session is always named
    assert "s-old" not in text and older.id not in text
