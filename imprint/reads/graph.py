"""graph_scope rows: the workspace as a graph of projects, topics, sources and chunks.

Every node id (project:X, topic:X, source:X, chunk:ID) is accepted back as a scope.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel, ConfigDict

from imprint.actors.deadline import Deadline, Pending
from imprint.actors.read_messages import (
    ListSources,
    Projects,
    ProjectSources,
    SourceChunks,
    Topics,
    WithTopic,
)
from imprint.errors import InputError
from imprint.reads.gateway import Reads
from imprint.reads.layout import clamp, clip, one_line
from imprint.reads.memory import check_id
from imprint.reads.neighbors import NeighborsArgs, neighbor_rows, superseded_among
from imprint.types import WorkspaceName

__all__ = ["GraphNode", "GraphRows", "GraphScopeArgs", "graph_rows"]

MAX_CHILDREN = 25
MAX_GRANDCHILDREN = 10

T = TypeVar("T")


class GraphScopeArgs(BaseModel):
    """graph_scope's arguments: a node id as scope (root, project:X, topic:X, source:X,
    chunk:ID) and how many levels below it, 1-2."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    scope: str = "root"
    depth: int = 1


class GraphNode(BaseModel):
    model_config = ConfigDict(frozen=True)

    node: str  # an id accepted back as a scope
    label: str
    children: tuple[GraphNode, ...] = ()


class GraphRows(BaseModel):
    model_config = ConfigDict(frozen=True)

    head: str  # the scope's own line
    nodes: tuple[GraphNode, ...]
    more: str = ""  # what was left out, in one line ("1975 more projects, ...")


def _wait(deadline: Deadline, pending: Pending[T]) -> T:
    return deadline.wait(pending, "graph_scope")


def _root(reads: Reads, ws: WorkspaceName, depth: int, deadline: Deadline) -> GraphRows:
    """The largest projects (by name) and the top topics; with depth 2, each shown project's
    first sources from one grouped read, whatever the number of projects. The projects
    left out are counted in one line."""
    projects = _wait(deadline, reads.ask(Projects(workspace=ws)))
    topics = _wait(deadline, reads.ask(Topics(workspace=ws, project="", limit=10)))
    shown = sorted(sorted(projects, key=lambda pn: (-pn[1], pn[0]))[:MAX_CHILDREN])
    below: dict[str, list[tuple[str, int]]] = {}
    if depth > 1 and shown:
        query = ProjectSources(
            workspace=ws, projects=tuple(p for p, _ in shown), limit=MAX_GRANDCHILDREN
        )
        below = _wait(deadline, reads.ask(query))
    nodes = [
        GraphNode(
            node=f"project:{p}",
            label=f"{n} records",
            children=tuple(
                GraphNode(node=f"source:{source}", label=f"{chunks} chunks")
                for source, chunks in below.get(p, [])
            ),
        )
        for p, n in shown
    ]
    for topic, n in topics:
        grand: list[GraphNode] = []
        if depth > 1:
            _, kids = _children(reads, ws, f"topic:{topic}", deadline)
            grand = [GraphNode(node=k, label=lab) for k, lab in kids[:MAX_GRANDCHILDREN]]
        nodes.append(GraphNode(node=f"topic:{topic}", label=f"{n} records", children=tuple(grand)))
    hidden = len(projects) - len(shown)
    more = ""
    if hidden:
        records = sum(n for _, n in projects) - sum(n for _, n in shown)
        noun = "project" if hidden == 1 else "projects"
        more = (
            f"({hidden} more {noun} with {records} records not listed, the largest "
            f"{len(shown)} are; scope project:NAME opens any)"
        )
    head = f"root of workspace {ws} ({len(projects)} projects)"
    return GraphRows(head=head, nodes=tuple(nodes), more=more)


def _children(
    reads: Reads, ws: WorkspaceName, scope: str, deadline: Deadline
) -> tuple[str, list[tuple[str, str]]]:
    """A scope's own line and its children as (node id, label)."""
    kind, _, name = scope.partition(":")
    if not name:
        raise InputError(f"scope: {scope!r} names nothing after '{kind}:'")
    if kind == "project":
        rows, total = _wait(
            deadline,
            reads.ask(ListSources(workspace=ws, project=name, limit=MAX_CHILDREN)),
        )
        if total == 0:
            projects = _wait(deadline, reads.ask(Projects(workspace=ws)))
            if name not in dict(projects):
                # A project of stored memories only has no sources, and is still a project.
                raise InputError(f"scope: no project {name!r}; graph_scope('root') lists them")
        topics = _wait(deadline, reads.ask(Topics(workspace=ws, project=name, limit=10)))
        kids = [(f"source:{r.source}", f"{r.chunks} chunks") for r in rows]
        kids += [(f"topic:{t}", f"{n} records") for t, n in topics]
        return f"project:{name} ({total} sources)", kids
    if kind == "topic":
        records = _wait(
            deadline, reads.ask(WithTopic(workspace=ws, topic=name, limit=MAX_CHILDREN))
        )
        if not records:
            raise InputError(f"scope: no records with topic {name!r}")
        old = superseded_among(reads, ws, [r.id for r in records], deadline)
        records = [r for r in records if r.id not in old]
        kids = [(f"chunk:{r.id}", f"{r.source or '(memory)'}#{r.chunk_index}") for r in records]
        return f"topic:{name}", kids
    if kind == "source":
        query = SourceChunks(workspace=ws, source=name, start=0, end=MAX_CHILDREN - 1)
        records, total = _wait(deadline, reads.ask(query))
        if total == 0:
            raise InputError(f"scope: no source {name!r}; list_sources shows what exists")
        kids = [(f"chunk:{r.id}", clip(one_line(r.content), 80)) for r in records]
        kids.append((f"project:{records[0].project}", "its project"))
        return f"source:{name} ({total} chunks)", kids
    if kind == "chunk":
        rid = check_id(name, "scope")
        try:
            hits = neighbor_rows(reads, ws, NeighborsArgs(id=rid, k=8))
        except InputError as exc:
            raise InputError(f"scope: no chunk {rid!r} in workspace {ws!r}") from exc
        kids = [(f"chunk:{h.record.id}", f"similar {h.score:.2f}: {h.record.source}") for h in hits]
        return f"chunk:{rid}", kids
    raise InputError(
        f"scope: {scope!r} is not allowed; root, project:X, topic:X, source:X or chunk:ID"
    )


def graph_rows(reads: Reads, ws: WorkspaceName, args: GraphScopeArgs) -> GraphRows:
    """A scope's line and its children (at most 25 projects at the root, the largest); with
    depth 2, up to 10 grandchildren of each."""
    scope = (args.scope or "root").strip()
    depth = clamp(args.depth, 1, 2)
    with reads.deadline() as deadline:
        if scope == "root":
            return _root(reads, ws, depth, deadline)
        head, kids = _children(reads, ws, scope, deadline)
        nodes: list[GraphNode] = []
        for node, label in kids:
            grand: list[GraphNode] = []
            if depth > 1 and not node.startswith("chunk:"):
                _, below = _children(reads, ws, node, deadline)
                grand = [GraphNode(node=n, label=lab) for n, lab in below[:MAX_GRANDCHILDREN]]
            nodes.append(GraphNode(node=node, label=label, children=tuple(grand)))
    return GraphRows(head=head, nodes=tuple(nodes))
