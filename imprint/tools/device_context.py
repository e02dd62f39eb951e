"""device_context: this computer, the data dir, the embedder and the inference provider."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer

from imprint.reads.device import device_row
from imprint.tools._app import READ, App, run_tool, tool

__all__ = ["format_device", "register"]


def format_device(row: dict[str, Any]) -> str:
    return "\n".join(f"{k}: {v}" for k, v in row.items())


def register(server: MCPServer, app: App) -> None:
    @tool(server, "device_context", READ)
    async def device_context(workspace: str = "") -> str:
        """This computer and server: OS, cores, memory, GPU, data dir, workspaces, store,
        embedder, inference provider, whether it is local (recall's model path), model state."""
        return format_device(await run_tool(device_row, app.runtime, workspace, app.cwd))
