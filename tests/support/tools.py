"""Helpers shared by tests (moved unchanged from the test module of the same name)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client

from imprint.actors.lifecycle import Runtime
from imprint.server import build_server


class Session:
    """Synchronous calls over one in-memory MCP client session per call."""

    def __init__(self, runtime: Runtime, cwd: Path) -> None:
        self.server = build_server(runtime, cwd)

    def call(self, tool: str, /, **args: Any) -> tuple[bool, str]:
        async def go() -> tuple[bool, str]:
            async with Client(self.server) as client:
                result = await client.call_tool(tool, args)
                return bool(result.is_error), result.content[0].text  # type: ignore[union-attr]

        return anyio.run(go)

    def ok(self, tool: str, /, **args: Any) -> str:
        is_error, text = self.call(tool, **args)
        assert not is_error, text
        return text

    def error(self, tool: str, /, **args: Any) -> str:
        is_error, text = self.call(tool, **args)
        assert is_error, text
        assert "\n" not in text.strip(), f"error is not one line: {text!r}"
        return text

    def tools(self) -> list[Any]:
        async def go() -> list[Any]:
            async with Client(self.server) as client:
                return list((await client.list_tools()).tools)

        return anyio.run(go)
