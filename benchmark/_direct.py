"""`DirectReads`: the readers' own logic objects called in the caller's thread, one read at a
time, for benchmarks that set the reader actors beside the same work without them.

It answers the same typed messages as `imprint.reads.gateway.ActorReads` (the `Reads`
Protocol), from the very objects a reader actor runs (`imprint.actors.readers.reading_for`);
queries are embedded in the caller's thread too (no batching worker, no cache).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TypeVar

import numpy as np

from imprint.actors.deadline import Deadline, Done, Pending, call_deadline
from imprint.actors.lifecycle import Runtime
from imprint.actors.read_messages import Family, ReadMessage, VectorQuery
from imprint.actors.readers import Reading, reading_for
from imprint.reads.gateway import STATUS_TIMEOUT_SEC, ActorReads
from imprint.store.check import IndexCheck
from imprint.types import WorkspaceName

__all__ = ["DirectReads"]

R = TypeVar("R")


class DirectReads:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.applying = runtime.applying

        def embed_query(text: str) -> np.ndarray:
            # Unbatched and uncached, unlike the runtime's query embedder.
            vector: np.ndarray = runtime.embedder().embed([text])[0]
            return vector

        self._logic: dict[Family, Reading] = {
            family: reading_for(family, runtime, embed_query) for family in Family
        }

    def ask(self, msg: ReadMessage[R]) -> Pending[R]:
        return Done(self._logic[msg.family].handle(msg))

    def deadline(self) -> AbstractContextManager[Deadline]:
        return call_deadline(self.runtime.config.readers.timeout_sec)

    def open(self, workspace: str) -> WorkspaceName:
        ws = self.runtime.resolve(workspace)
        self.runtime.workspace(ws)
        return ws

    def check(
        self, ws: WorkspaceName, deep: bool = False, *, seconds: float = STATUS_TIMEOUT_SEC
    ) -> IndexCheck:
        """The writer's check, as the actor gateway asks it (a writer answers it either way)."""
        return ActorReads(self.runtime).check(ws, deep, seconds=seconds)

    def prime_vectors(self, queries: list[VectorQuery]) -> None:
        """Nothing: each vector query is read alone, in the caller's thread, here."""

    def drop_primed(self, queries: list[VectorQuery]) -> None:
        """Nothing was primed."""

    def close(self) -> None:
        for logic in self._logic.values():
            logic.close()
