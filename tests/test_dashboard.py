"""The dashboard's routes through Starlette's test client: every page, every refusal."""

from __future__ import annotations

import json
import re
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from imprint.actors.lifecycle import Runtime
from imprint.config import config_path
from imprint.dashboard import Guard, build_app, build_waterfall, check_host, render_svg
from imprint.errors import ImprintError
from imprint.logs import configure_logging, get_logger, log_files, log_path
from imprint.reads.gateway import ActorReads
from imprint.reads.search import SearchArgs, search, search_text
from imprint.recall.plan import parse_plan
from imprint.store.embedder import Embedder
from imprint.trace import read_recall_events, recall_summaries
from imprint.writes.gateway import Writes
from imprint.writes.memories import remember
from tests.support.dashboard import BASE, ORIGIN, PORT, Dash
from tests.support.dashboard_support import TIMEOUT_PLAN, owner, slow_kg_query

PAGES = ["/", "/memory", "/search", "/recall", "/traces", "/settings", "/sources"]


def _log_text(dash: Dash) -> str:
    return "".join(p.read_text(encoding="utf-8") for p in log_files(dash.runtime.data_dir))


# -- pages ---------------------------------------------------------------------------------


def test_overview_shows_counts_agreement_owner_and_inference(dash: Dash) -> None:
    """Overview: per-project counts, index agreement, facts, last write, owner, inference."""
    dash.sign_in()
    html = dash.client.get("/").text
    assert "indexes agree" in html
    assert re.search(r"<td><a href=\"/sources\?project=proj[^\"]*\">proj</a></td><td>6</td>", html)
    assert "facts 1 (1 current)" in html
    assert "last write" in html and "s ago" in html
    assert "test (pid " in html and "connected clients" in html
    assert "inference provider" in html and "model loaded" in html
    assert "running ingests" in html


def test_overview_says_when_the_plugins_hooks_found_no_imprint(dash: Dash) -> None:
    """A miss plugin/bin/imprint logged (no Claude Code hook ran since) is in the hooks
    table, pointing at `imprint hooks status`."""
    log = dash.runtime.data_dir / "hooks" / "plugin-missing.log"
    log.parent.mkdir(exist_ok=True)
    at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 120))
    log.write_text(f"{at} hook session-start --client claude-code\n")
    dash.sign_in()
    html = dash.client.get("/").text
    assert re.search(
        r"the plugin's hooks found no imprint to run 1 times, the last [\d.]+ min ago", html
    )
    assert "see imprint hooks status" in html


def test_search_shows_the_tools_blocks_and_why_each_hit_ranked(dash: Dash) -> None:
    """Search: the tool's own text, and per hit its vector rank, BM25 rank, phrase, score."""
    dash.sign_in()
    html = dash.client.get("/search", params={"q": "purple kangaroo protocol"}).text
    expected = search_text(ActorReads(dash.runtime), SearchArgs(query="purple kangaroo protocol"))
    assert _unescape(re.search(r'<pre class="tool-output">(.*?)</pre>', html, re.S)[1]) == expected
    first = re.search(r'<table class="hits">.*?<tbody><tr>(.*?)</tr>', html, re.S)[1]
    cells = re.findall(r"<td>(.*?)</td>", first, re.S)
    assert "docs/espresso.md#0" in cells[3]
    assert cells[5].isdigit() and cells[6] == "1" and cells[7] == "yes"  # vector, BM25, phrase
    assert re.fullmatch(r"0\.\d{4}", cells[8])
    assert 'href="/memory/' in cells[1]


def test_each_hit_carries_the_numbers_its_ranking_used(dash: Dash) -> None:
    """Every hit's `why` is the ranking's own: its fused score is the hit's score, and a
    single-mode search names only its own rank."""
    reads = ActorReads(dash.runtime)
    for mode in ("hybrid", "semantic", "lexical"):
        rows = search(reads, SearchArgs(query="actor mailbox", mode=mode))  # type: ignore[arg-type]
        assert rows.hits and all(h.why is not None and h.why.fused == h.score for h in rows.hits)
        if mode == "semantic":
            assert all(h.why.lexical_rank is None and h.why.vector_rank for h in rows.hits)


