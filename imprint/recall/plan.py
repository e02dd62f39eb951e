"""Recall plans: up to 8 steps over the 7 read tools, validated before anything runs.

A step is one of a discriminated union (on `tool`): each kind carries its row function's own
argument model, so a step and its tool can never drift apart, and it knows how to run
itself and what evidence its rows are. A plan is parsed straight into that union.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from imprint.config import SearchConfig
from imprint.errors import InputError
from imprint.reads.chunks import ChunkRows, FileChunksArgs, chunk_rows
from imprint.reads.facts import KgQueryArgs, fact_rows
from imprint.reads.gateway import Reads
from imprint.reads.memory import GetMemoryArgs, MemoryRow, memory_row
from imprint.reads.neighbors import NeighborsArgs, neighbor_rows
from imprint.reads.search import SearchArgs, SearchHit, SearchRows, search_rows
from imprint.reads.sources import ListSourcesArgs, source_rows
from imprint.reads.summary import FileSummaryArgs, SummaryRow, summary_row
from imprint.recall import evidence
from imprint.recall.evidence import Item
from imprint.store.records import Fact, SourceRow
from imprint.types import WorkspaceName

__all__ = [
    "MAX_STEPS",
    "STEPS",
    "FileChunksStep",
    "FileSummaryStep",
    "GetMemoryStep",
    "KgQueryStep",
    "ListSourcesStep",
    "NeighborsStep",
    "SearchStep",
    "Step",
    "parse_plan",
]

MAX_STEPS = 8
WRITES = ("store", "delete", "ingest_content", "ingest_url", "ingest_path", "kg_edit")
Evidence = tuple[list[Item], str]


class _Step(BaseModel):
    """One validated step: a read tool and its arguments, as the caller gave them."""

    model_config = ConfigDict(frozen=True)

    tool: str
    args: BaseModel

    def label(self) -> str:
        given = ", ".join(f"{k}={v!r}" for k, v in self.given().items())
        return f"{self.tool}({given})"

    def given(self) -> dict[str, Any]:
        """The arguments the caller set (the row function fills in the others)."""
        return self.args.model_dump(exclude_unset=True)

    def entry(self) -> dict[str, Any]:
        """This step as a plan writes it."""
        return {"tool": self.tool, "args": self.given()}

    def key(self, search: SearchConfig) -> str:
        """What tells two steps apart: every argument, defaults filled in."""
        return json.dumps([self.tool, self.args.model_dump()], sort_keys=True, default=str)


class SearchStep(_Step):
    tool: Literal["search"] = "search"
    args: SearchArgs

    def key(self, search: SearchConfig) -> str:
        return json.dumps([self.tool, self.args.with_defaults(search)], sort_keys=True)

    def rows(self, reads: Reads, ws: WorkspaceName, cwd: Path | None) -> SearchRows:
        return search_rows(reads, ws, self.args.resolve(reads.runtime.config.search))

    def items(self, rows: SearchRows) -> Evidence:
        return evidence.search_items(rows)


class GetMemoryStep(_Step):
    tool: Literal["get_memory"] = "get_memory"
    args: GetMemoryArgs

    def rows(self, reads: Reads, ws: WorkspaceName, cwd: Path | None) -> MemoryRow:
        return memory_row(reads, ws, self.args, cwd)

    def items(self, rows: MemoryRow) -> Evidence:
        return evidence.memory_items(rows)


class NeighborsStep(_Step):
    tool: Literal["neighbors"] = "neighbors"
    args: NeighborsArgs

    def rows(self, reads: Reads, ws: WorkspaceName, cwd: Path | None) -> list[SearchHit]:
        return neighbor_rows(reads, ws, self.args)

    def items(self, rows: list[SearchHit]) -> Evidence:
        return evidence.neighbor_items(rows)


class FileChunksStep(_Step):
    tool: Literal["file_chunks"] = "file_chunks"
    args: FileChunksArgs

    def rows(self, reads: Reads, ws: WorkspaceName, cwd: Path | None) -> ChunkRows:
        return chunk_rows(reads, ws, self.args)

    def items(self, rows: ChunkRows) -> Evidence:
        return evidence.chunk_items(rows)


class FileSummaryStep(_Step):
    tool: Literal["file_summary"] = "file_summary"
    args: FileSummaryArgs

    def rows(self, reads: Reads, ws: WorkspaceName, cwd: Path | None) -> SummaryRow:
        return summary_row(reads, ws, self.args)

    def items(self, rows: SummaryRow) -> Evidence:
        return evidence.summary_items(rows)


class ListSourcesStep(_Step):
    tool: Literal["list_sources"] = "list_sources"
    args: ListSourcesArgs

    def rows(
        self, reads: Reads, ws: WorkspaceName, cwd: Path | None
    ) -> tuple[list[SourceRow], int]:
        return source_rows(reads, ws, self.args)

    def items(self, rows: tuple[list[SourceRow], int]) -> Evidence:
        return evidence.source_items(*rows)


class KgQueryStep(_Step):
    tool: Literal["kg_query"] = "kg_query"
    args: KgQueryArgs

    def rows(self, reads: Reads, ws: WorkspaceName, cwd: Path | None) -> list[Fact]:
        return fact_rows(reads, ws, self.args)

    def items(self, rows: list[Fact]) -> Evidence:
        return evidence.fact_items(rows)


Step = Annotated[
    SearchStep
    | GetMemoryStep
    | NeighborsStep
    | FileChunksStep
    | FileSummaryStep
    | ListSourcesStep
    | KgQueryStep,
    Field(discriminator="tool"),
]
# The step kinds by tool name, in the order error messages list them.
STEPS: dict[str, type[_Step]] = {
    kind.model_fields["tool"].default: kind
    for kind in (
        SearchStep,
        GetMemoryStep,
        NeighborsStep,
        FileChunksStep,
        FileSummaryStep,
        ListSourcesStep,
        KgQueryStep,
    )
}
_STEP: TypeAdapter[Step] = TypeAdapter(Step)


def _arguments(kind: type[_Step]) -> type[BaseModel]:
    """A step kind's argument model."""
    model = kind.model_fields["args"].annotation
    assert isinstance(model, type) and issubclass(model, BaseModel)
    return model


