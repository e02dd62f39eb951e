"""What every tool module shares: the runtime, the read and write gateways, and running row
functions off the event loop. Errors are translated once, by the server
(`ImprintServer.call_tool`)."""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import ParamSpec, TypeVar

import anyio
import structlog
from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

from imprint.actors._trace import new_request_id
from imprint.actors.lifecycle import Runtime
from imprint.reads.gateway import ActorReads, Reads
from imprint.types import WorkspaceName
from imprint.writes.gateway import Writes

__all__ = ["READ", "REPLACE", "WRITE", "App", "read_tool", "run_tool", "tool"]

P = ParamSpec("P")
T = TypeVar("T")
A = TypeVar("A")

READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
REPLACE = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)


class App:
    """The server's view of one data dir: runtime, reads through the pools, writes, its cwd."""

    def __init__(
        self,
        runtime: Runtime,
        cwd: Path | None = None,
        extra_roots: list[Path] | None = None,
        *,
        cwd_root: bool = True,
    ) -> None:
        self.runtime = runtime
        self.reads = ActorReads(runtime)
        self.cwd = (cwd or Path(os.getcwd())).resolve()
        self.writes = Writes(runtime, self.cwd, extra_roots, reads=self.reads, cwd_root=cwd_root)


async def run_tool(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """Run a blocking row function in a worker thread.

    Waiting on pykka futures blocks, so it never happens on the event loop. Each call gets a
    request id here, at the edge: the worker thread runs in a copy of this context, and every
    actor message the call causes carries the id. What it raises, the server translates.
    """
    with structlog.contextvars.bound_contextvars(request_id=new_request_id()):
        return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))


async def read_tool(
    app: App, fn: Callable[[Reads, WorkspaceName, A], T], args: A, workspace: str
) -> T:
    """A read tool's row function on its argument model, in the workspace opened once."""

    def read() -> T:
        # An interactive call, as a recall is: background work waits for its turn meanwhile.
        with app.runtime.priority.interactive():
            return fn(app.reads, app.reads.open(workspace), args)

    return await run_tool(read)


def tool(
    server: MCPServer, name: str, annotations: ToolAnnotations
) -> Callable[[Callable[P, Awaitable[str]]], Callable[P, Awaitable[str]]]:
    """Register a tool: text output only (no structured copy doubling the tokens) and a
    description without the docstring's indentation."""

    def register(fn: Callable[P, Awaitable[str]]) -> Callable[P, Awaitable[str]]:
        server.add_tool(
            fn,
            name=name,
            description=inspect.cleandoc(fn.__doc__ or ""),
            annotations=annotations,
            structured_output=False,
        )
        return fn

    return register
