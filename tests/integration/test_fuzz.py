"""Fuzzing through real MCP sessions: hostile arguments for all 17 tools and recall plans,
over a stdio `imprint serve` (bridged to the shared daemon) and over `serve --http`.

Each transport keeps ONE session open for every call. Each answer is a normal result or a
one-line error naming an argument; no traceback, crash or hang; a refused call leaves the
store byte-for-byte unchanged (tests/support/fuzz.py's fingerprint); `status` answers afterwards.
`IMPRINT_FUZZ_CALLS=5000` runs a longer campaign by hand; CI runs the fixed-seed default.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, Phase, given, settings
from mcp.client import Client
from mcp.shared.exceptions import MCPError

from benchmark._common import serving_http
from tests.integration.conftest import daemon_pid
from tests.integration.conftest import owner_env as _env
from tests.support.fuzz import check_answer, fingerprint, tool_calls
from tests.support.serve import (
    _stdio,
    _token_client,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

CALLS = int(os.environ.get("IMPRINT_FUZZ_CALLS", "600"))  # per transport; CI: 2 x 600
SHOW = bool(os.environ.get("IMPRINT_FUZZ_SHOW"))  # print the first refusal of each kind
CALL_TIMEOUT_SEC = 120


class Remote:
    """One MCP client session held open in a background event loop, called synchronously."""

    def __init__(self, portal: BlockingPortal, client: Client) -> None:
        self.portal = portal
        self.client = client

    def call(self, tool: str, args: Any) -> tuple[bool, str]:
        async def go() -> tuple[bool, str]:
            with anyio.fail_after(CALL_TIMEOUT_SEC):
                try:
                    result = await self.client.call_tool(tool, args)
                except MCPError as exc:
                    return True, str(exc)
            texts = [getattr(part, "text", "") for part in result.content]
            return bool(result.is_error), "\n".join(texts)

        return self.portal.call(go)


@contextlib.contextmanager
def _remote(open_client: Callable[[], Any]) -> Iterator[Remote]:
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(open_client()) as client,
    ):
        yield Remote(portal, client)


def _cwd(root: Path) -> Path:
    """The session's folder: a little tree, links out of it, and a FIFO that blocks readers."""
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "notes.md").write_text("# Notes\n\nThe pelican glides over the bay.\n")
    (root / "docs" / "retry.py").write_text("def retry(fn):\n    return fn()\n")
    (root / "link-to-etc").symlink_to("/etc")
    (root / "link-to-zero").symlink_to("/dev/zero")
    os.mkfifo(root / "a-fifo")
    return root


@dataclass
class Campaign:
    calls: int = 0
    refused: int = 0
    by_tool: Counter[str] = field(default_factory=Counter)
    refused_by: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)


def _seed(remote: Remote) -> tuple[list[str], list[str]]:
    ids = []
    for text in ("the heron waits", "the kingfisher dives", "decided: retries back off"):
        is_error, answer = remote.call("store", {"content": text, "project": "birds"})
        assert not is_error, answer
        ids.append(answer.split()[1])
    for args in (
        {"path": "docs"},
        {"name": "inline.md", "content": "# Inline\n\nA gannet."},
        {"action": "add", "subject": "imprint", "predicate": "uses", "object": "sqlite"},
    ):
        tool = {"path": "ingest_path", "name": "ingest_content", "action": "kg_edit"}[
            next(iter(args))
        ]
        is_error, answer = remote.call(tool, args)
        assert not is_error, answer
    return ids, ["docs/notes.md", "docs/retry.py", "inline.md"]


def _fuzz(remote: Remote, data_dir: Path, calls: int) -> Campaign:
    ids, sources = _seed(remote)
    campaign = Campaign()

    @settings(
        max_examples=calls,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(tool_calls(ids, sources))
    def one(call: tuple[str, Any]) -> None:
        tool, args = call
        before = fingerprint(data_dir)
        try:
            is_error, text = remote.call(tool, args)
        except TimeoutError:
            campaign.failures.append(f"{tool}: no answer in {CALL_TIMEOUT_SEC} s: {args!r:.300}")
            return
        campaign.calls += 1
        campaign.by_tool[tool] += 1
        problem = check_answer(tool, is_error, text)
        if is_error:
            campaign.refused += 1
            key = f"{tool}.{text.split(':', 1)[0][:30]}"
            if key not in campaign.refused_by and SHOW:
                print(f"{key}: {args!r:.150} -> {text:.200}")
            campaign.refused_by[key] += 1
            if problem is None and fingerprint(data_dir) != before:
                problem = "a refused call changed the store"
        if problem is not None:
            campaign.failures.append(f"{tool}: {problem}: {args!r:.300} -> {text!r:.300}")

    one()
    return campaign


def _after(remote: Remote, campaign: Campaign, calls: int) -> None:
    is_error, status = remote.call("status", {})
    assert not is_error and "indexes: consistent" in status, status
    print(
        f"fuzz: {campaign.calls} calls, {campaign.refused} refused, "
        f"{len(campaign.failures)} failures; per tool {dict(campaign.by_tool)}; "
        f"refusals {campaign.refused_by.most_common(12)}"
    )
    for failure in campaign.failures:
        print(f"fuzz failure: {failure}")
    assert campaign.failures == [], "\n".join(campaign.failures[:40])
    assert campaign.calls >= calls
    assert len(campaign.by_tool) == 17
    assert 0 < campaign.refused < campaign.calls  # hostile, yet not all refused


def test_fuzzed_calls_over_stdio_through_the_daemon(
    data_dir: Path,
    tmp_path: Path,
) -> None:
    """600 fuzzed calls (fixed seed) on one stdio session bridged to the daemon: each a
    result or a one-line error naming an argument, refused calls change nothing, the
    daemon still answers status, and it is the same daemon as at the start."""
    cwd = _cwd(tmp_path / "cwd")
    with _remote(lambda: Client(_stdio(data_dir, cwd))) as remote:
        # The bridge answers the handshake from its snapshot while the daemon starts: the
        # first call is the one that waits for it.
        remote.call("status", {})
        pid = daemon_pid(data_dir)
        campaign = _fuzz(remote, data_dir, CALLS)
        _after(remote, campaign, CALLS)
        assert daemon_pid(data_dir) == pid  # never crashed and replaced


def test_fuzzed_calls_over_streamable_http(
    data_dir: Path,
    tmp_path: Path,
) -> None:
    """600 fuzzed calls (fixed seed) on one streamable HTTP session with the bearer token,
    under the same checks; the server process is still running at the end."""
    cwd = _cwd(tmp_path / "cwd")
    with serving_http(_env(data_dir), cwd, tmp_path / "http.stderr", seconds=90) as (proc, port):
        token = (data_dir / "http_token").read_text().strip()
        url = f"http://127.0.0.1:{port}/mcp"
        with _remote(lambda: _token_client(url, token)) as remote:
            campaign = _fuzz(remote, data_dir, CALLS)
            _after(remote, campaign, CALLS)
        assert proc.poll() is None


def test_the_answer_check_catches_what_it_should() -> None:
    """The checker itself: tracebacks, multi-line errors and errors naming nothing fail."""
    assert check_answer("search", False, "1 results") is None
    assert check_answer("search", True, "limit: 0 is not allowed; 1-50") is None
    assert check_answer("search", True, "boom\nTraceback (most recent call last):")
    assert check_answer("search", True, "limit bad\nsecond line")
    assert check_answer("search", True, "something went wrong")
    assert check_answer("get_memory", False, 'File "/x.py", line 3')
    assert re.fullmatch(r"[0-9a-f]{64}", fingerprint(Path("/nonexistent")))
