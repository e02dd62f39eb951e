"""The MCP server: 17 tools over one Runtime, for stdio and streamable HTTP."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp_types import Tool as MCPTool
from pydantic import ValidationError

from imprint import __version__
from imprint.actors.lifecycle import Runtime
from imprint.tools import (
    delete,
    device_context,
    file_chunks,
    file_summary,
    get_memory,
    graph_scope,
    ingest_content,
    ingest_path,
    ingest_url,
    kg_edit,
    kg_query,
    list_sources,
    neighbors,
    recall,
    search,
    status,
    store,
)
from imprint.tools._app import App

__all__ = ["INSTRUCTIONS", "TOOL_MODULES", "build_server"]

TOOL_MODULES = (
    search,
    get_memory,
    neighbors,
    file_chunks,
    file_summary,
    list_sources,
    kg_query,
    graph_scope,
    status,
    device_context,
    store,
    delete,
    ingest_content,
    ingest_url,
    ingest_path,
    kg_edit,
    recall,
)

INSTRUCTIONS = (
    "Imprint is this user's local memory. Search it before answering questions about "
    "their projects; store decisions, findings and fixes worth keeping. Results are "
    "numbered blocks with ids and sources you can expand with get_memory or file_chunks. "
    "Every tool's workspace argument may stay empty: the active workspace."
)


def _one_line(exc: ValidationError) -> str:
    """The first argument error as `name: given value is not allowed; what is`."""
    err = exc.errors()[0]
    name = ".".join(str(p) for p in err["loc"]) or "arguments"
    if err["type"] == "missing":
        return f"{name}: required"
    given = err.get("input")
    return f"{name}: {given!r} is not allowed; {err['msg'].rstrip('.')}"


_SUBSCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMAS = ("items", "additionalProperties", "not", "contains")


def untitled(schema: Any) -> Any:
    """A JSON schema without its `title` keywords. Pydantic titles every argument with its
    own name re-cased ("max_chars" -> "Max Chars") and every tool's arguments
    "<tool>Arguments": about a fifth of tools/list, which every client loads at every
    session start, telling the calling model nothing. Property *names* are kept, so an
    argument called `title` survives."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in _SUBSCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: untitled(sub) for name, sub in value.items()}
        elif key in _SUBSCHEMA_LISTS and isinstance(value, list):
            out[key] = [untitled(sub) for sub in value]
        elif key in _SUBSCHEMAS:
            out[key] = untitled(value)
        else:
            out[key] = value
    return out


class ImprintServer(MCPServer):
    """MCPServer whose argument-validation errors are one line naming the argument, and
    whose tool schemas carry no generated titles."""

    async def list_tools(self) -> list[MCPTool]:
        tools = await super().list_tools()
        return [t.model_copy(update={"input_schema": untitled(t.input_schema)}) for t in tools]

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                raise ToolError(_one_line(cause)) from exc
            if isinstance(cause, ToolError):
                # Our own one-line message, without the SDK's "Error executing tool" prefix.
                raise ToolError(str(cause)) from exc
            raise


def build_server(
    runtime: Runtime, cwd: Path | None = None, extra_roots: list[Path] | None = None
) -> MCPServer:
    """A fresh server with every tool registered against one started runtime."""
    server: MCPServer = ImprintServer(
        name="imprint", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING"
    )
    app = App(runtime, cwd, extra_roots)
    for module in TOOL_MODULES:
        module.register(server, app)
    return server
