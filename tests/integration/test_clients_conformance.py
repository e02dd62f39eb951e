"""The MCP conformance suite (the version scripts/node pins) against `serve --http`, through
a test-side proxy that adds the bearer header the suite cannot send.

Only the server scenarios that apply to a server without the suite's fixtures (its test
tools, prompts and resources) and to what Imprint offers: not logging, completion, or the
fixture tools' content types."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.integration.conftest import http_server
from tests.support.bearer_proxy import bearer_proxy
from tests.support.node_clients import client, run_client

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

SCENARIOS = (
    "server-initialize",
    "ping",
    "tools-list",
    "resources-list",
    "prompts-list",
    "dns-rebinding-protection",
    "server-sse-multiple-streams",
)


def _scenario(url: str, scenario: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """One scenario of the suite against `url`."""
    conformance = client("@modelcontextprotocol/conformance")
    return run_client([conformance, "server", "--url", url, "--scenario", scenario], cwd)


def test_conformance_scenarios_pass_through_the_bearer_proxy(
    data_dir: Path, tmp_path: Path
) -> None:
    """Each applicable conformance scenario passes every one of its checks against a real
    `serve --http` (DNS-rebinding: a foreign Host or Origin is refused, a loopback one
    served), the token added by the proxy."""
    failed = {}
    with http_server(data_dir, tmp_path) as (_proc, port):
        token = (data_dir / "http_token").read_text().strip()
        with bearer_proxy(port, token) as proxy_port:
            for scenario in SCENARIOS:
                proc = _scenario(f"http://127.0.0.1:{proxy_port}/mcp", scenario, tmp_path)
                if proc.returncode != 0 or " 0 failed" not in proc.stdout:
                    failed[scenario] = proc.stdout[-3000:] + proc.stderr[-1000:]
    assert failed == {}


def test_the_proxy_is_what_lets_the_suite_in(data_dir: Path, tmp_path: Path) -> None:
    """Without the proxy (no header) the suite's initialize scenario fails on the 401 (whose
    answer names the token file), so the passes above are answers to an authorised client."""
    with http_server(data_dir, tmp_path) as (_proc, port):
        proc = _scenario(f"http://127.0.0.1:{port}/mcp", "server-initialize", tmp_path)
    assert proc.returncode != 0, proc.stdout
    assert '"error":"invalid_token"' in proc.stdout, proc.stdout
    assert "http_token file" in proc.stdout and str(data_dir) not in proc.stdout
