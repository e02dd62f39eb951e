"""Recall plans: up to 8 steps over the 7 read tools, validated before anything runs.

A step's arguments are a pydantic model derived from the signature of the row function its
tool calls (the gateway, workspace and output sizes left out), so a step and its tool can
never drift apart: change the function and the step's model follows.
"""

from __future__ import annotations

import inspect
import json
import typing
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from imprint.config import SearchConfig
from imprint.errors import InputError
from imprint.reads.chunks import chunk_rows
from imprint.reads.facts import fact_rows
from imprint.reads.memory import memory_row
from imprint.reads.neighbors import neighbor_rows
from imprint.reads.search import search_rows
from imprint.reads.sources import source_rows
from imprint.reads.summary import summary_row

__all__ = ["MAX_STEPS", "STEP_FUNCTIONS", "Step", "arg_model", "parse_plan"]

MAX_STEPS = 8
STEP_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "search": search_rows,
    "get_memory": memory_row,
    "neighbors": neighbor_rows,
    "file_chunks": chunk_rows,
    "file_summary": summary_row,
    "list_sources": source_rows,
    "kg_query": fact_rows,
}
WRITES = ("store", "delete", "ingest_content", "ingest_url", "ingest_path", "kg_edit")
# Not step arguments: the gateway, the recall's own workspace, the server's cwd, sizes.
EXCLUDED = ("reads", "workspace", "cwd", "max_chars")


class Step(BaseModel):
    """One validated step: a read tool and its arguments, defaults filled in."""

    model_config = ConfigDict(frozen=True)

    tool: str
    args: dict[str, Any]

    def label(self) -> str:
        given = ", ".join(f"{k}={v!r}" for k, v in self.args.items())
        return f"{self.tool}({given})"


def arg_model(tool: str) -> type[BaseModel]:
    """The pydantic model of a step's arguments, from its row function's signature."""
    fn = STEP_FUNCTIONS[tool]
    hints = typing.get_type_hints(fn)
    fields: dict[str, Any] = {}
    for name, param in inspect.signature(fn).parameters.items():
        if name in EXCLUDED:
            continue
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[name] = (hints[name], default)
    model: type[BaseModel] = create_model(
        f"{tool}_step",
        __config__=ConfigDict(extra="forbid", strict=True, frozen=True),
        **fields,
    )
    return model


_MODELS = {tool: arg_model(tool) for tool in STEP_FUNCTIONS}


def _step_error(index: int, tool: str, exc: ValidationError) -> InputError:
    err = exc.errors()[0]
    # loc[0] is the argument; a union (`int | None`) adds the member that refused it.
    name = str(err["loc"][0]) if err["loc"] else ""
    allowed = ", ".join(_MODELS[tool].model_fields)
    if err["type"] == "extra_forbidden":
        why = f"unknown argument {name!r}; allowed: {allowed}"
    elif err["type"] == "missing":
        why = f"{name}: required"
    else:
        why = f"{name}: {err.get('input')!r} is not allowed; {err['msg'].rstrip('.')}"
    return InputError(f"plan: step {index} ({tool}): {why}")


def _resolved(tool: str, args: dict[str, Any], search: SearchConfig) -> dict[str, Any]:
    """Arguments as the row function will see them, so a default and its value are one step."""
    if tool == "search":
        return {
            **args,
            "limit": search.limit if args["limit"] is None else args["limit"],
            "mode": search.mode if args["mode"] is None else args["mode"],
        }
    return args


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
                f"plan: step {index}: {tool!r} is a write; steps may only read: "
                + ", ".join(STEP_FUNCTIONS)
            )
        if tool not in STEP_FUNCTIONS:
            raise InputError(
                f"plan: step {index}: unknown tool {tool!r}; allowed: " + ", ".join(STEP_FUNCTIONS)
            )
        if not isinstance(args, dict):
            raise InputError(f"plan: step {index} ({tool}): args must be an object")
        if "workspace" in args:
            raise InputError(
                f"plan: step {index} ({tool}): 'workspace' is not allowed; "
                "every step runs in the recall's workspace"
            )
        try:
            model = _MODELS[tool].model_validate(args)
        except ValidationError as exc:
            raise _step_error(index, tool, exc) from exc
        # The row function fills in defaults; the step keeps what the caller set.
        step = Step(tool=tool, args=model.model_dump(exclude_unset=True))
        full = _resolved(tool, model.model_dump(), search)
        key = json.dumps([tool, full], sort_keys=True, default=str)
        if key in seen:
            raise InputError(f"plan: step {index} repeats step {seen[key]}")
        seen[key] = index
        steps.append(step)
    return steps
