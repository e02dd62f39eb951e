"""Helpers shared by tests (moved unchanged from the test module of the same name)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client

from imprint.actors.lifecycle import Runtime
from imprint.reads.gateway import ActorReads
from imprint.reads.search import SearchArgs, search
from imprint.server import build_server


def call(runtime: Runtime, cwd: Path, tool: str, args: dict[str, Any]) -> tuple[bool, str]:
    """One tool call through an in-memory MCP client: (is_error, text)."""

    async def go() -> tuple[bool, str]:
        async with Client(build_server(runtime, cwd)) as client:
            result = await client.call_tool(tool, args)
            return bool(result.is_error), getattr(result.content[0], "text", "")

    return anyio.run(go)


def lexical(runtime: Runtime, word: str) -> list[str]:
    return [
        h.record.source
        for h in search(ActorReads(runtime), SearchArgs(query=word, mode="lexical")).hits
    ]
