"""recall on the storage seam (the team server): no model, and a plan's steps run against one
workspace's `MemoryStore`.

The plan is validated by the local recall's own `parse_plan` (the same 7 read tools, the same
argument models, at most 8 steps, no writes, no workspace argument, no repeats: one copy of
those rules), then each step runs through `reads.on_store`; a failing step reports its error
while the others answer. The answer is one section per step, each within an even share of
`max_chars`, and never longer than `max_chars` in all.
"""

from __future__ import annotations

from typing import Any

from imprint.errors import ImprintError, InputError
from imprint.reads import on_store as r
from imprint.recall.plan import parse_plan
from imprint.store.seam import MemoryStore

__all__ = ["recall_on_store"]

# The arguments of each step the team server serves; another is refused before anything runs.
SERVED: dict[str, frozenset[str]] = {
    "search": frozenset(
        {"query", "project", "type", "lang", "layer", "limit", "mode", "include_superseded"}
    ),
    "get_memory": frozenset({"id"}),
    "neighbors": frozenset({"id", "k"}),
    "file_chunks": frozenset({"source", "start", "end", "project"}),
    "file_summary": frozenset({"source", "project"}),
    "list_sources": frozenset({"project", "lang", "layer", "limit"}),
    "kg_query": frozenset({"subject", "predicate", "include_ended", "limit"}),
}
# file_chunks without an end: the first chunks, as many as one call shows.
FIRST_CHUNKS = 5


def _run(store: MemoryStore, embed: r.Embed, tool: str, a: dict[str, Any], budget: int) -> str:
    if tool == "search":
        query = a.pop("query")
        return r.search_store_text(store, embed, query, max(budget, 1200), **a)
    if tool == "get_memory":
        return r.memory_text(store, a["id"])
    if tool == "neighbors":
        return r.neighbors_text(store, a["id"], a.get("k", 10), max(budget, 1200))
    if tool == "file_chunks":
        start = a.get("start", 0)
        end = a.get("end", -1)
        end = start + FIRST_CHUNKS - 1 if end < 0 else end
        return r.chunks_text(store, a["source"], start, end, a.get("project", ""))
    if tool == "file_summary":
        return r.summary_text(store, a["source"], a.get("project", ""))
    if tool == "list_sources":
        return r.sources_text(
            store, a.get("project", ""), a.get("lang", ""), a.get("layer", ""), a.get("limit", 50)
        )
    return r.facts_text(
        store,
        a.get("subject", ""),
        a.get("predicate", ""),
        a.get("include_ended", False),
        a.get("limit", 20),
    )


def _clip(text: str, budget: int) -> str:
    if len(text) <= budget:
        return text
    tail = " …(clipped; raise max_chars or narrow the step)"
    return text[: max(budget - len(tail), 0)] + tail


def recall_on_store(
    store: MemoryStore, embed: r.Embed, question: str, plan: Any, max_chars: int = 4000
) -> str:
    """Without a plan: the evidence of `search(question)`. With one: each step's answer."""
    if not plan:
        return r.search_store_text(store, embed, question, max_chars)
    steps = parse_plan(plan)
    for index, step in enumerate(steps, start=1):
        extra = sorted(set(step.given()) - SERVED[step.tool])
        if extra:
            raise InputError(
                f"plan: step {index} ({step.tool}): {extra[0]!r} is not served by the team "
                f"server; it takes {', '.join(sorted(SERVED[step.tool]))}"
            )
    share = max_chars // len(steps)
    sections = []
    for index, step in enumerate(steps, start=1):
        head = f"step {index} {step.label()}:"
        try:
            body = _run(store, embed, step.tool, step.given(), share - len(head) - 1)
        except ImprintError as exc:  # this step's alone: the others still answer
            body = f"error: {exc}"
        sections.append(_clip(f"{head}\n{body}", share - 2))
    return "\n\n".join(sections)[:max_chars]
