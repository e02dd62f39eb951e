"""Helpers shared by tests (moved unchanged from the test module of the same name)."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from tests.integration.conftest import owner_env as _env


def _stdio(data_dir: Path, cwd: Path, pidfile: Path | None = None) -> StdioServerParameters:
    command = f"{sys.executable} -m imprint.cli serve"
    if pidfile is not None:
        # exec keeps the shell's pid, so the test knows which process to kill.
        command = f"echo $$ > {pidfile}; exec {command}"
    return StdioServerParameters(
        command="/bin/sh", args=["-c", command], env=_env(data_dir), cwd=str(cwd)
    )


def _text(result: Any) -> str:
    assert not result.is_error, result.content[0].text
    return str(result.content[0].text)


def _status(data_dir: Path) -> subprocess.CompletedProcess[str]:
    """`imprint status` through its own stdio session (the daemon owns the store)."""

    async def go() -> str:
        async with Client(_stdio(data_dir, data_dir.parent)) as client:
            return _text(await client.call_tool("status", {}))

    return subprocess.CompletedProcess([], 0, anyio.run(go), "")


@contextlib.asynccontextmanager
async def _token_client(url: str, token: str) -> AsyncIterator[Client]:
    """An MCP client over streamable HTTP that sends the bearer token."""
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    headers = {"Authorization": f"Bearer {token}"}
    async with (
        create_mcp_http_client(headers) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
