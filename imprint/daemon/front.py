"""The static front: a session's first contact, answered from the handshake snapshot.

MCP's own server code takes about a second to import (more on a busy machine), and a client
waits for its `initialize` reply before anything else. The front answers what a session
opens with from `handshake.json` (written by `imprint.server.handshake`) at once, and passes
every other line to the SDK session behind it.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import socket
import threading
from typing import IO, Any, cast

from imprint.daemon._log import log

__all__ = ["Front"]

_NO_ID = object()


def _reply(rid: object, result: object) -> bytes:
    return (json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}) + "\n").encode()


def _well_formed_initialize(params: object) -> bool:
    """What the SDK's own validation of `initialize` params needs; anything else goes to the
    SDK, which answers it in its own words."""
    if not isinstance(params, dict):
        return False
    info = params.get("clientInfo")
    return (
        isinstance(params.get("protocolVersion"), str)
        and isinstance(params.get("capabilities"), dict)
        and isinstance(info, dict)
        and isinstance(info.get("name"), str)
        and isinstance(info.get("version"), str)
    )


class Front:
    """A session's first contact: answers `initialize` and a plain tools/list from the
    static snapshot (`handshake.json`) at once, and passes every other line to the SDK
    session behind it, which may still be importing (about a second of MCP's own imports,
    more on a busy machine).

    The SDK session still sees the client's `initialize` (replayed first, so it negotiates
    the same version and accepts the session); its own reply to it is dropped, the client
    already has one. A session that does not open with `initialize` (a 2026 protocol client)
    is passed through untouched, as is everything once a line is not a JSON object.
    """

    def __init__(self, conn: socket.socket, raw: io.BufferedReader, static: dict[str, Any]):
        self._conn = conn
        self._raw = raw
        self._static = static
        self._send_lock = threading.Lock()
        read_fd, write_fd = os.pipe()
        # What the SDK session reads: the client's lines, as the front passes them on.
        self.reader: IO[str] = open(read_fd, encoding="utf-8", newline="\n")  # noqa: SIM115
        self._pipe = open(write_fd, "wb", buffering=0)  # noqa: SIM115
        self.writer = _FrontOut(self)
        self._version: str | None = None  # negotiated by the static initialize
        self._decided = False  # the first request was seen
        self.drop_id: object = _NO_ID  # the replayed initialize's id: its SDK reply is dropped
        self._thread = threading.Thread(target=self._pump, name="imprint-front", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """The SDK session ended: its end of the pipe goes (a pump still writing stops),
        and so does the front's file object of the socket, once the pump has stopped."""
        with contextlib.suppress(OSError):
            self.reader.close()
        self._thread.join(timeout=5)  # the socket was shut: its read returns at once
        with contextlib.suppress(OSError):
            self._raw.close()

    def send(self, data: bytes) -> None:
        """One whole line to the client; the front and the SDK write whole lines in turn."""
        with self._send_lock:
            self._conn.sendall(data)

    def _pump(self) -> None:
        try:
            while line := self._raw.readline():
                reply = self._answer(line)
                if reply is not None:
                    self.send(reply)
                else:
                    self._pipe.write(line)
        except OSError:
            pass  # the client or the SDK session went away; both ends close below
        except Exception:
            log.exception("daemon.front.failed")
        finally:
            with contextlib.suppress(OSError):
                self._pipe.close()

    def _answer(self, line: bytes) -> bytes | None:
        """The static reply to this line, or None to pass it on (the replayed `initialize`
        is passed on as well, after its reply)."""
        if self._decided and (self._version is None or b"tools/list" not in line):
            # Not a session opened by our static initialize, or not a tools/list: passed on
            # unparsed (a tool call's arguments may be megabytes).
            return None
        try:
            msg = json.loads(line)
        except (ValueError, RecursionError):
            # Not JSON, or nested deeper than json can read: the session behind answers it
            # (a parse error), and this pump goes on with the next line.
            return None
        if not isinstance(msg, dict) or "id" not in msg or not isinstance(msg.get("method"), str):
            return None  # notifications, replies, batches
        method, params = msg["method"], msg.get("params")
        if not self._decided:
            self._decided = True
            if method != "initialize" or not _well_formed_initialize(params):
                return None
            versions = self._static["versions"]
            asked = cast(dict[str, Any], params)["protocolVersion"]
            self._version = asked if asked in versions else self._static["latest"]
            self.drop_id = msg["id"]
            self.send(_reply(msg["id"], versions[self._version]["initialize"]))
            return None  # replayed to the SDK session, whose own reply is dropped
        plain = params is None or (isinstance(params, dict) and set(params) <= {"_meta"})
        if method == "tools/list" and plain:
            assert self._version is not None
            return _reply(msg["id"], self._static["versions"][self._version]["tools/list"])
        return None


class _FrontOut(io.TextIOBase):
    """The SDK session's output: whole lines to the client, less its reply to the replayed
    `initialize`."""

    def __init__(self, front: Front) -> None:
        super().__init__()
        self._front = front
        self._buffer = ""

    def write(self, text: str) -> int:
        self._buffer += text
        return len(text)

    def flush(self) -> None:
        lines, sep, rest = self._buffer.rpartition("\n")
        if not sep:
            return
        self._buffer = rest
        out = []
        for line in (lines + "\n").splitlines(keepends=True):
            if self._front.drop_id is not _NO_ID and self._is_init_reply(line):
                continue
            out.append(line)
        if out:
            self._front.send("".join(out).encode("utf-8"))

    def _is_init_reply(self, line: str) -> bool:
        try:
            msg = json.loads(line)
        except ValueError:
            return False
        if not isinstance(msg, dict) or msg.get("id") != self._front.drop_id:
            return False
        if "result" not in msg and "error" not in msg:
            return False
        self._front.drop_id = _NO_ID
        if "error" in msg:  # the static reply said yes where the SDK says no: worth knowing
            log.warning("daemon.front.initialize_refused", error=str(msg["error"])[:200])
        return True