def _step_error(index: int, tool: str, exc: ValidationError) -> InputError:
    err = exc.errors()[0]
    # loc is (tool, "args", the argument, ...): a union (`int | None`) adds the member that
    # refused it.
    name = str(err["loc"][2]) if len(err["loc"]) > 2 else ""
    allowed = ", ".join(_arguments(STEPS[tool]).model_fields)
    if err["type"] == "extra_forbidden":
        why = f"unknown argument {name!r}; allowed: {allowed}"
    elif err["type"] == "missing":
        why = f"{name}: required"
    else:
        why = f"{name}: {err.get('input')!r} is not allowed; {err['msg'].rstrip('.')}"
    return InputError(f"plan: step {index} ({tool}): {why}")


# A plan is a list of step objects whose args hold strings, numbers and short lists: four
# levels. A few more are allowed for error messages to name; deeper input is refused before
# anything walks it recursively (pydantic, repr, json.dumps).
MAX_DEPTH = 8
_TOO_DEEP = (
    f"plan: nested too deeply; at most {MAX_DEPTH} levels "
    '(a list of steps like {"tool": "search", "args": {"query": "..."}})'
)


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether lists and objects nest more than `limit` levels, found without recursion."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            node = list(node.values())
        if isinstance(node, list | tuple):
            if depth > limit:
                return True
            stack.extend((child, depth + 1) for child in node)
    return False


def parse_plan(plan: Any, search: SearchConfig | None = None) -> list[Step]:
    """Validate a whole plan (a list of steps, or that list as a JSON string).

    `search` gives the search defaults the steps will run with (for spotting repeats).
    """
    search = search or SearchConfig()
    if isinstance(plan, str):
        try:
            plan = json.loads(plan)
        except json.JSONDecodeError as exc:
            raise InputError(f"plan: not valid JSON ({exc.msg} at {exc.pos})") from exc
        except RecursionError as exc:
            raise InputError(_TOO_DEEP) from exc
    if not isinstance(plan, list):
        raise InputError('plan: must be a list of steps like {"tool": "search", "args": {}}')
    if not plan:
        raise InputError("plan: empty; give 1-8 steps, or no plan for a plain search")
    if len(plan) > MAX_STEPS:
        raise InputError(f"plan: {len(plan)} steps; at most {MAX_STEPS}")
    if _deeper_than(plan, MAX_DEPTH):
        raise InputError(_TOO_DEEP)
    steps: list[Step] = []
    seen: dict[str, int] = {}
    for index, raw in enumerate(plan, start=1):
        if not isinstance(raw, dict) or "tool" not in raw or set(raw) - {"tool", "args"}:
            raise InputError(f"plan: step {index}: must be an object with 'tool' and 'args' only")
        tool, args = raw["tool"], raw.get("args") or {}
        if tool in WRITES:
            raise InputError(
                f"plan: step {index}: {tool!r} is a write; steps may only read: " + ", ".join(STEPS)
            )
        if tool not in STEPS:
            raise InputError(
                f"plan: step {index}: unknown tool {tool!r}; allowed: " + ", ".join(STEPS)
            )
        if not isinstance(args, dict):
            raise InputError(f"plan: step {index} ({tool}): args must be an object")
        if "workspace" in args:
            raise InputError(
                f"plan: step {index} ({tool}): 'workspace' is not allowed; "
                "every step runs in the recall's workspace"
            )
        try:
            step = _STEP.validate_python({"tool": tool, "args": args}, strict=True)
        except ValidationError as exc:
            raise _step_error(index, tool, exc) from exc
        key = step.key(search)
        if key in seen:
            raise InputError(f"plan: step {index} repeats step {seen[key]}")
        seen[key] = index
        steps.append(step)
    return steps
