"""Commands beside a running daemon: the command line talks to the daemon's socket itself.

When a daemon owns the data dir (an assistant is connected), the store is its alone, so a
command asks it: the same hello as the stdio bridge, then an MCP client session over that
socket, in this process (no `imprint serve` child bridging to it: one process for one
command).
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from imprint.errors import ImprintError

__all__ = ["via_daemon"]


@contextlib.asynccontextmanager
async def _socket_transport(sock: socket.socket) -> AsyncIterator[Any]:
    """An MCP client transport over a socket past its hello: newline-delimited JSON-RPC,
    as on stdio."""
    import anyio
    from anyio.abc import UNIXSocketStream
    from mcp.shared.message import SessionMessage
    from mcp_types import jsonrpc_message_adapter

    stream = await UNIXSocketStream.from_socket(sock)
    to_session, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, from_session = anyio.create_memory_object_stream[SessionMessage](0)

    async def read() -> None:
        async with to_session:
            buffer = b""
            with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, OSError):
                while True:
                    *lines, buffer = (buffer + await stream.receive()).split(b"\n")
                    for line in lines:
                        try:
                            message = jsonrpc_message_adapter.validate_json(line, by_name=False)
                        except ValueError as exc:
                            await to_session.send(exc)
                        else:
                            await to_session.send(SessionMessage(message))

    async def write() -> None:
        async with from_session:
            async for item in from_session:
                text = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                await stream.send((text + "\n").encode("utf-8"))

    async with stream, anyio.create_task_group() as tasks:
        tasks.start_soon(read)
        tasks.start_soon(write)
        try:
            yield read_stream, write_stream
        finally:
            tasks.cancel_scope.cancel()


def via_daemon(
    root: Path,
    tool: str,
    args: dict[str, object],
    *,
    allow: list[str] | None = None,
    cwd_root: bool = True,
    progress: object = None,
) -> str | None:
    """When a daemon owns the data dir, ask it through MCP: the same tool, the same text.
    None when no daemon runs: the caller works in-process."""
    from imprint.daemon import daemon_alive, open_session

    if not daemon_alive(root):
        return None
    import anyio
    from mcp.client import Client

    sock = open_session(root, allow, cwd_root=cwd_root)

    async def go() -> tuple[bool, str]:
        async with Client(_socket_transport(sock)) as client:
            result = await client.call_tool(tool, args, progress_callback=progress)  # type: ignore[arg-type]
            return bool(result.is_error), str(result.content[0].text)  # type: ignore[union-attr]

    try:
        is_error, text = anyio.run(go)
    finally:
        sock.close()
    if is_error:
        raise ImprintError(text)
    return text
