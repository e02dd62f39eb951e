"""The static front: a session's first contact, answered from the handshake snapshot.

MCP's own server code takes about a second to import (more on a busy machine), and a client
waits for its first reply before anything else. The front answers what a session opens
with from `handshake.json` (written by `imprint.server.handshake`) at once, and passes
every other line to the SDK session behind it.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import socket
import threading
from typing import IO, Any

from imprint.daemon._accepts import (
    is_request,
    legacy_plain_list,
    modern_version,
    well_formed_initialize,
)
from imprint.daemon._log import log

__all__ = ["Front"]

_NO_ID = object()
_STATIC_MODERN = ("server/discover", "tools/list")


def _reply(rid: object, result: object) -> bytes:
    return (json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}) + "\n").encode()


class Front:
    """A session's first contact: answers its opening from the static snapshot
    (`handshake.json`) at once, and passes every other line to the SDK session behind it,
    which may still be importing (about a second of MCP's own imports, more on a busy
    machine).

    Two openings are answered. A handshake client's `initialize`, and after it a plain
    tools/list at the negotiated version. A 2026 client's `server/discover` or plain
    tools/list (each request carries its `_meta` envelope; no handshake), and after it
    either of those again, at the version each one names, where the snapshot has it.
    The SDK session still sees the opening request (replayed first, so it negotiates the
    same version, or serves the same era, as if it had answered itself); its own reply to
    it is dropped, the client already has one. A session whose opening the front does not
    answer is passed through untouched, as is everything once a line is not a JSON object.
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
        self._modern = False  # the session was opened by a static 2026 reply
        self._decided = False  # the first request was seen
        self.drop_id: object = _NO_ID  # the replayed opening's id: its SDK reply is dropped
        self.drop_method = ""  # and its method
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
        """The static reply to this line, or None to pass it on (the replayed opening is
        passed on as well, after its reply)."""
        if self._decided and not self._may_answer(line):
            # Not a session opened by a static reply, or not a method the front answers:
            # passed on unparsed (a tool call's arguments may be megabytes).
            return None
        try:
            msg = json.loads(line)
        except (ValueError, RecursionError):
            # Not JSON, or nested deeper than json can read: the session behind answers it
            # (a parse error), and this pump goes on with the next line.
            return None
        if not is_request(msg):
            return None  # notifications, replies, batches, ids the SDK refuses
        if not self._decided:
            self._decided = True
            self._open(msg)
            return None  # replayed to the SDK session, whose own reply is dropped
        result = self._static_result(msg["method"], msg.get("params"))
        return None if result is None else _reply(msg["id"], result)

    def _may_answer(self, line: bytes) -> bool:
        if self._modern:
            return any(m.encode() in line for m in _STATIC_MODERN)
        return self._version is not None and b"tools/list" in line

    def _open(self, msg: dict[str, Any]) -> None:
        """The static reply to a session's first request, where the front answers it."""
        method, params = msg["method"], msg.get("params") or {}
        if method == "initialize":
            if not well_formed_initialize(params):
                return
            versions = self._static["versions"]
            asked = params["protocolVersion"]
            self._version = asked if asked in versions else self._static["latest"]
            result = versions[self._version]["initialize"]
        elif method in _STATIC_MODERN:
            version = modern_version(params, self._static["modern"])
            if version is None:
                return
            self._modern = True
            result = self._static["modern"][version][method]
        else:
            return
        self.drop_id, self.drop_method = msg["id"], method
        self.send(_reply(msg["id"], result))

    def _static_result(self, method: str, params: object) -> object | None:
        """The snapshot's result for a later request of a session the front opened."""
        if self._modern:
            version = modern_version(params, self._static["modern"])
            if method not in _STATIC_MODERN or version is None:
                return None
            return self._static["modern"][version][method]
        if method == "tools/list" and legacy_plain_list(params):
            assert self._version is not None
            return self._static["versions"][self._version]["tools/list"]
        return None


class _FrontOut(io.TextIOBase):
    """The SDK session's output: whole lines to the client, less its reply to the replayed
    opening request."""

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
            if self._front.drop_id is not _NO_ID and self._is_replayed_reply(line):
                continue
            out.append(line)
        if out:
            self._front.send("".join(out).encode("utf-8"))

    def _is_replayed_reply(self, line: str) -> bool:
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
            error = str(msg["error"])[:200]
            if self._front.drop_method == "initialize":
                log.warning("daemon.front.initialize_refused", error=error)
            else:
                log.warning(
                    "daemon.front.opening_refused", method=self._front.drop_method, error=error
                )
        return True
