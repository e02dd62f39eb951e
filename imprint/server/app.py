"""The MCP server: 17 tools over one Runtime, for stdio and streamable HTTP (the SDK's
MCPServer, with one-line errors and portable schemas)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    GetPromptResult,
    InputRequiredResult,
)
from mcp_types import Tool as MCPTool
from pydantic import ValidationError

from imprint import __version__
from imprint.errors import ImprintError, failure_line
from imprint.logs import get_logger
from imprint.server.error_lines import bounded, one_line, shown
from imprint.server.schema import untitled

if TYPE_CHECKING:
    from imprint.actors.lifecycle import Runtime

__all__ = ["INSTRUCTIONS", "ImprintServer", "build_server", "tool_modules"]


def tool_modules() -> tuple[ModuleType, ...]:
    """The 17 tool modules, in tools/list order. Imported on demand: they pull in the store,
    which a session's `initialize` does not need."""
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

    return (
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
    "Every tool's workspace argument may stay empty: the active workspace. An argument "
    "left out takes its configured default."
)


log = get_logger("imprint.server")


async def _spec_errors(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Session middleware: every failed request answers with the JSON-RPC code the spec
    gives it and one line saying why. The SDK answers an unknown method with a bare "Method
    not found", parameters it cannot read with "Invalid request parameters" (no argument
    named), and any other exception with code 0, which no client reads as an error kind."""
    try:
        return await call_next(ctx)
    except MCPError as exc:
        if exc.error.code == METHOD_NOT_FOUND and exc.error.message == "Method not found":
            line = (
                f"Method not found: {shown(ctx.method)} is not offered by imprint (it "
                "answers initialize, ping, tools/list, tools/call, prompts/list, prompts/get, "
                "resources/templates/list and resources/read)"
            )
            raise MCPError(code=METHOD_NOT_FOUND, message=bounded(line), data=ctx.method) from exc
        raise
    except ValidationError as exc:
        line = f"{ctx.method}: {one_line(exc)}"
        raise MCPError(code=INVALID_PARAMS, message=bounded(line)) from exc
    except Exception as exc:
        line = failure_line(exc) or f"{ctx.method}: unexpected {type(exc).__name__}: {exc}"
        log.error("request.failed", method=ctx.method, error=type(exc).__name__, exc_info=exc)
        raise MCPError(code=INTERNAL_ERROR, message=bounded(line)) from exc


class ImprintServer(MCPServer):
    """MCPServer whose argument-validation errors are one line naming the argument, and
    whose tool schemas carry no generated titles.

    Its tools may register late (`defer_tools`): the session then answers `initialize` at
    once, and its first tools/list or tool call waits for them (in a worker thread, never
    blocking the event loop)."""

    _register: Callable[[], None] | None = None
    _register_lock: threading.Lock | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Inside the SDK's tracing middleware, so its spans record the codes sent.
        self._lowlevel_server.middleware.append(_spec_errors)

    def defer_tools(self, register: Callable[[], None]) -> None:
        self._register = register
        self._register_lock = threading.Lock()

    def _register_once(self) -> None:
        assert self._register_lock is not None
        with self._register_lock:
            register = self._register
            if register is not None:
                # Cleared only once done: a request arriving meanwhile (the background
                # registration running) waits here for the lock instead of finding no tools;
                # after a failure the next request tries (and reports) again.
                register()
                self._register = None

    async def prepare_tools(self) -> None:
        """Register the deferred tools now, in a worker thread, so the first tool call does
        not wait for it; errors are left for that call to report."""
        if self._register is None:
            return
        with contextlib.suppress(Exception):  # the first call retries, and reports it
            await anyio.to_thread.run_sync(self._register_once, abandon_on_cancel=True)

    async def _tools_ready(self) -> None:
        if self._register is not None:
            try:
                await anyio.to_thread.run_sync(self._register_once)
            except Exception as exc:
                line = failure_line(exc)
                if line is None:
                    raise
                raise ToolError(bounded(line)) from exc

    async def list_tools(self) -> list[MCPTool]:
        await self._tools_ready()
        tools = await super().list_tools()
        return [t.model_copy(update={"input_schema": untitled(t.input_schema)}) for t in tools]

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: Any = None
    ) -> GetPromptResult | InputRequiredResult:
        if self._prompt_manager.get_prompt(name) is None:
            # The spec's code for an unknown prompt, as for an unknown resource (the SDK
            # answers it with a ValueError, which goes out as code 0).
            line = f"name: unknown prompt {shown(name)}; prompts/list names the prompts (briefing)"
            raise MCPError(code=INVALID_PARAMS, message=bounded(line), data={"name": name})
        return await super().get_prompt(name, arguments, context)

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        await self._tools_ready()
        if self._tool_manager.get_tool(name) is None:
            # A protocol error, not a tool result: the spec's -32602 for an unknown tool.
            count = len(self._tool_manager.list_tools())  # 17 here, 12 on the team server
            line = f"name: unknown tool {shown(name)}; tools/list names the {count}"
            raise MCPError(code=INVALID_PARAMS, message=bounded(line), data={"name": name})
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError as exc:
            # The one place a tool's failure becomes the client's line: an ImprintError is
            # expected (its own text), anything else is reported by `_failed`.
            raised = exc.__cause__ or exc
            if isinstance(raised, ImprintError):
                raise ToolError(bounded(str(raised))) from exc
            raise ToolError(_failed(name, raised)) from exc
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                raise ToolError(bounded(one_line(cause))) from exc
            if isinstance(cause, ToolError):
                # A tool's own one-line ToolError, without the SDK's "Error executing tool"
                # prefix.
                raise ToolError(bounded(str(cause))) from exc
            raise


def _failed(tool: str, exc: BaseException) -> str:
    """A tool's failure as one line for the client, in place of the SDK's bare `Error
    executing tool <name>`. A failure of the store or the file system says what failed and
    what to do; anything else is a bug: named (tool, class, message) for the client, and
    logged with its traceback."""
    line = failure_line(exc)
    if line is not None:
        log.warning("tool.failed", tool=tool, error=bounded(line))
        return bounded(line)
    log.error("tool.crashed", tool=tool, error=type(exc).__name__, exc_info=exc)
    return bounded(
        f"{tool}: unexpected {type(exc).__name__}: {exc} (a bug in imprint; the log has "
        "the traceback)"
    )


def build_server(
    runtime: Runtime | Callable[[], Runtime],
    cwd: Path | None = None,
    extra_roots: list[Path] | None = None,
    *,
    cwd_root: bool = True,
) -> MCPServer:
    """A fresh server with every tool registered against one started runtime.

    Given a function instead (the daemon's `wait_runtime`), the tools register when the
    session first lists or calls them, with the runtime that function returns then."""
    # No subscriptions/listen: Imprint's tools, prompts and resources never change while a
    # session runs, and serving it made a 2026 session over stdio advertise
    # `resources.subscribe` and every `listChanged`, which HTTP did not and nothing answered.
    server = ImprintServer(
        name="imprint",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
        subscriptions=False,
    )

    def register() -> None:
        from imprint.tools._app import App

        started = runtime() if callable(runtime) else runtime
        app = App(started, cwd, extra_roots, cwd_root=cwd_root)
        for module in tool_modules():
            module.register(server, app)

    if callable(runtime):
        server.defer_tools(register)
    else:
        register()
    from imprint.server.briefing import register_briefing

    register_briefing(server, runtime, cwd)
    return server
