"""The owner's warm-up: the runtime starts, and the embedder loads, in the background.

A client's `initialize` and tools/list need neither MCP's server code, the store nor the
embedder: the front answers them from `handshake.json` while those load. The first tool
call waits for the runtime (`wait_runtime`). The embedder loads in a thread of its own
beside the imports (its session setup and first inference run mostly outside the GIL, on
the other core), and the active workspace is opened before anyone asks, so a client's first
search pays for neither.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from imprint.daemon._log import log
from imprint.errors import DaemonError

if TYPE_CHECKING:
    from imprint.actors.lifecycle import Runtime
    from imprint.config import Config
    from imprint.store.embedder import Embedder

__all__ = ["Warmup", "freeze_heap"]


class Warmup:
    """Starts the runtime in a thread; `then` runs in that thread once the warm-up is done
    (or cut short by `stopping`)."""

    def __init__(
        self,
        data_dir: Path,
        config: Config,
        *,
        embedder: bool,
        stopping: threading.Event,
        then: Callable[[], None],
        freeze: bool = False,
    ) -> None:
        self.data_dir = data_dir
        self.config = config
        self.warm_embedder = embedder
        self._stopping = stopping
        self._then = then
        self._freeze = freeze  # `freeze_heap` once warm: only in the daemon's own process
        self.runtime: Runtime | None = None
        self.server_imported = threading.Event()
        self._runtime_ready = threading.Event()  # set when started, or when starting failed
        self._runtime_error: BaseException | None = None
        self._warm_thread: threading.Thread | None = None
        self._embedder_thread: threading.Thread | None = None
        self._embedder: Embedder | None = None  # preloaded for the runtime

    def start(self) -> None:
        if self.warm_embedder:
            self._embedder_thread = threading.Thread(
                target=self._load_embedder, name="imprint-embedder", daemon=True
            )
            self._embedder_thread.start()
        self._warm_thread = threading.Thread(target=self._warm, name="imprint-warm", daemon=True)
        self._warm_thread.start()

    def join(self) -> None:
        """A start under way cannot be interrupted: wait for it, so what it started stops."""
        for thread in (self._warm_thread, self._embedder_thread):
            if thread is not None:
                thread.join()

    def _load_embedder(self) -> None:
        try:
            from imprint.store.embedder import Embedder

            started = time.monotonic()
            embedder = Embedder.from_config(self.config.embedding)
            embedder.embed(["warm up"])  # loads the model, sizes its arena
            self._embedder = embedder
            log.info("daemon.embedder.ready", elapsed_ms=round((time.monotonic() - started) * 1000))
        except Exception as exc:  # the runtime loads it at first use and reports it then
            log.warning("daemon.embedder.failed", error=f"{type(exc).__name__}: {exc}")

    def _warm(self) -> None:
        try:
            # What a session needs first, so its imports do not queue behind the store's.
            # Sessions wait for these instead of importing them too: two threads importing
            # the same package tree in different orders can deadlock on its module locks.
            try:
                import mcp.server.stdio  # noqa: F401

                import imprint.server.app  # noqa: F401
            finally:
                self.server_imported.set()
            from imprint.actors.lifecycle import Runtime
            from imprint.server.app import tool_modules

            tool_modules()  # imported once here; each session registers them

            started = time.monotonic()
            if self._embedder_thread is not None:
                self._embedder_thread.join()  # usually done: the imports take longer
            self.runtime = Runtime(self.data_dir, self.config, embedder=self._embedder).start()
            log.info("daemon.runtime.ready", elapsed_ms=round((time.monotonic() - started) * 1000))
        except BaseException as exc:
            self._runtime_error = exc
            log.exception("daemon.runtime.failed")
            return
        finally:
            self._runtime_ready.set()
        if self.warm_embedder and not self._stopping.is_set():
            self._warm_store(self.runtime)
        if self._freeze:
            freeze_heap()
        self._then()  # last: a first search does not wait for it

    @staticmethod
    def _warm_store(runtime: Runtime) -> None:
        try:
            runtime.embedder()  # where the preload failed: loads (or fails) again now
            started = time.monotonic()
            runtime.workspace("")  # Chroma and SQLite opened before the first search
            log.info(
                "daemon.workspace.ready", elapsed_ms=round((time.monotonic() - started) * 1000)
            )
        except Exception as exc:  # the first search reports it again, in its own words
            log.warning("daemon.warm.failed", error=f"{type(exc).__name__}: {exc}")

    def wait_started(self, timeout: float | None = None) -> bool:
        """Whether the background start is done (the runtime up, or its error kept) within
        `timeout`; by then the package tree is imported."""
        return self._runtime_ready.wait(timeout)

    def wait_runtime(self, timeout: float | None = None) -> Runtime:
        """The started runtime, once the background start is done; its error if it failed."""
        if not self._runtime_ready.wait(timeout):
            raise DaemonError("daemon: the store is still starting; try again")
        if self.runtime is None:
            error = self._runtime_error
            raise DaemonError(f"daemon: the store failed to start: {error}") from error
        return self.runtime


def freeze_heap() -> None:
    """Keep what the warm-up built (the package tree, the model, the open store: about 90k
    objects) out of every later garbage collection. A full collection over them costs about
    60 ms of CPU on this machine, during which every thread waits for the interpreter's lock,
    a recall's tail included; after `gc.freeze` one costs under 1 ms. Only the daemon does
    this, once: it lives as long as what it freezes."""
    started = time.monotonic()
    gc.collect()
    gc.freeze()
    log.info(
        "daemon.heap.frozen",
        objects=gc.get_freeze_count(),
        elapsed_ms=round((time.monotonic() - started) * 1000),
    )
