"""The dashboard's Memory pages through Starlette's test client: what a project remembers,
its timeline, its reversals, the next briefing, one captured session, and correcting a
memory from the page (every form CSRF-checked and refused from another origin)."""

from __future__ import annotations

import html as htmllib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from imprint.dashboard import Guard, build_app
from imprint.reads.briefing import briefing_text
from imprint.reads.gateway import ActorReads
from imprint.store.embedder import Embedder
from imprint.writes.gateway import Writes
from imprint.writes.memories import remember
from tests.support.dashboard import BASE, ORIGIN, PORT, Dash
from tests.support.dashboard_support import (
    REMEMBERED,
    SESSIONS,
    ingested_runtime,
    owner,
    remembered,
)


class Remembered(Dash):
    ids: dict[str, str]


@pytest.fixture
def mem(tmp_path: Path, embedder: Embedder, small_tree: Path) -> Iterator[Remembered]:
    with ingested_runtime(tmp_path / "data", small_tree, embedder) as runtime:
        ids = remembered(runtime, Writes(runtime, small_tree), tmp_path / "work")
        guard = Guard(PORT)
        app = build_app(runtime, guard, owner(), cwd=small_tree)
        with TestClient(app, base_url=BASE) as client:
            dash = Remembered(runtime, guard, client)
            dash.ids = ids
            dash.sign_in()
            yield dash


def _text(page: str) -> str:
    return htmllib.unescape(re.sub(r"<[^>]+>", " ", page))


def test_the_memory_page_shows_each_memory_its_reversal_sessions_and_the_next_briefing(
    mem: Remembered,
) -> None:
    """Reachable from the navigation; every stored memory with its date, source and id, by
    type; the superseded decision struck through with a link to its successor and a restore
    form; both sessions; the timeline drawn; the next briefing byte-equal to the hook's."""
    overview = mem.client.get("/").text
    assert '<a href="/memory">Memory</a>' in overview
    index = mem.client.get("/memory").text
    assert 'href="/memory?project=proj"' in index
    page = mem.client.get("/memory", params={"project": "proj"})
    assert page.status_code == 200, page.text
    html = page.text
    for name, text in REMEMBERED.items():
        assert htmllib.escape(text) in html, name
        assert f'id="m-{mem.ids[name]}"' in html
    for heading in (
        "Decisions",
        "Bugs and their fixes",
        "Preferences",
        "Findings",
        "Patterns",
        "Architecture",
        "Milestones",
        "Notes",
        "Session summaries",
        "Facts",
    ):
        assert f">{heading}</h2>" in html
    old, new = mem.ids["decision"], mem.ids["reversal"]
    block = html.split(f'id="m-{old}"')[1].split("</article>")[0]
    assert "<s>" in block and f'href="/memory/{new}"' in block and "Superseded by" in block
    assert 'action="/memory/restore"' in block
    assert 'class="memory superseded"' in html.split(f'id="m-{old}"')[0][-60:]
    for sid in SESSIONS:
        assert f'href="/session?id={sid}&amp;project=proj"' in html
    svg = re.search(r"<svg [^>]*class=\"timeline\".*?</svg>", html, re.S)
    assert svg, "no timeline"
    assert svg.group(0).count('class="session"') == len(SESSIONS)
    assert svg.group(0).count('class="supersede"') == 1
    assert svg.group(0).count('class="mark') == len(REMEMBERED) + 1  # the fixture's own
    assert "proj stores sqlite" in _text(html) or ">stores<" in html
    reads = ActorReads(mem.runtime)
    with reads.deadline() as deadline:
        hook = briefing_text(reads, reads.open(""), "proj", 2000, deadline)
    shown = re.search(r'<pre class="briefing">(.*?)</pre>', html, re.S)
    assert shown and htmllib.unescape(shown.group(1)) == hook
    assert f"{len(hook)} of 2000 characters" in html
    left = html.split('<ul class="left-out">')[1].split("</ul>")[0]
    assert old in left and "superseded" in left