def test_search_bad_input_is_one_line_and_400(dash: Dash) -> None:
    """A bad mode gets the tool's own one-line error."""
    dash.sign_in()
    r = dash.client.get("/search", params={"q": "x", "mode": "fuzzy"})
    assert r.status_code == 400 and "mode: &#x27;fuzzy&#x27; is not allowed" in r.text


def test_recall_runs_and_shows_response_and_waterfall(dash: Dash) -> None:
    """Recall through the form: the response and one waterfall bar per step."""
    dash.sign_in()
    plan = '[{"tool": "search", "args": {"query": "espresso"}}, {"tool": "list_sources"}]'
    r = dash.post("/recall", {"question": "coffee?", "plan": plan, "max_chars": "4000"})
    assert r.status_code == 200, r.text
    assert 'recall "coffee?": 2 steps' in _unescape(r.text)
    svg = re.search(r"<svg .*?</svg>", r.text, re.S)[0]
    assert len(re.findall(r'data-kind="step"', svg)) == 2
    assert 'class="deadline"' in svg and "slowest" in svg
    assert re.search(r'data-kind="read" data-step="1"', svg)  # reads nested under step 1


def test_search_steps_answered_together_keep_a_bar_each_with_their_reads(dash: Dash) -> None:
    """A recall's search steps are answered together, and each still has its own step bar
    with its own reads nested under it."""
    dash.sign_in()
    plan = (
        '[{"tool": "search", "args": {"query": "espresso"}}, {"tool": "list_sources"}, '
        '{"tool": "search", "args": {"query": "tomato sauce"}}]'
    )
    r = dash.post("/recall", {"question": "two searches", "plan": plan, "max_chars": "4000"})
    assert r.status_code == 200, r.text
    svg = re.search(r"<svg .*?</svg>", r.text, re.S)[0]
    steps = re.findall(r'data-kind="step" data-step="(\d)" data-outcome="(\w+)"', svg)
    assert steps == [("1", "ok"), ("2", "ok"), ("3", "ok")], steps
    for step in ("1", "3"):
        assert re.search(rf'data-kind="read" data-step="{step}"', svg), step


def test_recall_plan_errors_inline_from_the_same_validator(dash: Dash) -> None:
    """A bad plan shows parse_plan's own message next to the editor; nothing runs."""
    dash.sign_in()
    bad = '[{"tool": "store", "args": {}}]'
    with pytest.raises(ImprintError) as expected:
        parse_plan(bad)
    r = dash.post("/recall", {"question": "q", "plan": bad})
    assert r.status_code == 400
    shown = re.search(r'<p class="error" id="plan-error">(.*?)</p>', r.text)[1]
    assert _unescape(shown) == str(expected.value)
    assert '"question"' not in _log_text(dash)  # no recall.start: nothing ran
    v = dash.client.post(
        "/recall/validate",
        json={"plan": '[{"tool": "search", "args": {"limit": "x"}}]'},
        headers={**ORIGIN, "X-CSRF-Token": dash.guard.csrf},
    ).json()
    assert not v["ok"] and v["error"].startswith("plan: step 1 (search):")
    ok = dash.client.post(
        "/recall/validate",
        json={"plan": TIMEOUT_PLAN},
        headers={**ORIGIN, "X-CSRF-Token": dash.guard.csrf},
    ).json()
    assert ok == {"ok": True, "error": "", "steps": 3}


