"""A client nobody here wrote: the MCP Inspector's CLI mode against `imprint serve`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.node_clients import client, client_env

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def _run(data_dir: Path, *method: str) -> dict[str, object]:
    proc = subprocess.run(
        [
            client("@modelcontextprotocol/inspector"),
            "--cli",
            "-e",
            f"IMPRINT_DATA_DIR={data_dir}",
            "-e",
            "IMPRINT_SERVER_IDLE_EXIT_SEC=60",
            sys.executable,
            "-m",
            "imprint.cli",
            "serve",
            *method,
        ],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
        cwd=data_dir.parent,
        env=client_env(data_dir.parent),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def test_inspector_lists_seventeen_tools_and_calls_search(data_dir: Path) -> None:
    """The Inspector lists the 17 tools and gets a search answer from a real stdio server."""
    listed = _run(data_dir, "--method", "tools/list")
    names = sorted(t["name"] for t in listed["tools"])  # type: ignore[union-attr, index]
    assert len(names) == 17 and "search" in names and "ingest_path" in names
    stored = _run(
        data_dir,
        "--method",
        "tools/call",
        "--tool-name",
        "store",
        "--tool-arg",
        "content=the inspector saw a bittern",
    )
    assert stored["isError"] is False
    found = _run(
        data_dir,
        "--method",
        "tools/call",
        "--tool-name",
        "search",
        "--tool-arg",
        "query=bittern",
        "--tool-arg",
        "max_chars=1200",
    )
    text = found["content"][0]["text"]  # type: ignore[index]
    assert found["isError"] is False and "the inspector saw a bittern" in text
    assert "structuredContent" not in found  # text only: no second copy of the answer
