"""How everything above the actors writes: one gateway to the workspaces' writers.

`Writes.open` resolves a workspace once and opens it; every later call takes that
`WorkspaceName`. A call sends the workspace's writer one typed message (`Write`,
`Repair`, `SourceState`) and waits for its answer under the call's deadline: the one already
bound (a tool call's, a recall step's), or one of the write's own length from now.

A `Writes` is one session's: it reads through the session's read gateway (a write checks what
is there first) and knows the session's folders (a path ingest resolves a relative path
against its cwd, and may read under it and under the folders it was given besides).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from imprint.actors.deadline import Pending, call_deadline
from imprint.actors.lifecycle import Runtime
from imprint.actors.write_messages import Backup, Repair, SourceState, Write
from imprint.actors.writer import WriteAck
from imprint.reads.gateway import ActorReads, Reads
from imprint.store.check import RepairReport
from imprint.store.records import SourceEntry, WriteBatch
from imprint.types import WorkspaceName
from imprint.writes._redaction import redacted_batch, redacts

__all__ = ["REPAIR_TIMEOUT_SEC", "WRITE_TIMEOUT_SEC", "Writes"]

WRITE_TIMEOUT_SEC = 120.0
REPAIR_TIMEOUT_SEC = 3600.0  # re-embedding a large workspace takes minutes


class _Counted:
    """A write's pending answer that also says what was redacted from it."""

    def __init__(self, pending: Pending[WriteAck], redacted: tuple[tuple[str, int], ...]):
        self._pending = pending
        self._redacted = redacted

    def get(self, *, timeout: float | None = None) -> WriteAck:
        ack = self._pending.get(timeout=timeout)
        return ack.model_copy(update={"redacted": self._redacted})


class Writes:
    """One session's writes: the runtime's writers, its reads, its folders."""

    def __init__(
        self,
        runtime: Runtime,
        cwd: Path | None = None,
        extra_roots: list[Path] | None = None,
        *,
        reads: Reads | None = None,
        cwd_root: bool = True,
    ) -> None:
        self.runtime = runtime
        self.reads: Reads = reads if reads is not None else ActorReads(runtime)
        self._cwd = cwd.resolve() if cwd is not None else None
        # Folders this session may also ingest (`imprint serve --allow`, the CLI's own path).
        self.extra_roots = [r.expanduser().resolve() for r in extra_roots or []]
        # Whether the cwd is an ingest root when ingest.allowed_roots is empty: not for
        # `imprint ingest PATH` through the daemon, which allows PATH alone (as in-process).
        self.cwd_root = cwd_root

    @property
    def cwd(self) -> Path:
        """The session's working directory: the one it was given, else the process's."""
        return self._cwd if self._cwd is not None else Path(os.getcwd()).resolve()

    def open(self, workspace: str, *, create: bool = True) -> WorkspaceName:
        """Resolve `workspace` (made when `create`, else it must exist) and open it."""
        ws = self.runtime.resolve(workspace, create=create)
        self.runtime.workspace(ws)
        return ws

    def send(
        self, ws: WorkspaceName, batch: WriteBatch, embeddings: np.ndarray | None = None
    ) -> Pending[WriteAck]:
        """Send a write without waiting (an ingest embeds the next file meanwhile). Every
        write passes here, so this is where its secrets are redacted (`_redaction`)."""
        found: dict[str, int] = {}
        if redacts(self.runtime.config, ws):
            batch, kinds, changed = redacted_batch(batch)
            found = dict(kinds)
            if changed and embeddings is not None and len(embeddings) == len(batch.upserts):
                # The vectors given were made from the secret: made again from what is kept.
                embeddings = embeddings.copy()
                texts = [batch.upserts[i].indexed_text for i in changed]
                embeddings[changed] = self.runtime.embedder().embed(texts)
        pending = self.runtime.writer(ws).write(Write(batch=batch), embeddings)
        return _Counted(pending, tuple(sorted(found.items()))) if found else pending

    def write(
        self,
        ws: WorkspaceName,
        batch: WriteBatch,
        *,
        seconds: float = WRITE_TIMEOUT_SEC,
        embeddings: np.ndarray | None = None,
    ) -> WriteAck:
        with call_deadline(seconds) as deadline:
            return deadline.wait(self.send(ws, batch, embeddings), "write")

    def source_state(self, ws: WorkspaceName, project: str) -> Pending[dict[str, SourceEntry]]:
        """The registry's entry of every file source of `project` (see `Writer.source_state`)."""
        return self.runtime.writer(ws).source_state(SourceState(project=project))

    def repair(self, ws: WorkspaceName) -> RepairReport:
        with call_deadline(REPAIR_TIMEOUT_SEC) as deadline:
            return deadline.wait(self.runtime.writer(ws).repair(Repair()), "repair")

    def backup(self, ws: WorkspaceName, dest: Path) -> dict[str, dict[str, int | str]]:
        """Copy the workspace's files into `dest`, the writer holding still; their sums."""
        with call_deadline(REPAIR_TIMEOUT_SEC) as deadline:
            return deadline.wait(self.runtime.writer(ws).backup(Backup(dest=str(dest))), "backup")
