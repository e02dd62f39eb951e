"""The MCP server: 17 tools over one Runtime, for stdio and streamable HTTP.

Over HTTP every request needs `Authorization: Bearer <token>`: one random token per data
dir, kept 0600 in `{data_dir}/http_token` (any local user can reach a loopback port; only
the owner can read that file), made on the first start or by `--rotate-token`. Another
user's connection is cut before it is read (`imprint._loopback`), token or not. Host and
Origin must name 127.0.0.1, localhost or [::1] at the server's own port; bodies are capped
by the SDK.
"""

from __future__ import annotations

import contextlib
import hmac
import io
import json
import os
import re
import secrets
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import IO, TYPE_CHECKING, Any, NamedTuple

import anyio
import pydantic_core
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    ErrorData,
    GetPromptResult,
    InputRequiredResult,
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCNotification,
    jsonrpc_message_adapter,
)
from mcp_types import Tool as MCPTool
from pydantic import ValidationError
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from imprint import __version__
from imprint._fs import private_dir
from imprint.errors import ImprintError, failure_line
from imprint.logs import get_logger

if TYPE_CHECKING:
    from imprint.actors.lifecycle import Runtime

__all__ = [
    "INSTRUCTIONS",
    "BearerAuth",
    "BearerToken",
    "build_server",
    "client_config_lines",
    "http_app",
    "http_token",
    "http_token_path",
    "token_hint_lines",
    "tool_modules",
]


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

SHOWN_CHARS = 80
# Pydantic names the member of a union it tried ("list[dict[str,any]]", "str"): not an argument.
_UNION_MEMBER = re.compile(r"^(str|int|float|bool|none|.*[\[\]].*)$")


def _shown(value: Any) -> str:
    """A refused value as the error shows it: its repr, clipped, so a 100 KB argument does
    not come back as a 100 KB error."""
    text = repr(value)
    if len(text) <= SHOWN_CHARS:
        return text
    return f"{text[: SHOWN_CHARS - 1]}… ({len(text)} characters)"


_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
MAX_ERROR_CHARS = 600


def bounded(message: str) -> str:
    """An error as the client gets it: one line, each quoted value clipped as `_shown`
    clips it, at most MAX_ERROR_CHARS. Many errors quote the refused argument, and a
    client can send megabytes; the error must still be one short line."""
    text = " ".join(message.split())

    def clip(match: re.Match[str]) -> str:
        quoted = match.group()
        if len(quoted) <= SHOWN_CHARS:
            return quoted
        return f"{quoted[: SHOWN_CHARS - 1]}… ({len(quoted)} characters)"

    text = _QUOTED.sub(clip, text)
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 1] + "…"


def _one_line(exc: ValidationError) -> str:
    """The first argument error as `name: given value is not allowed; what is`."""
    err = exc.errors()[0]
    loc = [p for i, p in enumerate(err["loc"]) if i == 0 or not _UNION_MEMBER.match(str(p))]
    name = ".".join(str(p) for p in loc) or "arguments"
    if err["type"] == "missing":
        return f"{name}: required"
    given = err.get("input")
    return f"{name}: {_shown(given)} is not allowed; {err['msg'].rstrip('.')}"


_SUBSCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMAS = ("items", "additionalProperties", "not", "contains")


