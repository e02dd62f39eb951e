"""One MCP session over newline-delimited JSON-RPC on a pair of text streams (the daemon's
socket connections), every line answered."""

from __future__ import annotations

import io
import re
from typing import IO, Any

import anyio
import pydantic_core
from mcp.server.mcpserver import MCPServer
from mcp_types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCNotification,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

from imprint.logs import get_logger
from imprint.server.error_lines import bounded

__all__ = ["BATCH_REFUSED", "read_line", "serve_lines"]

log = get_logger("imprint.server")

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
