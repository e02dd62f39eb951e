"""graph_scope: navigate the workspace as a graph of projects, topics, sources and chunks.

Every node id it prints (project:X, topic:X, source:X, chunk:ID) is accepted back as a scope.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from imprint.reads.graph import GraphRows, GraphScopeArgs, graph_rows
from imprint.reads.layout import escape_field
from imprint.tools._app import READ, App, read_tool, tool

__all__ = ["format_graph", "register"]

MAX_OUTPUT = 9000


def format_graph(rows: GraphRows) -> str:
    lines = [escape_field(rows.head)]
    for node in rows.nodes:
        lines.append(escape_field(f"- {node.node}  ({node.label})"))
        lines.extend(escape_field(f"  - {n.node}  ({n.label})") for n in node.children)
    if rows.more:
        lines.append(rows.more)
    text = "\n".join(lines)
    if len(text) > MAX_OUTPUT:
        text = text[: MAX_OUTPUT - 60].rsplit("\n", 1)[0] + "\n(cut at 9000 chars; use depth=1)"
    return text


def register(server: MCPServer, app: App) -> None:
    @tool(server, "graph_scope", READ)
    async def graph_scope(
        scope: Annotated[
            str, Field(description="root, project:X, topic:X, source:X, chunk:ID")
        ] = "root",
        depth: Annotated[int, Field(description="levels, 1-2")] = 1,
        workspace: str = "",
    ) -> str:
        """Browse the workspace: root lists projects and topics; a project its sources and
        topics; a topic or source its chunks; a chunk its nearest. Ids work as scope."""
        args = GraphScopeArgs(scope=scope, depth=depth)
        return format_graph(await read_tool(app, graph_rows, args, workspace))
