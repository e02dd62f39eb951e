"""What the data dir's owner answers besides MCP sessions: the dashboard, hosted while
`imprint dashboard` stays connected, `imprint status`'s row (typed, so the command takes
its exit code from the row, not from its own text), and the context a client's hook adds."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

from imprint.daemon.requests import BackupRequest, ImportRequest, StatusRequest, SyncRequest
from imprint.errors import DaemonError, ImprintError, failure_line

if TYPE_CHECKING:
    from imprint.actors.lifecycle import Runtime
    from imprint.watch import WatchHost

__all__ = [
    "DashboardHost",
    "answer_backup",
    "answer_hook",
    "answer_import",
    "answer_status",
    "answer_sync",
    "answer_watch",
]

# How often an import in the daemon tells `imprint import` how far it got.
PROGRESS_EVERY_SEC = 0.25


class DashboardHost:
    """One dashboard server for every `imprint dashboard` connected, stopped with the last."""

    def __init__(
        self,
        wait_runtime: Callable[[float], Runtime],
        *,
        kind: str,
        started_at: float,
        clients: Callable[[], int],
    ) -> None:
        self._wait_runtime = wait_runtime
        self._kind = kind
        self._started_at = started_at
        self._clients = clients
        self._dashboard: Any = None  # a DashboardServer while someone asked for one
        self._dashboard_users = 0
        self._dashboard_lock = threading.Lock()

    def serve(self, request: dict[str, Any], reader: IO[str], writer: IO[str]) -> None:
        """`imprint dashboard` asked: serve the dashboard (once) for as long as it stays
        connected; answer with a URL carrying a fresh one-time token. Only the owner can
        open this socket (0600), so only the owner gets a token."""
        from imprint.dashboard import DashboardServer, Owner

        port = request.get("port", 8766)
        with self._dashboard_lock:
            try:
                runtime = self._wait_runtime(120)  # started in the background
                if self._dashboard is None:
                    if not isinstance(port, int) or not 0 <= port <= 65535:
                        raise DaemonError(f"port: {port!r} is not allowed; 0-65535")
                    owner = Owner(
                        kind=self._kind, started_at=self._started_at, clients=self._clients
                    )
                    self._dashboard = DashboardServer(runtime, owner, port=port).start()
                self._dashboard_users += 1
                reply = {"url": self._dashboard.url(), "port": self._dashboard.port}
                if port and port != self._dashboard.port:
                    reply["note"] = f"already serving on port {self._dashboard.port}"
            except Exception as exc:
                reply = {"error": str(exc)}
        writer.write(json.dumps(reply) + "\n")
        writer.flush()
        if "error" in reply:
            return
        try:
            while reader.readline():  # until `imprint dashboard` exits
                pass
        finally:
            with self._dashboard_lock:
                self._dashboard_users -= 1
                if self._dashboard_users == 0 and self._dashboard is not None:
                    self._dashboard.stop()
                    self._dashboard = None

    def stop(self) -> None:
        with self._dashboard_lock:
            if self._dashboard is not None:
                self._dashboard.stop()
                self._dashboard = None


def _reply(what: str, answer: Callable[[], dict[str, Any]]) -> str:
    """`answer()` as one JSON line, or `{"error": ...}` in the words a tool would use."""
    from imprint.server.error_lines import bounded

    try:
        reply = answer()
    except ImprintError as exc:
        reply = {"error": bounded(str(exc))}
    except Exception as exc:
        line = failure_line(exc) or f"{what}: unexpected {type(exc).__name__}: {exc}"
        reply = {"error": bounded(line)}
    return json.dumps(reply) + "\n"


def answer_status(
    request: dict[str, Any],
    wait_runtime: Callable[[float], Runtime],
    watches: Callable[[], WatchHost | None] | None = None,
) -> str:
    """The status row `imprint status` asked for, as one JSON line: `{"row": ...}`, or
    `{"error": ...}` in the words the status tool would use. Asked with `"text": true`, the
    reply also holds the command's whole text (`imprint.daemon.status_text`), the watched
    folders' lines from `watches` (the daemon's, once started)."""

    def answer() -> dict[str, Any]:
        asked = StatusRequest.parse(request)
        runtime = wait_runtime(120)  # first: see answer_backup
        from imprint.reads.gateway import ActorReads
        from imprint.reads.status import status_row

        row = status_row(ActorReads(runtime), asked.workspace, asked.check)
        reply: dict[str, Any] = {"row": row.model_dump(mode="json")}
        if request.get("text") is True and watches is not None:
            from imprint.daemon.status_text import status_lines
            from imprint.watch import format_watch

            host = watches()
            if host is None:
                raise DaemonError("watch: the daemon is still starting; run the command again")
            lines = status_lines(runtime.data_dir, row, format_watch(host.rows()))
            reply["text"], reply["consistent"] = "\n".join(lines), row.consistent
        return reply

    return _reply("status", answer)


def answer_hook(request: dict[str, Any], wait_runtime: Callable[[float], Runtime]) -> str:
    """The context for one hook event (`imprint hook`) as one JSON line: `{"context": ...}`
    (empty when there is none), or `{"error": ...}`."""

    def answer() -> dict[str, Any]:
        # The runtime first (see answer_backup), and at once for a hook that asks so: a
        # session start briefs from the store itself while the daemon's store starts.
        waited = request.get("runtime_wait_ms", request.get("deadline_ms", 1500))
        runtime = wait_runtime(max(0, min(int(waited), 60_000)) / 1000)
        from imprint.reads.briefing import HookRequest, hook_context

        return {"context": hook_context(runtime, HookRequest.model_validate(request))}

    return _reply("hook", answer)


def answer_backup(request: dict[str, Any], wait_runtime: Callable[[float], Runtime]) -> str:
    """`imprint backup` beside the daemon: the daemon's writers copy their own workspaces
    (`imprint.writes.backup`); `{"done": line}` or `{"error": ...}`, as one JSON line."""
    from pathlib import Path

    def answer() -> dict[str, Any]:
        dest = BackupRequest.parse(request).dest
        # The runtime first: by then the warm-up has imported the package tree. Importing
        # it here at the same time was seen to find `imprint.reads` half made.
        runtime = wait_runtime(120)
        from imprint.writes.backup import backup_data_dir

        return {"done": backup_data_dir(runtime, Path(dest) if dest else None)}

    return _reply("backup", answer)


def answer_sync(request: dict[str, Any], wait_runtime: Callable[[float], Runtime]) -> str:
    """`imprint sync` beside the daemon: its writers write what the folder brings
    (`imprint.writes.sync`); `{"done": line}` or `{"error": ...}`, as one JSON line."""
    from pathlib import Path

    def answer() -> dict[str, Any]:
        asked = SyncRequest.parse(request)
        runtime = wait_runtime(120)  # first: see answer_backup
        from imprint.writes import Writes
        from imprint.writes.sync import sync_folder

        done = sync_folder(Writes(runtime), Path(asked.dir), asked.workspace, asked.all)
        return {"done": done}

    return _reply("sync", answer)


def answer_watch(request: dict[str, Any], host: WatchHost | None) -> str:
    """`imprint watch` (add, list or stop a watched folder): `{"rows": [...]}` or
    `{"error": ...}`, as one JSON line."""

    def answer() -> dict[str, Any]:
        if host is None:
            raise DaemonError("watch: the daemon is still starting; run the command again")
        return host.answer(request)

    return _reply("watch", answer)


def answer_import(
    request: dict[str, Any], wait_runtime: Callable[[float], Runtime], send: Callable[[str], None]
) -> None:
    """`imprint import` beside the daemon: the file read, checked and written here, through
    this daemon's writers (`imprint.writes.imports`). Sent as JSON lines: `{"total": N}`,
    then `{"progress": n}` (records handled since the last), then `{"done": line}` or
    `{"error": ...}`. A client that goes away stops the import between two writes (a rerun
    finishes it)."""
    from pathlib import Path

    def answer() -> dict[str, Any]:
        asked = ImportRequest.parse(request)
        runtime = wait_runtime(120)  # first: see answer_backup
        from imprint.writes import Writes
        from imprint.writes.import_check import read_export
        from imprint.writes.imports import import_file

        parsed = read_export(Path(asked.path))
        send(json.dumps({"total": parsed.records}) + "\n")
        unsent, last = 0, time.monotonic()

        def progress(n: int) -> None:
            nonlocal unsent, last
            unsent += n
            if unsent and time.monotonic() - last >= PROGRESS_EVERY_SEC:
                send(json.dumps({"progress": unsent}) + "\n")
                unsent, last = 0, time.monotonic()

        report = import_file(Writes(runtime), parsed, asked.workspace, progress, asked.replace)
        if unsent:
            send(json.dumps({"progress": unsent}) + "\n")
        return {"done": report.line()}

    send(_reply("import", answer))