def test_a_session_page_shows_its_turns_what_it_produced_and_the_hook_runs(
    mem: Remembered,
) -> None:
    """One captured session: its stored turns, its summary and the capture runs the log
    holds for it; an unknown session is a 404 naming it."""
    sid = SESSIONS[0]
    from imprint.hooklib.state import record_run

    record_run(mem.runtime.data_dir, "claude-code", "stop", elapsed_ms=12)
    # A memory extracted from one turn (`session:<id>#n`, as typed observations are linked).
    from imprint.store.records import Record, WriteBatch

    writes = Writes(mem.runtime)
    turn_memory = Record(
        id="a1b2c3d4e5f60718",
        content="Decided in the session: the kestrel cache stays in memory.",
        project="proj",
        source=f"session:{sid}#0",
        source_type="memory",
        type="decision",
        kind="memory",
    )
    writes.write(writes.open(""), WriteBatch(upserts=(turn_memory,)))
    page = mem.client.get("/session", params={"id": sid, "project": "proj"})
    assert page.status_code == 200, page.text
    text = _text(page.text)
    assert f"what did {sid} decide about the kestrel cache?" in text
    assert "Session summary" in text
    assert "capture.done" in text and "claude-code" in text
    assert "claude-code's hooks, every session" in text and "<td>stop</td><td>1</td>" in page.text
    assert "the kestrel cache stays in memory" in text and 'href="/memory/a1b2c3d4e5f60718"' in (
        page.text
    )
    listing = mem.client.get("/memory", params={"project": "proj"}).text
    block = listing.split('id="m-a1b2c3d4e5f60718"')[1].split("</article>")[0]
    assert f'href="/session?id={sid}&amp;project=proj' in block and f"session:{sid}#0" in block
    assert SESSIONS[1] not in text
    missing = mem.client.get("/session", params={"id": "nope", "project": "proj"})
    assert missing.status_code == 404 and "nope" in missing.text


def test_supersede_restore_and_retag_from_the_page(mem: Remembered) -> None:
    """Supersede marks the memory (search leaves it out), restore brings it back, retag
    changes its type; each answers with a redirect to the memory on the page."""
    bug, pref = mem.ids["bug"], mem.ids["preference"]
    r = mem.post(
        "/memory/supersede", {"id": bug, "by": pref, "project": "proj"}, follow_redirects=False
    )
    assert r.status_code == 303 and r.headers["location"].endswith(f"#m-{bug}")
    html = mem.client.get("/memory", params={"project": "proj"}).text
    block = html.split(f'id="m-{bug}"')[1].split("</article>")[0]
    assert "Superseded by" in block and f'href="/memory/{pref}"' in block
    r = mem.post("/memory/restore", {"id": bug, "project": "proj"}, follow_redirects=False)
    assert r.status_code == 303
    html = mem.client.get("/memory", params={"project": "proj"}).text
    assert "Superseded by" not in html.split(f'id="m-{bug}"')[1].split("</article>")[0]
    r = mem.post(
        "/memory/retag", {"id": bug, "type": "finding", "project": "proj"}, follow_redirects=False
    )
    assert r.status_code == 303
    html = mem.client.get("/memory", params={"project": "proj"}).text
    findings = html.split(">Findings</h2>")[1].split("<h2")[0]
    assert f'id="m-{bug}"' in findings
    bad = mem.post("/memory/retag", {"id": bug, "type": "gossip", "project": "proj"})
    assert bad.status_code == 400 and "type: &#x27;gossip&#x27; is not allowed" in bad.text
    bad = mem.post("/memory/restore", {"id": bug, "project": "proj"})
    assert bad.status_code == 400 and "is not superseded" in bad.text


def test_every_memory_form_needs_the_csrf_token_and_this_origin(mem: Remembered) -> None:
    """Supersede, restore and retag refuse a stale CSRF token and another origin, and
    change nothing."""
    old, new = mem.ids["decision"], mem.ids["reversal"]
    forms = {
        "/memory/supersede": {"id": mem.ids["bug"], "by": new},
        "/memory/restore": {"id": old},
        "/memory/retag": {"id": old, "type": "note"},
    }
    before = mem.client.get("/memory", params={"project": "proj"}).text
    for path, data in forms.items():
        stale = mem.client.post(path, data={"csrf": "x", **data}, headers=ORIGIN)
        assert stale.status_code == 403, path
        other = mem.client.post(
            path, data={"csrf": mem.guard.csrf, **data}, headers={"Origin": "http://evil.test"}
        )
        assert other.status_code == 403, path
        missing = mem.client.post(path, data={"csrf": mem.guard.csrf, **data})
        assert missing.status_code == 403, path
    after = mem.client.get("/memory", params={"project": "proj"}).text
    strip = re.compile(r"\d+(\.\d+)? s ago")
    assert strip.sub("", before) == strip.sub("", after)


