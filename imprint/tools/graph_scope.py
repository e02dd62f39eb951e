"""graph_scope: navigate the workspace as a graph of projects, topics, sources and chunks.

Every node id it prints (project:X, topic:X, source:X, chunk:ID) is accepted back as a scope.
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from imprint.actors.messages import SqlRead
from imprint.errors import InputError
from imprint.tools._app import READ, App, clamp, run_tool, tool
from imprint.tools._evidence import clip, escape_field, one_line
from imprint.tools._reads import Deadline, Reads
from imprint.tools.get_memory import check_id
from imprint.tools.neighbors import neighbor_rows

__all__ = ["graph_rows", "register"]

KINDS = ("root", "project:", "topic:", "source:", "chunk:")
MAX_CHILDREN = 25
MAX_OUTPUT = 9000


def _sql(reads: Reads, ws: str, op: str, **args: object) -> Any:
    msg = SqlRead.model_validate({"workspace": ws, "op": op, "args": args})
    return Deadline(30).wait(reads.sql(msg), "graph_scope")


def _children(reads: Reads, ws: str, scope: str) -> tuple[str, list[tuple[str, str]]]:
    """A scope's own line and its children as (node id, label)."""
    if scope == "root":
        projects = _sql(reads, ws, "projects")
        topics = _sql(reads, ws, "topics", project="", limit=10)
        kids = [(f"project:{p}", f"{n} records") for p, n in projects]
        kids += [(f"topic:{t}", f"{n} records") for t, n in topics]
        return f"root of workspace {ws}", kids
    kind, _, name = scope.partition(":")
    if not name:
        raise InputError(f"scope: {scope!r} names nothing after '{kind}:'")
    if kind == "project":
        rows, total = _sql(
            reads,
            ws,
            "list_sources",
            project=name,
            lang="",
            layer="",
            limit=MAX_CHILDREN,
        )
        if total == 0:
            raise InputError(f"scope: no project {name!r}; graph_scope('root') lists them")
        topics = _sql(reads, ws, "topics", project=name, limit=10)
        kids = [(f"source:{r['source']}", f"{r['chunks']} chunks") for r in rows]
        kids += [(f"topic:{t}", f"{n} records") for t, n in topics]
        return f"project:{name} ({total} sources)", kids
    if kind == "topic":
        records = _sql(reads, ws, "with_topic", topic=name, limit=MAX_CHILDREN)
        if not records:
            raise InputError(f"scope: no records with topic {name!r}")
        kids = [(f"chunk:{r.id}", f"{r.source or '(memory)'}#{r.chunk_index}") for r in records]
        return f"topic:{name}", kids
    if kind == "source":
        records, total = _sql(
            reads,
            ws,
            "source_chunks",
            project="",
            source=name,
            start=0,
            end=MAX_CHILDREN - 1,
        )
        if total == 0:
            raise InputError(f"scope: no source {name!r}; list_sources shows what exists")
        kids = [(f"chunk:{r.id}", clip(one_line(r.content), 80)) for r in records]
        kids.append((f"project:{records[0].project}", "its project"))
        return f"source:{name} ({total} chunks)", kids
    if kind == "chunk":
        rid = check_id(name, "scope")
        try:
            hits = neighbor_rows(reads, rid, 8, ws)
        except InputError as exc:
            raise InputError(f"scope: no chunk {rid!r} in workspace {ws!r}") from exc
        kids = [(f"chunk:{h.record.id}", f"similar {h.score:.2f}: {h.record.source}") for h in hits]
        return f"chunk:{rid}", kids
    raise InputError(
        f"scope: {scope!r} is not allowed; root, project:X, topic:X, source:X or chunk:ID"
    )


def graph_rows(reads: Reads, scope: str = "root", depth: int = 1, workspace: str = "") -> str:
    scope = (scope or "root").strip()
    depth = clamp(depth, 1, 2)
    ws = reads.open(workspace)
    head, kids = _children(reads, ws, scope)
    lines = [escape_field(head)]
    for node, label in kids:
        lines.append(escape_field(f"- {node}  ({label})"))
        if depth > 1 and not node.startswith("chunk:"):
            _, grand = _children(reads, ws, node)
            lines.extend(escape_field(f"  - {n}  ({lab})") for n, lab in grand[:10])
    text = "\n".join(lines)
    if len(text) > MAX_OUTPUT:
        text = text[: MAX_OUTPUT - 60].rsplit("\n", 1)[0] + "\n(cut at 9000 chars; use depth=1)"
    return text


def register(server: MCPServer, app: App) -> None:
    @tool(server, "graph_scope", READ)
    async def graph_scope(
        scope: Annotated[
            str, Field(description="root, project:X, topic:X, source:X or chunk:ID")
        ] = "root",
        depth: Annotated[int, Field(description="levels to expand, 1-2")] = 1,
        workspace: Annotated[str, Field(description="workspace; empty = active")] = "",
    ) -> str:
        """Browse what the workspace holds: root lists projects and main topics; a project
        its sources and topics; a topic or source its chunks; a chunk its nearest chunks.
        Every node id printed can be passed back as scope."""
        return await run_tool(graph_rows, app.reads, scope, depth, workspace)
