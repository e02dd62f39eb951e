"""Helpers shared by tests (moved unchanged from the test module of the same name)."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from tests.integration.conftest import owner_env
from tests.support.serve import _text


def _call(data_dir: Path, cwd: Path, tool: str, args: dict[str, object], **env: str) -> str:
    """One tool call through `imprint serve` (the stdio bridge) of `data_dir`; `env` goes
    to the daemon it starts too."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "imprint.cli", "serve"],
        env={**owner_env(data_dir), **env},
        cwd=str(cwd),
    )

    async def go() -> str:
        with anyio.fail_after(120):  # a bound for a failing test only
            async with Client(params) as client:
                return _text(await client.call_tool(tool, args))

    return anyio.run(go)