def test_deleting_a_memory_asks_first_and_says_what_goes_with_it(mem: Remembered) -> None:
    """The confirmation names the memory and that the one it superseded holds again;
    posting it deletes, and the old decision is back on the page unmarked."""
    old, new = mem.ids["decision"], mem.ids["reversal"]
    confirm = mem.client.get("/delete", params={"id": new, "project": "proj"})
    assert confirm.status_code == 200
    assert f"memory {old}, which it superseded, holds again" in confirm.text
    assert 'action="/delete"' in confirm.text
    done = mem.post("/delete", {"id": new, "project": "proj"})
    assert done.status_code == 200 and f"deleted {new}" in done.text
    assert 'href="/memory?project=proj">back to the memory of proj' in done.text
    html = mem.client.get("/memory", params={"project": "proj"}).text
    assert f'id="m-{new}"' not in html
    assert "Superseded by" not in html.split(f'id="m-{old}"')[1].split("</article>")[0]


def test_a_project_past_one_page_is_paged(mem: Remembered) -> None:
    """A page holds `limit` memories, newest first, says whether older ones follow and
    counts them all; the page links to newer and older pages; a bad offset is one line."""
    from imprint.reads import project_memory as pm

    reads = ActorReads(mem.runtime)
    whole = pm.project_memory(reads, reads.open(""), "proj")
    first = pm.project_memory(reads, reads.open(""), "proj", offset=0, limit=3)
    rest = pm.project_memory(reads, reads.open(""), "proj", offset=3, limit=pm.PAGE_SIZE)
    assert whole.total == first.total == rest.total == len(whole.items) == len(REMEMBERED) + 3
    assert first.more and not rest.more
    assert [i.record.id for i in first.items + rest.items] == [i.record.id for i in whole.items]
    stamps = [i.record.created_at for i in whole.items]
    assert stamps == sorted(stamps, reverse=True)
    page = mem.client.get("/memory", params={"project": "proj", "offset": "3"}).text
    assert 'href="/memory?project=proj&amp;offset=0"' in page  # newer
    bad = mem.client.get("/memory", params={"project": "proj", "offset": "-1"})
    assert bad.status_code == 400 and "offset" in bad.text
    assert pm.PAGE_SIZE == 200


def test_stored_text_is_escaped_on_every_memory_page(mem: Remembered) -> None:
    """A memory whose text is markup, bidi and control characters is shown inert on the
    Memory page, in its timeline tooltip, in the briefing and on the delete page."""
    hostile = 'Decided: <script>alert(1)</script><img src=x onerror=alert(2)> "q" \u202e end'
    rid = remember(Writes(mem.runtime), hostile, "proj", "decision").id
    for path, params in (
        ("/memory", {"project": "proj"}),
        ("/delete", {"id": rid}),
        (f"/memory/{rid}", {}),
    ):
        page = mem.client.get(path, params=params).text
        assert "<script>alert" not in page and "<img src=x" not in page, path
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page, path


def test_deleting_a_session_says_its_observations_go_with_it(mem: Remembered) -> None:
    """A captured session's delete takes the observations capture kept from its turns
    (memories of their own, `session:<id>#n`): the confirmation page says so, naming each,
    before anything goes, and what it says is what the delete then does."""
    from imprint.store.records import Record, WriteBatch

    sid = SESSIONS[0]
    writes = Writes(mem.runtime)
    observed = Record(
        id="0f1e2d3c4b5a6978",
        content="Decision: the kestrel cache stays in memory.",
        project="proj",
        source=f"session:{sid}#0",
        source_type="memory",
        type="decision",
        kind="observation",
    )
    writes.write(writes.open(""), WriteBatch(upserts=(observed,)))
    asked = {"source": f"session:{sid}", "project": "proj"}
    confirm = mem.client.get("/delete", params=asked)
    assert confirm.status_code == 200, confirm.text
    text = _text(confirm.text)
    assert "1 observation captured from it, a memory of its own, goes too" in text
    assert f"decision memory {observed.id}: the kestrel cache stays in memory" in text.replace(
        "Decision: ", ""
    )
    done = mem.post("/delete", asked)
    assert done.status_code == 200 and "1 observation of it" in done.text
    gone = mem.client.get(f"/memory/{observed.id}", params={"workspace": ""})
    assert gone.status_code == 404