def test_waterfall_marks_a_timed_out_step_and_the_deadline(dash: Dash) -> None:
    """A step past recall.step_timeout_sec is a bar marked TIMEOUT ending at the deadline."""
    dash.sign_in()
    dash.runtime.config.recall.step_timeout_sec = 0.5
    with slow_kg_query():
        r = dash.post("/recall", {"question": "slow one", "plan": TIMEOUT_PLAN})
    assert r.status_code == 200, r.text
    assert "step 3 kg_query(subject=&#x27;slow&#x27;): timeout" in r.text
    svg = re.search(r"<svg .*?</svg>", r.text, re.S)[0]
    steps = re.findall(
        r'<g class="([^"]*)" data-kind="step" data-step="(\d)" '
        r'data-outcome="(\w[\w-]*)"',
        svg,
    )
    assert [(s, o) for _, s, o in steps] == [("1", "ok"), ("2", "ok"), ("3", "timeout")]
    assert "TIMEOUT" in svg and "deadline 5" in svg  # the deadline line at ~500 ms
    assert "slowest" in steps[2][0]
    rid = re.search(r"recall ([0-9a-f]{12})\)", r.text)[1]
    trace = dash.client.get(f"/traces/{rid}")
    # Drawn to the deadline, or where the late answer landed if it is logged by now.
    assert trace.status_code == 200 and "TIMEOUT" in trace.text
    assert "no answer by the deadline" in trace.text or "after the deadline" in trace.text
    listing = dash.client.get("/traces", params={"filter": "failed"}).text
    assert rid in listing
    assert rid not in dash.client.get("/traces", params={"filter": "slow", "slow_ms": "60000"}).text
    svg_file = dash.client.get(f"/traces/{rid}.svg")
    assert svg_file.headers["content-type"].startswith("image/svg+xml")
    events = read_recall_events(log_files(dash.runtime.data_dir), rid)[rid]
    assert svg_file.text == render_svg(build_waterfall(rid, events))


