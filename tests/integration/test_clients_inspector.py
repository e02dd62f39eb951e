"""The MCP Inspector's CLI (the version scripts/node pins) against a real Imprint, over stdio
and over streamable HTTP with the bearer header: the tool list passes its `--strict`
portability check, and every tool is called once."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import http_server
from tests.support.node_clients import client, run_client

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

INSPECTOR = "@modelcontextprotocol/inspector"


@pytest.fixture
def served(data_dir: Path, tmp_path: Path) -> Iterator[tuple[Path, str, str]]:
    """`serve --http` owning `data_dir`: the data dir, its URL and its token."""
    with http_server(data_dir, tmp_path) as (_proc, port):
        token = (data_dir / "http_token").read_text().strip()
        yield data_dir, f"http://127.0.0.1:{port}/mcp", token


def _targets(data_dir: Path, url: str, token: str) -> dict[str, list[str]]:
    """The Inspector's arguments that name the server, per transport: stdio starts
    `imprint serve` (bridged to the data dir's owner), http sends the header."""
    stdio = ["-e", f"IMPRINT_DATA_DIR={data_dir}", sys.executable, "-m", "imprint.cli", "serve"]
    return {"stdio": stdio, "http": [url, "--header", f"Authorization: Bearer {token}"]}


def _inspect(
    target: list[str], cwd: Path, *method: str
) -> tuple[subprocess.CompletedProcess[str], dict]:
    proc = run_client([client(INSPECTOR), "--cli", *target, *method], cwd)
    try:
        answer = json.loads(proc.stdout)
    except ValueError:
        answer = {}
    return proc, answer


def _text(answer: dict) -> str:
    return "".join(c.get("text", "") for c in answer.get("content", []))


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_inspector_strict_check_passes_and_every_tool_answers(
    served: tuple[Path, str, str], tmp_path: Path, transport: str
) -> None:
    """Over each transport the Inspector's `--strict` tools/list reports no portability
    problem for the 17 tools, and each of the 17 tools, called once, gives its answer."""
    data_dir, url, token = served
    target = _targets(data_dir, url, token)[transport]
    work = tmp_path / f"work-{transport}"
    work.mkdir()
    (work / "heron.md").write_text("# Herons\n\nThe grey heron stalks fish at dawn.\n")

    listed, tools = _inspect(target, work, "--method", "tools/list", "--strict")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert listed.stderr.strip() == "", listed.stderr  # --strict: each problem on stderr
    names = sorted(t["name"] for t in tools["tools"])
    assert len(names) == 17, names

    called: list[str] = []

    def call(tool: str, *args: str, error: bool = False) -> str:
        pairs = [a for arg in args for a in ("--tool-arg", arg)]
        proc, answer = _inspect(target, work, "--method", "tools/call", "--tool-name", tool, *pairs)
        assert answer.get("isError") is error, (tool, proc.stdout, proc.stderr)
        assert (proc.returncode == 0) is not error, proc.stderr  # isError: exit status 1
        called.append(tool)
        return _text(answer)

    bird = f"the {transport} inspector saw a bittern"
    stored = call("store", f"content={bird}", "project=birds")
    memory = stored.removeprefix("stored ")
    assert stored.startswith("stored ") and memory
    assert bird in call("search", f"query=bittern {transport}", "max_chars=1200")
    assert bird in call("get_memory", f"id={memory}")
    call("neighbors", f"id={memory}", "k=3")
    note = f"notes-{transport}.md"
    ingested = call("ingest_content", f"name={note}", "content=# Kites\n\nRed kites circle.")
    assert f"ingested '{note}'" in ingested
    assert "Red kites circle" in call("file_chunks", f"source={note}")
    assert call("file_summary", f"source={note}").startswith(note)
    assert note in call("list_sources", "limit=200")
    assert "added fact:" in call(
        "kg_edit", "action=add", f"subject={transport}-heron", "predicate=eats", "object=fish"
    )
    assert f"{transport}-heron | eats | fish" in call("kg_query", f"subject={transport}-heron")
    assert "root of workspace" in call("graph_scope")
    assert "indexes: consistent" in call("status")
    assert "workspace" in call("device_context")
    assert "ingested 1 files" in call("ingest_path", f"path={work}", "project=birds")
    # Loopback is refused by default (ingest.allow_private_urls): the tool's own answer.
    refused = call("ingest_url", f"url={url.removesuffix('/mcp')}/", error=True)
    assert "nothing was stored" in refused
    assert "bittern" in call("recall", f"question=bittern {transport}")
    assert call("delete", f"id={memory}").startswith("deleted")
    assert sorted(called) == names