def untitled(schema: Any) -> Any:
    """A JSON schema without its `title` keywords, written portably. Pydantic titles every
    argument with its own name re-cased ("max_chars" -> "Max Chars") and every tool's
    arguments "<tool>Arguments": about a fifth of tools/list, which every client loads at
    every session start, telling the calling model nothing. Property *names* are kept, so an
    argument called `title` survives. Each property is then `portable`."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: portable(untitled(sub)) for name, sub in value.items()}
        elif key in _SUBSCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: untitled(sub) for name, sub in value.items()}
        elif key in _SUBSCHEMA_LISTS and isinstance(value, list):
            out[key] = [untitled(sub) for sub in value]
        elif key in _SUBSCHEMAS:
            out[key] = untitled(value)
        else:
            out[key] = value
    return out


_NULL = {"type": "null"}


def portable(prop: dict[str, Any]) -> dict[str, Any]:
    """One argument's schema as every client reads it. An optional argument is simply
    optional: pydantic's `T | None = None` (`anyOf: [T, {type: null}]`) is listed as `T`
    with no default, since Gemini CLI rewrites type arrays and puts `null` into enums, and
    the Inspector's portability check refuses them. The tools still accept an explicit
    null (the listed schema is only what clients see). A default that says something
    (not null, not "") is also named in the description, since Codex drops `default`
    before the model sees it; an empty one is dropped: leaving the argument out is the
    same."""
    options = prop.get("anyOf")
    if isinstance(options, list) and _NULL in options:
        rest = [o for o in options if o != _NULL]
        prop = {k: v for k, v in prop.items() if k != "anyOf"}
        if len(rest) == 1 and isinstance(rest[0], dict) and not set(rest[0]) & set(prop):
            prop.update(rest[0])
        else:
            prop["anyOf"] = rest
    if "default" not in prop:
        return prop
    default = prop["default"]
    if default is None or default == "":
        return {k: v for k, v in prop.items() if k != "default"}
    description = prop.get("description", "")
    if "default" not in description:
        shown = default if isinstance(default, str) else json.dumps(default)
        prop = {**prop, "description": f"{description}; default {shown}".lstrip("; ")}
    return prop


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
                f"Method not found: {_shown(ctx.method)} is not offered by imprint (it "
                "answers initialize, ping, tools/list, tools/call and empty prompts and "
                "resources lists)"
            )
            raise MCPError(code=METHOD_NOT_FOUND, message=bounded(line), data=ctx.method) from exc
        raise
    except ValidationError as exc:
        line = f"{ctx.method}: {_one_line(exc)}"
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
            line = f"name: unknown prompt {_shown(name)}; prompts/list names the prompts (none)"
            raise MCPError(code=INVALID_PARAMS, message=bounded(line), data={"name": name})
        return await super().get_prompt(name, arguments, context)

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        await self._tools_ready()
        if self._tool_manager.get_tool(name) is None:
            # A protocol error, not a tool result: the spec's -32602 for an unknown tool.
            line = f"name: unknown tool {_shown(name)}; tools/list names the {len(tool_modules())}"
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
                raise ToolError(bounded(_one_line(cause))) from exc
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
) -> MCPServer:
    """A fresh server with every tool registered against one started runtime.

    Given a function instead (the daemon's `wait_runtime`), the tools register when the
    session first lists or calls them, with the runtime that function returns then."""
    server = ImprintServer(
        name="imprint", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING"
    )

    def register() -> None:
        from imprint.tools._app import App

        started = runtime() if callable(runtime) else runtime
        app = App(started, cwd, extra_roots)
        for module in tool_modules():
            module.register(server, app)

    if callable(runtime):
        server.defer_tools(register)
    else:
        register()
    return server


# One escape at a time, so an escaped backslash before "u" is never read as an escape:
# a surrogate pair, a lone surrogate, or any other escape (kept as it is).
_ESCAPE = re.compile(
    r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"
    r"|(?P<lone>\\u[dD][89a-fA-F][0-9a-fA-F]{2})"
    r"|\\."
)
BATCH_REFUSED = (
    "Invalid Request: a batch (JSON array); send one message per line "
    "(MCP removed JSON-RPC batching in 2025-06-18)"
)


def _without_lone_surrogates(line: str) -> str:
    """The line with each lone UTF-16 surrogate escape (`\\ud800`, which a JavaScript
    client writes when it cuts a string inside an emoji) as U+FFFD, as a UTF-8 decoder
    replaces a broken byte sequence. Pairs and other escapes stay as they are."""
    return _ESCAPE.sub(lambda m: "\\ufffd" if m.group("lone") else m.group(), line)


def _refusal(request_id: Any, code: int, message: str) -> JSONRPCError:
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        request_id = None
    return JSONRPCError(
        jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=bounded(message))
    )


def read_line(line: str) -> tuple[JSONRPCMessage | None, JSONRPCError | None]:
    """One line from the client: the message to pass to the session, or the error to
    answer it with (a blank line is neither). A line the SDK reads is read exactly as it
    reads it; only a line it refuses is looked at again, to say why."""
    if not line.strip():
        return None, None
    try:
        message = jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as exc:
        not_json = exc.errors()[0]["type"] == "json_invalid"
    else:
        if isinstance(message, JSONRPCNotification) and '"id"' in line:
            # A request whose id is neither a string nor an integer (true, 1.5, null) reads
            # as a notification, which gets no answer: its sender would wait forever.
            raw = pydantic_core.from_json(line)
            if isinstance(raw, dict) and "id" in raw:
                return None, _refusal(
                    None, INVALID_REQUEST, "Invalid Request: id must be a string or an integer"
                )
        return message, None
    try:
        raw = pydantic_core.from_json(line)
    except ValueError as exc:
        fixed = _without_lone_surrogates(line)
        if fixed != line:
            return read_line(fixed)  # one level: the fixed line has no lone surrogate
        return None, _refusal(None, PARSE_ERROR, f"Parse error: {exc}")
    if not_json:  # pydantic_core read it where the adapter did not: still not a message
        return None, _refusal(None, PARSE_ERROR, "Parse error: not one JSON value")
    if isinstance(raw, list):
        return None, _refusal(None, INVALID_REQUEST, BATCH_REFUSED)
    request_id = raw.get("id") if isinstance(raw, dict) and "method" in raw else None
    return None, _refusal(
        request_id,
        INVALID_REQUEST,
        'Invalid Request: not a JSON-RPC 2.0 message (an object with "jsonrpc": "2.0" and '
        'a string "method", or a response to one of the server\'s requests)',
    )


async def serve_lines(server: MCPServer, reader: IO[str], writer: IO[str]) -> None:
    """One MCP session over newline-delimited JSON-RPC on these text streams.

    The SDK's own stdio transport gives a line it cannot read to the session as an
    exception, which the session only logs: a client waiting for that line's answer waits
    forever. Here every line is answered: -32700 (parse error) for a line that is not JSON,
    -32600 (invalid request) for a batch or an object that is no JSON-RPC message, with the
    request's id where it has one. Bytes that are not UTF-8 and lone surrogate escapes are
    read as U+FFFD."""
    from mcp.shared.message import SessionMessage

    if isinstance(reader, io.TextIOWrapper):
        reader.reconfigure(errors="replace")  # as the SDK's own stdin transport reads
    lines, out = anyio.wrap_file(reader), anyio.wrap_file(writer)
    to_session, from_client = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    to_client, from_session = anyio.create_memory_object_stream[SessionMessage](0)
    refusals = to_client.clone()

    async def read() -> None:
        async with to_session, refusals:
            async for line in lines:
                message, refusal = read_line(line)
                if message is not None:
                    await to_session.send(SessionMessage(message))
                elif refusal is not None:
                    log.info("session.line_refused", code=refusal.error.code)
                    await refusals.send(SessionMessage(refusal))

    async def write() -> None:
        async with from_session:
            async for item in from_session:
                text = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                await out.write(text + "\n")
                await out.flush()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(read)
        tasks.start_soon(write)
        # What MCPServer.run_stdio_async runs over the process's own stdio, over these.
        lowlevel = server._lowlevel_server
        try:
            await lowlevel.run(from_client, to_client, lowlevel.create_initialization_options())
        finally:
            to_client.close()  # the writer ends once the reader's refusals end too


HANDSHAKE_FILE = Path(__file__).with_name("handshake.json")


def handshake_snapshot() -> dict[str, Any]:
    """The `initialize` and tools/list results, for every protocol version that opens with
    `initialize`, exactly as a session of this server writes them.

    The daemon answers both from this snapshot (`imprint/handshake.json`) while MCP's own
    imports and the runtime are still loading; tests/test_handshake.py holds it equal to
    what the server answers live. After changing a tool, run `python -m imprint.server`.
    """
    from importlib.metadata import version

    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

    from imprint.actors.lifecycle import Runtime
    from imprint.config import Config

    # Registering the tools touches no store: an unstarted runtime is enough.
    runtime = Runtime(Path(os.devnull), Config())
    versions = {v: _answers(build_server(runtime), v) for v in HANDSHAKE_PROTOCOL_VERSIONS}
    return {
        "mcp": version("mcp"),
        "imprint": __version__,
        "latest": LATEST_HANDSHAKE_VERSION,
        "versions": versions,
    }


def _answers(server: MCPServer, protocol: str) -> dict[str, Any]:
    """What one session answers to `initialize` (at `protocol`) and then tools/list."""
    import json
    import socket

    ours, theirs = socket.socketpair()
    with ours, theirs:
        reader = ours.makefile("r", encoding="utf-8", newline="\n")
        writer = ours.makefile("w", encoding="utf-8", newline="\n")
        thread = threading.Thread(target=anyio.run, args=(serve_lines, server, reader, writer))
        thread.start()
        params = {
            "protocolVersion": protocol,
            "capabilities": {},
            "clientInfo": {"name": "imprint-snapshot", "version": __version__},
        }
        requests = [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        ]
        theirs.sendall("".join(json.dumps(r) + "\n" for r in requests).encode())
        replies: dict[int, Any] = {}
        with theirs.makefile("rb") as lines:
            while len(replies) < 2:
                msg = json.loads(lines.readline())
                if msg.get("id") in (1, 2):
                    replies[msg["id"]] = msg["result"]
        theirs.shutdown(socket.SHUT_WR)
        thread.join(timeout=60)
        reader.close()
        writer.close()
    return {"initialize": replies[1], "tools/list": replies[2]}


def write_handshake(path: Path = HANDSHAKE_FILE) -> Path:
    """Write `handshake_snapshot()` where the daemon reads it."""
    import json

    snapshot = handshake_snapshot()
    path.write_text(json.dumps(snapshot, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


def http_token_path(data_dir: Path) -> Path:
    return data_dir / "http_token"


class BearerToken(NamedTuple):
    value: str
    fresh: bool  # made just now (first start or rotated): the clients do not have it yet


def http_token(data_dir: Path, *, rotate: bool = False) -> BearerToken:
    """The data dir's bearer token, made once (random, 256 bits) and kept 0600; with
    `rotate`, a new one replaces it (atomically: a reader sees the old or the new)."""
    path = http_token_path(data_dir)
    if not rotate:
        with contextlib.suppress(FileNotFoundError):
            token = path.read_text(encoding="utf-8").strip()
            if len(token) >= 32:
                if path.stat().st_mode & 0o077:
                    os.chmod(path, 0o600)
                return BearerToken(token, fresh=False)
    private_dir(path.parent)
    token = secrets.token_urlsafe(32)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.unlink(missing_ok=True)  # O_EXCL below: never write through a planted file or link
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(token + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    return BearerToken(token, fresh=True)


# Where an OAuth client looks for an authorization server (RFC 9728, RFC 8414, OpenID
# discovery) and registers itself (RFC 7591). Imprint has none: these answer 404 at once, with
# the token hint, so a client reports it instead of waiting for a flow that cannot happen.
OAUTH_PATHS = (
    "/.well-known/oauth-protected-resource",
    "/.well-known/oauth-authorization-server",
    "/.well-known/openid-configuration",
    "/register",
    "/authorize",
    "/token",
)


def auth_hint(token_file: Path | str) -> str:
    # Not "Authorization: Bearer <token>": Claude Code redacts what follows "Authorization:"
    # or "Bearer" in the error it shows, which would hide the hint.
    return (
        "imprint needs its bearer token (no OAuth): send the Authorization header with the "
        f"token kept in {token_file}; `imprint serve --http --rotate-token` prints each "
        "client's config line"
    )


def _is_oauth_path(path: str) -> bool:
    # RFC 9728 and 8414 put the resource's or issuer's path after the well-known name.
    return any(path == p or path.startswith(f"{p}/") for p in OAUTH_PATHS)


class BearerAuth:
    """ASGI middleware: HTTP requests without the data dir's bearer token get 401 and reach
    nothing (the body is not even read).

    Every refusal is what OAuth-aware clients parse: a JSON body `{"error",
    "error_description"}` (RFC 6749 5.2) and `WWW-Authenticate: Bearer realm="imprint"`.
    A wrong bearer token adds `error="invalid_token"` and the hint to the header; a request
    with no Authorization header (or another scheme) gets the bare challenge, as RFC 6750
    3.1 asks of a request that carried no authentication (the client did not know it was
    needed: the challenge tells it, an error code would claim it tried). OAuth discovery
    and registration paths answer 404 with the hint, token or not: nothing secret is there
    to guard."""

    def __init__(self, app: ASGIApp, token: str, token_file: Path | str = "{data_dir}/http_token"):
        self.app = app
        self._token = token.encode()
        self._hint = auth_hint(token_file)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            if _is_oauth_path(scope.get("path", "")):
                body = {"error": "not_found", "error_description": self._hint}
                await JSONResponse(body, status_code=404)(scope, receive, send)
                return
            header = Headers(scope=scope).get("authorization")
            scheme, _, given = (header or "").partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(
                given.strip().encode(), self._token
            ):
                challenge = 'Bearer realm="imprint"'
                if scheme.lower() == "bearer":
                    # A header is one latin-1 line: a quoted-string, whatever the path holds.
                    line = (
                        " ".join(self._hint.split()).encode("latin-1", "replace").decode("latin-1")
                    )
                    quoted = line.replace("\\", "\\\\").replace('"', '\\"')
                    challenge += f', error="invalid_token", error_description="{quoted}"'
                body = {"error": "invalid_token", "error_description": self._hint}
                response = JSONResponse(
                    body, status_code=401, headers={"WWW-Authenticate": challenge}
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def http_app(
    server: MCPServer, port: int, token: str, token_file: Path | str = "{data_dir}/http_token"
) -> ASGIApp:
    """The streamable HTTP app behind the bearer check; Host and Origin at this exact port."""
    loopback = ("127.0.0.1", "localhost", "[::1]")
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{host}:{port}" for host in loopback],
        allowed_origins=[f"http://{host}:{port}" for host in loopback],
    )
    app = server.streamable_http_app(transport_security=security, host="127.0.0.1")
    return BearerAuth(app, token, token_file)


def client_config_lines(url: str, token: str, token_file: Path) -> list[str]:
    """What to paste into each client to connect, printed by `serve --http` when the token
    was just made (first start, `--rotate-token`): never again, so it stays out of the
    service manager's journal."""
    header = f"Authorization: Bearer {token}"
    cursor = (
        f'{{"mcpServers": {{"imprint": {{"url": "{url}", '
        f'"headers": {{"Authorization": "Bearer {token}"}}}}}}}}'
    )
    return [
        f"imprint: MCP over streamable HTTP at {url}",
        f"imprint: every request needs the header '{header}' (token kept in {token_file})",
        f"  Claude Code: claude mcp add --transport http imprint {url} --header '{header}'",
        f"  Codex (~/.codex/config.toml, then export IMPRINT_HTTP_TOKEN={token}):",
        f'    [mcp_servers.imprint] url = "{url}" bearer_token_env_var = "IMPRINT_HTTP_TOKEN"',
        f"  Cursor (~/.cursor/mcp.json): {cursor}",
    ]


def token_hint_lines(url: str, token_file: Path) -> list[str]:
    """What `serve --http` prints at a start that made no new token: where it is, not it."""
    return [
        f"imprint: MCP over streamable HTTP at {url}",
        f"imprint: every request needs 'Authorization: Bearer <token>' with the token kept in "
        f"{token_file}; `imprint serve --http --rotate-token` makes a new one and prints each "
        "client's config line",
    ]


if __name__ == "__main__":
    print(f"wrote {write_handshake()}")