def test_trace_cli_writes_the_same_svg(dash: Dash, tmp_path: Path) -> None:
    """`imprint trace --recall ID --svg FILE` writes the picture the dashboard shows."""
    from typer.testing import CliRunner

    from imprint.cli import app

    dash.sign_in()
    plan = '[{"tool": "list_sources"}]'
    r = dash.post("/recall", {"question": "what is there", "plan": plan})
    rid = re.search(r"recall ([0-9a-f]{12})\)", r.text)[1]
    out = tmp_path / "w.svg"
    result = CliRunner().invoke(app, ["trace", "--recall", rid, "--svg", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text() == dash.client.get(f"/traces/{rid}.svg").text


def test_settings_show_origin_and_edits_reach_config_toml(
    dash: Dash, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Settings: value, origin, allowed range, restart; an edit lands in config.toml."""
    monkeypatch.setenv("IMPRINT_READERS_POOL_SIZE", "3")
    dash.sign_in()
    html = dash.client.get("/settings").text
    row = re.search(r'<code id="readers.pool_size">.*?</tr>', html, re.S)[0]
    assert "env IMPRINT_READERS_POOL_SIZE" in row and "read-only" in row and "<form" not in row
    row = re.search(r'<code id="recall.step_timeout_sec">.*?</tr>', html, re.S)[0]
    assert "default" in row and "float &gt; 0 and &lt;= 300" in row and "applies at once" in row
    r = dash.post("/settings", {"key": "recall.step_timeout_sec", "value": "7.5"})
    assert r.status_code == 200 and "saved recall.step_timeout_sec" in r.text
    on_disk = tomllib.loads(config_path(dash.runtime.data_dir).read_text())
    assert on_disk["recall"]["step_timeout_sec"] == 7.5
    assert dash.runtime.config.recall.step_timeout_sec == 7.5  # a live key applies at once
    row = re.search(r'<code id="recall.step_timeout_sec">.*?</tr>', r.text, re.S)[0]
    assert "config.toml" in row


def test_settings_refuses_bad_values_env_keys_and_secrets(
    dash: Dash, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bad value, an env-set key and a secret are refused; config.toml is untouched."""
    monkeypatch.setenv("IMPRINT_READERS_POOL_SIZE", "3")
    dash.sign_in()
    r = dash.post("/settings", {"key": "readers.pool_size", "value": "5"})
    assert r.status_code == 400 and "set by IMPRINT_READERS_POOL_SIZE" in r.text
    r = dash.post("/settings", {"key": "search.limit", "value": "500"})
    assert r.status_code == 400
    assert (
        "config: search.limit=&#x27;500&#x27; (given) is not allowed: int &gt;= 1 and &lt;= 50"
        in (r.text)
    )
    r = dash.post("/settings", {"key": "tagger.api_key", "value": "sk-new"})
    assert r.status_code == 400 and "sk-new" not in r.text
    assert not config_path(dash.runtime.data_dir).exists()


def test_secrets_never_shown_in_pages_or_logs(dash: Dash, monkeypatch: pytest.MonkeyPatch) -> None:
    """An API key is shown as set / not set; its value is in no page and no log line."""
    secret = "sk-imprint-test-secret-4711"
    monkeypatch.setenv("IMPRINT_TAGGER_API_KEY", secret)
    dash.sign_in()
    html = dash.client.get("/settings").text
    row = re.search(r'<code id="tagger.api_key">.*?</tr>', html, re.S)[0]
    assert "<td>set</td>" in row
    for path in PAGES:
        assert secret not in dash.client.get(path).text
    assert secret not in _log_text(dash)


def test_sources_source_record_and_delete_behind_confirmation(dash: Dash) -> None:
    """Sources list, a source's summary and chunks, a record's tags; delete needs a POST."""
    dash.sign_in()
    html = dash.client.get("/sources", params={"project": "proj"}).text
    assert "5 sources match" in html and "docs/espresso.md" in html
    facts = re.search(r'<table class="facts">.*?</table>', html, re.S)[0]
    assert "<td>imprint</td><td>uses</td><td>sqlite</td>" in facts
    src = dash.client.get("/source", params={"source": "docs/espresso.md", "project": "proj"})
    assert src.status_code == 200 and "ristretto" in src.text and "chunks 0-0 of 1" in src.text
    rid = re.search(r'href="/memory/([0-9a-f]{16})', src.text)[1]
    rec = dash.client.get(f"/memory/{rid}").text
    assert "tagged by" in rec and "<td>rules</td>" in rec and "markdown" in rec
    confirm = dash.client.get("/delete", params={"source": "docs/espresso.md", "project": "proj"})
    assert "cannot be undone" in confirm.text and 'method="post"' in confirm.text
    assert "docs/espresso.md" in dash.client.get("/sources").text  # asking deletes nothing
    gone = dash.post("/delete", {"source": "docs/espresso.md", "project": "proj"})
    assert gone.status_code == 200 and "deleted source docs/espresso.md (1 chunks)" in gone.text
    assert "docs/espresso.md" not in dash.client.get("/sources").text
    memory = re.search(
        r"(\w{16}) \| proj \| \(inline\)",
        search_text(ActorReads(dash.runtime), SearchArgs(query="serialize writes writer actor")),
    )[1]
    assert "Delete this record" in dash.client.get(f"/memory/{memory}").text
    assert dash.post("/delete", {"id": memory}).status_code == 200
    assert dash.client.get(f"/memory/{memory}").status_code == 404


# -- security ------------------------------------------------------------------------------


def test_every_route_needs_the_session_cookie(dash: Dash) -> None:
    """Without the cookie every page, static file and form answers 401 and shows nothing."""
    for path in [*PAGES, "/static/style.css", "/traces/abc", "/memory/x", "/nope"]:
        r = dash.client.get(path)
        assert r.status_code == 401 and "imprint dashboard" in r.text and "<table" not in r.text
    r = dash.client.post("/settings", data={"key": "search.limit", "value": "5"}, headers=ORIGIN)
    assert r.status_code == 401 and not config_path(dash.runtime.data_dir).exists()
    forged = TestClient(
        dash.client.app, base_url=BASE, cookies={f"imprint_dashboard_{PORT}": "forged"}
    )
    assert forged.get("/").status_code == 401


def test_token_works_once_and_goes_stale(dash: Dash) -> None:
    """A token is exchanged once for an HttpOnly SameSite=Strict cookie; reused or stale: 401."""
    token = dash.guard.issue_token()
    first = dash.client.get(f"/search?token={token}", follow_redirects=False)
    assert first.status_code == 303 and first.headers["location"] == "/search"
    cookie = first.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and "path=/" in cookie
    other = TestClient(dash.client.app, base_url=BASE)  # another user who saw the URL
    assert other.get(f"/?token={token}").status_code == 401
    assert other.get("/").status_code == 401
    now = [0.0]
    guard = Guard(PORT, token_ttl_sec=60, clock=lambda: now[0])
    stale = guard.issue_token()
    now[0] = 61.0
    assert guard.redeem(stale) is None
    fresh = guard.issue_token()
    assert guard.redeem(fresh) is not None and guard.redeem(fresh) is None
    assert other.get("/?token=made-up").status_code == 401


def test_host_must_be_this_loopback_name_and_port(dash: Dash) -> None:
    """DNS rebinding: any other Host is refused before the cookie is even looked at."""
    dash.sign_in()
    for host in ("evil.example:8766", "127.0.0.1:9999", "127.0.0.1", "0.0.0.0:8766"):
        r = dash.client.get("/", headers={"Host": host})
        assert r.status_code == 400 and "<table" not in r.text
    assert dash.client.get("/", headers={"Host": "localhost:8766"}).status_code == 200


def test_changes_need_post_csrf_and_same_origin(dash: Dash) -> None:
    """Without the CSRF token, without Origin or from another origin: 403 and no change."""
    dash.sign_in()
    form = {"key": "search.limit", "value": "5"}
    assert dash.client.post("/settings", data={"csrf": dash.guard.csrf, **form}).status_code == 403
    r = dash.client.post(
        "/settings",
        data={"csrf": dash.guard.csrf, **form},
        headers={"Origin": "http://evil.example"},
    )
    assert r.status_code == 403
    assert dash.client.post("/settings", data=form, headers=ORIGIN).status_code == 403
    assert (
        dash.client.post("/settings", data={**form, "csrf": "x"}, headers=ORIGIN).status_code == 403
    )
    r = dash.client.post("/recall/validate", json={"plan": "[]"}, headers=ORIGIN)
    assert r.status_code == 403
    assert dash.client.put("/settings", headers=ORIGIN).status_code == 405
    assert not config_path(dash.runtime.data_dir).exists()
    assert (
        dash.client.get("/settings", params={"key": "search.limit", "value": "5"}).status_code
        == 200
    )
    assert not config_path(dash.runtime.data_dir).exists()  # a GET changes nothing


def test_no_access_control_allow_origin_anywhere(dash: Dash) -> None:
    """No response carries Access-Control-Allow-Origin, even to a cross-origin request."""
    cross = {"Origin": "http://evil.example"}
    responses = [dash.client.get("/", headers=cross)]
    dash.sign_in()
    for path in [*PAGES, "/static/app.js", "/nope"]:
        responses.append(dash.client.get(path, headers=cross))
    responses.append(
        dash.client.options("/settings", headers={**cross, "Access-Control-Request-Method": "POST"})
    )
    responses.append(dash.post("/settings", {"key": "search.limit", "value": "5"}))
    for r in responses:
        assert not any(k.lower().startswith("access-control-") for k in r.headers), r.headers
        assert "frame-ancestors 'none'" in r.headers["content-security-policy"]


def test_only_loopback_may_be_bound() -> None:
    """--host other than 127.0.0.1 is refused with a one-line error."""
    assert check_host("127.0.0.1") == "127.0.0.1"
    for host in ("0.0.0.0", "::", "192.168.1.2", "localhost"):
        with pytest.raises(ImprintError, match=r"^host: .* is not allowed; the dashboard binds"):
            check_host(host)


def test_cli_refuses_other_hosts(tmp_path: Path) -> None:
    """`imprint dashboard --host 0.0.0.0` exits 2 before anything starts."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "imprint.cli", "dashboard", "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and "host: '0.0.0.0' is not allowed" in out.stderr
    assert not (tmp_path / "data" / "run").exists()


FAKE_BROWSER = """
import json, os, stat, sys
from urllib.parse import unquote, urlparse
seen = {"argv": sys.argv, "cmdline": open("/proc/self/cmdline", "rb").read().decode("latin-1")}
try:
    page = unquote(urlparse(sys.argv[1]).path)
    seen.update(
        page=page,
        file_mode=stat.S_IMODE(os.stat(page).st_mode),
        dir_mode=stat.S_IMODE(os.stat(os.path.dirname(page)).st_mode),
        html=open(page).read(),
    )
finally:
    with open(os.environ["BROWSER_RECORD"], "w") as out:
        json.dump(seen, out)
"""


def test_open_hands_the_browser_a_private_file_not_the_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding 7: `imprint dashboard --open` never puts the one-time token on the browser's
    command line (world-readable in /proc): the browser gets a 0600 file, in a 0700 folder
    under the data dir's run folder, that redirects to the URL; the file is gone after."""
    import socket
    import sys
    import webbrowser

    from typer.testing import CliRunner

    from imprint import daemon as daemon_mod
    from imprint.cli import app

    url = "http://127.0.0.1:8766/?token=ONE-TIME-SECRET-0123456789"
    ours, theirs = socket.socketpair()
    theirs.close()  # the owner "stops" at once: the command returns after the browser ran
    monkeypatch.setattr(daemon_mod, "ask_dashboard", lambda _root, _port: (ours, {"url": url}))
    script = tmp_path / "browser.py"
    script.write_text(FAKE_BROWSER)
    record = tmp_path / "browser.json"
    monkeypatch.setenv("BROWSER", f"{sys.executable} {script} %s")
    monkeypatch.setenv("BROWSER_RECORD", str(record))
    monkeypatch.setattr(webbrowser, "_tryorder", None)  # read BROWSER again
    monkeypatch.setattr(webbrowser, "_browsers", {})
    result = CliRunner().invoke(app, ["dashboard", "--open"])
    assert result.exit_code == 0, result.output
    seen = json.loads(record.read_text())
    assert "SECRET" not in " ".join(seen["argv"]) and "token" not in seen["cmdline"]
    assert seen["argv"][-1].startswith("file://")
    page = Path(seen["page"])
    assert page.parent == tmp_path / "data" / "run" / "browser"
    assert seen["file_mode"] == 0o600 and seen["dir_mode"] == 0o700
    assert f'content="0;url={url}"' in seen["html"] and f'href="{url}"' in seen["html"]
    assert not page.exists()


def test_a_redirect_file_left_behind_is_removed_once_its_token_is_stale(tmp_path: Path) -> None:
    """A file a crashed `imprint dashboard --open` left is removed at the next one, once
    older than the token's lifetime; a recent one stays."""
    import os

    from imprint.dashboard import redirect_file

    data = tmp_path / "data"
    old = redirect_file(data, "http://127.0.0.1:1/?token=a")
    recent = redirect_file(data, "http://127.0.0.1:1/?token=b")
    os.utime(old, (1.0, 1.0))
    third = redirect_file(data, "http://127.0.0.1:1/?token=c")
    assert not old.exists() and recent.exists() and third.exists()
    assert "token=c" in third.read_text() and third.stat().st_mode & 0o777 == 0o600


# -- log and waterfall ---------------------------------------------------------------------


def test_log_rotates_at_max_bytes_keeping_n_files(tmp_path: Path) -> None:
    """log.max_bytes and log.keep bound the JSON log; traces read across the rotated files."""
    data = tmp_path / "data"
    configure_logging(data, level="error", max_bytes=65536, keep=2)
    try:
        log = get_logger("imprint.test")
        for i in range(400):
            log.info("recall.start", recall_id=f"r{i:04d}", question="x" * 300, steps=0)
    finally:
        configure_logging(None, level="warning", to_file=False)
    files = log_files(data)
    assert [p.name for p in files] == ["imprint.jsonl.2", "imprint.jsonl.1", "imprint.jsonl"]
    assert all(p.stat().st_size <= 65536 + 1024 for p in files)
    found = read_recall_events(files)
    ids = list(found)
    assert ids[-1] == "r0399" and ids == sorted(ids)
    newest = read_recall_events(files, limit=5)
    assert list(newest) == ["r0395", "r0396", "r0397", "r0398", "r0399"]
    assert log_path(data) == files[-1]


def _event(ts: float, **fields: Any) -> dict[str, Any]:
    from datetime import UTC, datetime

    return {"timestamp": datetime.fromtimestamp(ts, UTC).isoformat(), **fields}


def test_waterfall_rows_from_the_log() -> None:
    """One bar per step with queue and run, reads nested, model phases, deadline, slowest."""
    t0 = 1_700_000_000.0
    events = [
        _event(
            t0,
            event="recall.start",
            recall_id="r1",
            question="q",
            steps=3,
            tools=["search", "list_sources", "kg_query"],
            timeout_sec=1.0,
        ),
        _event(
            t0 + 0.050,
            event="actor.message",
            message="vector.query",
            step=1,
            actor="VectorReader-0",
            queue_ms=5.0,
            run_ms=30.0,
            outcome="ok",
        ),
        _event(
            t0 + 0.060,
            event="actor.message",
            message="recall.step",
            step=1,
            actor="StepRunner-1",
            queue_ms=2.0,
            run_ms=55.0,
            outcome="ok",
        ),
        _event(
            t0 + 0.020,
            event="actor.message",
            message="recall.step",
            step=2,
            actor="StepRunner-2",
            queue_ms=1.0,
            run_ms=15.0,
            outcome="ok",
        ),
        _event(t0 + 1.004, event="recall.step.timeout", step=3, tool="kg_query", timeout_sec=1.0),
        _event(
            t0 + 1.005,
            event="actor.message",
            message="recall.gather",
            step=-1,
            actor="RecallCoordinator",
            queue_ms=1.0,
            run_ms=1000.0,
            outcome="ok",
        ),
        _event(t0 + 1.300, event="recall.model.plan"),
        _event(
            t0 + 1.400,
            event="actor.message",
            message="inference.complete",
            step=-1,
            actor="InferenceActor",
            queue_ms=100.0,
            run_ms=200.0,
            outcome="ok",
        ),
        _event(t0 + 1.500, event="recall.done", outcome="ok", total_ms=1500.0),
    ]
    wf = build_waterfall("r1", events)
    assert [(b.kind, b.step, b.outcome) for b in wf.bars] == [
        ("gather", None, "ok"),
        ("step", 1, "ok"),
        ("read", 1, "ok"),
        ("step", 2, "ok"),
        ("step", 3, "timeout"),
        ("model", None, "ok"),
    ]
    step1 = wf.bars[1]
    assert step1.label == "step 1 search"
    assert step1.queue_ms == pytest.approx(2.0) and step1.run_ms == pytest.approx(55.0)
    assert wf.bars[2].depth == 1
    # The deadline is set as the gather message is sent: 1005 - 1000 run - 1 queue + 1000.
    assert wf.deadline_ms == pytest.approx(1004.0, abs=0.01)
    assert wf.bars[4].end_at == wf.deadline_ms and wf.bars[4].slowest
    assert wf.bars[5].label == "model: plan" and wf.bars[5].queue_ms == pytest.approx(100.0)
    assert wf.failed and wf.total_ms == 1500.0
    svg = render_svg(wf)
    assert svg.count('data-kind="step"') == 3 and "TIMEOUT" in svg and "deadline 1004 ms" in svg
    summary = recall_summaries({"r1": events})[0]
    assert summary.failed and summary.slowest == "step 3 kg_query" and summary.steps == 3


def test_a_late_skipped_read_is_marked() -> None:
    """A reader message skipped at its deadline (outcome skipped_late) is a marked bar."""
    t0 = 1_700_000_000.0
    events = [
        _event(
            t0, event="recall.start", recall_id="r2", steps=1, tools=["search"], timeout_sec=0.1
        ),
        _event(
            t0 + 0.150,
            event="actor.message",
            message="vector_query",
            step=1,
            actor="VectorReader-1",
            queue_ms=140.0,
            run_ms=0.0,
            outcome="skipped_late",
        ),
        _event(
            t0 + 0.160,
            event="actor.message",
            message="recall.step",
            step=1,
            actor="StepRunner-1",
            queue_ms=1.0,
            run_ms=158.0,
            outcome="error",
        ),
    ]
    wf = build_waterfall("r2", events)
    assert [(b.kind, b.outcome) for b in wf.bars] == [("step", "error"), ("read", "skipped_late")]
    assert wf.failed
    svg = render_svg(wf)
    assert 'data-outcome="skipped_late"' in svg and "SKIPPED_LATE" in svg


def test_read_recall_events_skips_garbage_lines(tmp_path: Path) -> None:
    """Lines that are not JSON, or not a recall's, are skipped."""
    path = tmp_path / "imprint.jsonl"
    lines = [
        "not json",
        json.dumps({"event": "x"}),
        '{"recall_id": broken',
        json.dumps({"event": "recall.start", "recall_id": "abc", "timestamp": "t"}),
    ]
    path.write_text("\n".join(lines) + "\n")
    assert list(read_recall_events([path])) == ["abc"]


def _unescape(text: str) -> str:
    import html

    return html.unescape(text)


def test_the_token_is_in_no_log_line(dash: Dash) -> None:
    """The one-time token and the session cookie never reach the owner's log."""
    token = dash.guard.issue_token()
    r = dash.client.get(f"/?token={token}", follow_redirects=False)
    session = r.cookies[f"imprint_dashboard_{PORT}"]
    dash.client.get("/")
    logged = _log_text(dash)
    assert token not in logged and session not in logged and dash.guard.csrf not in logged


def test_a_busy_port_is_a_one_line_error(dash: Dash) -> None:
    """A port already taken on 127.0.0.1 is refused with the port named; nothing serves."""
    import socket

    from imprint.dashboard import DashboardServer

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        with pytest.raises(ImprintError, match=rf"^port: {port} on 127.0.0.1 is not free"):
            DashboardServer(dash.runtime, owner(), port=port).start()
    server = DashboardServer(dash.runtime, owner(), port=0).start()
    try:
        import httpx

        base = f"http://127.0.0.1:{server.port}"
        assert httpx.get(base + "/").status_code == 401
        with httpx.Client(follow_redirects=True) as client:
            assert client.get(server.url()).status_code == 200
    finally:
        server.stop()


def test_waterfall_shows_the_model_phases(
    tmp_path: Path, embedder: Embedder, small_tree: Path
) -> None:
    """With the model path on, the waterfall has a model: plan and a model: answer bar."""
    from imprint.config import Config
    from imprint.writes.files import ingest_path
    from tests.support.fakes import FakeProvider

    plan = json.dumps({"steps": [{"tool": "search", "args": {"query": "garden compost"}}]})
    provider = FakeProvider(responses=[[plan], ["The heap is turned every fortnight [1]."]])
    config = Config()
    config.recall.llm = True
    config.tagger.provider = "local"
    data = tmp_path / "data"
    configure_logging(data, level="error")
    rt = Runtime(data, config, embedder=embedder, provider_factory=lambda: provider).start()
    try:
        ingest_path(rt, small_tree, project="proj")
        guard = Guard(PORT)
        with TestClient(build_app(rt, guard, owner()), base_url=BASE) as client:
            dash = Dash(rt, guard, client)
            dash.sign_in()
            r = dash.post("/recall", {"question": "how is compost made?", "condense": "on"})
        assert r.status_code == 200, r.text
        assert "answer: The heap is turned every fortnight [1]." in _unescape(r.text)
        svg = re.search(r"<svg .*?</svg>", r.text, re.S)[0]
        labels = re.findall(r'data-kind="model" data-outcome="ok"><title>([^(]+) \(', svg)
        assert [label.strip() for label in labels] == ["model: plan", "model: answer"]
        assert svg.count('data-kind="step"') == 2  # the question's search and the planned one
    finally:
        rt.stop()
        configure_logging(None, level="warning", to_file=False)


def test_a_record_page_shows_its_supersede_chain(dash: Dash) -> None:
    """A memory's page lists its supersede chain: the newer memories above it, linked, and
    the older ones it replaced below; a memory outside any chain shows none."""
    dash.sign_in()
    writes = Writes(dash.runtime)
    a = remember(writes, "The cache lives in Memcached.", "proj").id
    b = remember(writes, "The cache moved to Redis.", "proj", supersedes=[a]).id
    c = remember(writes, "The cache moved to Valkey.", "proj", supersedes=[b]).id
    middle = dash.client.get(f"/memory/{b}").text
    chain = re.search(r'<ol class="chain">.*?</ol>', middle, re.S)[0]
    assert chain.index(f'href="/memory/{c}') < chain.index(f"<strong>{b}</strong>")
    assert chain.index(f"<strong>{b}</strong>") < chain.index(f'href="/memory/{a}')
    oldest = dash.client.get(f"/memory/{a}").text
    assert f'href="/memory/{c}' in oldest and f'href="/memory/{b}' in oldest
    alone = remember(writes, "The queue is NATS.", "proj").id
    assert 'class="chain"' not in dash.client.get(f"/memory/{alone}").text
