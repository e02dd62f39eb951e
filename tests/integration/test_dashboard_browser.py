"""The dashboard in a real browser: Debian's Chromium driven by Playwright for Python.

Playwright's own browser download is not used (nor reachable): the test launches the
system's /usr/bin/chromium. Without it the test skips, except under CI, where it fails.
"""

from __future__ import annotations

import os
import re
import tempfile
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from imprint.config import config_path
from imprint.dashboard import DashboardServer
from imprint.store.embedder import Embedder
from tests.support.dashboard_support import (
    REMEMBERED,
    SESSIONS,
    TIMEOUT_PLAN,
    ingested_runtime,
    owner,
    remembered,
    slow_kg_query,
)

CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
# Screenshots go to a temporary folder unless DASHBOARD_SCREENSHOTS names one (set it to the
# repository's docs/ to refresh the pictures docs/dashboard.md shows).
SHOTS = Path(
    os.environ.get("DASHBOARD_SCREENSHOTS")
    or Path(tempfile.gettempdir()) / f"imprint-dashboard-shots-{os.getuid()}"
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


def _unavailable(why: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"CI is set and Chromium cannot start: {why}")
    pytest.skip(f"Chromium cannot start: {why}")


@pytest.fixture
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        _unavailable(f"playwright is not installed ({exc})")
    if not CHROMIUM.exists():
        _unavailable(f"{CHROMIUM} is missing (apt-get install -y chromium)")
    with sync_playwright() as p:
        try:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        except Exception as exc:
            _unavailable(str(exc).splitlines()[0])
        try:
            yield browser
        finally:
            browser.close()


def test_every_page_in_chromium(
    browser: Any, tmp_path: Path, embedder: Embedder, small_tree: Path
) -> None:
    """Every page opens without a console error; search and recall run through their forms;
    the waterfall has one bar per step and marks the step that timed out; a setting edited
    on the page is read back from config.toml. A screenshot per page goes to SHOTS."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    data = tmp_path / "data"
    with ingested_runtime(data, small_tree, embedder) as runtime:
        server = DashboardServer(runtime, owner(), port=0, cwd=small_tree).start()
        try:
            _drive(browser, server, data)
        finally:
            server.stop()


def _drive(browser: Any, server: DashboardServer, data: Path) -> None:
    from playwright.sync_api import expect

    base = f"http://127.0.0.1:{server.port}"
    # Another browser without the token's cookie sees 401 and nothing else.
    stranger = browser.new_context()
    refused = stranger.new_page().goto(base + "/")
    assert refused.status == 401 and "<table" not in refused.text()
    stranger.close()
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems: list[str] = []
    page.on(
        "console",
        lambda msg: (
            problems.append(f"console {msg.type}: {msg.text}") if msg.type == "error" else None
        ),
    )
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))

    def shot(name: str) -> None:
        page.screenshot(path=str(SHOTS / f"dashboard-{name}.png"), full_page=True)

    response = page.goto(server.url())
    assert response.status == 200 and page.url == base + "/"
    assert "indexes agree" in page.content()
    shot("overview")

    page.goto(base + "/search")
    page.fill("input[name=q]", "purple kangaroo protocol")
    page.click("#search-form button")
    page.wait_for_selector("table.hits")
    first = page.locator("table.hits tbody tr").first.locator("td")
    assert "docs/espresso.md#0" in first.nth(3).inner_text()
    assert first.nth(7).inner_text() == "yes"  # exact phrase
    shot("search")

    page.goto(base + "/settings")
    row = page.locator(
        "form.setting", has=page.locator('input[data-key="recall.step_timeout_sec"]')
    )
    row.locator("input[name=value]").fill("0.5")
    row.locator("button").click()
    page.wait_for_selector("p.saved")
    saved = tomllib.loads(config_path(data).read_text(encoding="utf-8"))
    assert saved["recall"]["step_timeout_sec"] == 0.5
    shot("settings")

    page.goto(base + "/recall")
    page.fill("textarea[name=question]", "how do I pull a ristretto, and what is stored?")
    page.fill("#plan", '[{"tool": "store", "args": {}}]')
    # The server's validator answers as the plan is typed (no eval: the page's CSP forbids it).
    expect(page.locator("#plan-error")).to_contain_text("'store' is a write")
    page.fill("#plan", TIMEOUT_PLAN)
    expect(page.locator("#plan-error")).to_have_text("")
    with slow_kg_query():
        page.click("#recall-run")
        page.wait_for_selector("svg.waterfall", timeout=60_000)
    assert "step 3 kg_query(subject='slow'): timeout" in page.inner_text("#recall-output")
    bars = page.locator('svg.waterfall g[data-kind="step"]')
    assert bars.count() == 3
    timed_out = page.locator('svg.waterfall g[data-kind="step"][data-outcome="timeout"]')
    assert timed_out.count() == 1 and timed_out.get_attribute("data-step") == "3"
    assert page.locator("svg.waterfall g.deadline").count() == 1
    shot("recall")

    page.goto(base + "/traces")
    page.click("table.traces tbody tr >> nth=0 >> a")
    page.wait_for_selector("svg.waterfall")
    assert re.search(r"/traces/[0-9a-f]{12}$", page.url)
    page.goto(base + "/traces")
    shot("traces")

    page.goto(base + "/sources")
    page.click("text=docs/espresso.md")
    page.wait_for_selector("article.chunk")
    shot("source")
    page.click("article.chunk h3 a")
    page.wait_for_selector("table.kv")
    assert "tagged by" in page.content()
    shot("record")
    page.goto(base + "/sources")
    shot("sources")

    assert not problems, problems


def test_memory_pages_in_chromium(
    browser: Any, tmp_path: Path, embedder: Embedder, small_tree: Path
) -> None:
    """With JavaScript off (pages must not need it): after memories of every type, a
    supersede and two captured sessions, the Memory page shows each memory, the superseded
    one struck through with its successor, both sessions and the next briefing's text; the
    timeline is drawn; the session page shows its turns; Restore works as a plain form.
    Screenshots of the Memory and session pages go to SHOTS."""
    from imprint.reads.briefing import briefing_text
    from imprint.reads.gateway import ActorReads
    from imprint.writes.gateway import Writes

    SHOTS.mkdir(parents=True, exist_ok=True)
    with ingested_runtime(tmp_path / "data", small_tree, embedder) as runtime:
        ids = remembered(runtime, Writes(runtime, small_tree), tmp_path / "work")
        reads = ActorReads(runtime)
        with reads.deadline() as deadline:
            hook = briefing_text(reads, reads.open(""), "proj", 2000, deadline)
        server = DashboardServer(runtime, owner(), port=0, cwd=small_tree).start()
        try:
            context = browser.new_context(java_script_enabled=False)
            page = context.new_page()
            page.set_viewport_size({"width": 1280, "height": 900})
            base = f"http://127.0.0.1:{server.port}"
            assert page.goto(server.url()).status == 200
            page.click("header nav >> text=Memory")
            page.click('a[href="/memory?project=proj"]')
            page.wait_for_selector("svg.timeline")
            text = page.inner_text("main")
            for name, memory in REMEMBERED.items():
                assert memory in text, name
            old, new = ids["decision"], ids["reversal"]
            struck = page.locator(f"article#m-{old}")
            assert struck.locator("s").count() == 1
            assert struck.locator(f'a[href="/memory/{new}"]').count() >= 1
            assert page.locator("svg.timeline circle.mark").count() == len(REMEMBERED) + 1
            assert page.locator("svg.timeline rect.session").count() == len(SESSIONS)
            assert page.locator("svg.timeline path.supersede").count() == 1
            box = page.locator("svg.timeline").bounding_box()
            assert box and box["width"] > 900 and box["height"] > 100
            assert page.inner_text("pre.briefing") == hook
            page.screenshot(path=str(SHOTS / "dashboard-memory.png"), full_page=True)
            page.click(f'a[href="/session?id={SESSIONS[0]}&project=proj"] >> nth=0')
            page.wait_for_selector("pre.turn")
            assert f"what did {SESSIONS[0]} decide" in page.inner_text("main")
            assert "capture.done" in page.inner_text("main")
            page.screenshot(path=str(SHOTS / "dashboard-session.png"), full_page=True)
            page.goto(f"{base}/memory?project=proj")
            struck = page.locator(f"article#m-{old}")
            struck.locator("button", has_text="Restore").click()
            page.wait_for_selector("svg.timeline")
            assert page.locator(f"article#m-{old} s").count() == 0
            context.close()
        finally:
            server.stop()
