"""All starts and stops in one place: the Runtime owns a data dir's stores and actors.

Start order: embedder (lazily), reader pools, then each workspace as it is first used
(lock, Chroma, SQLite, journal recovery, writer); services of the layers above (the recall
pools) attach themselves and are stopped first. Start is all-or-nothing: a failure stops
what already started. Stop is the reverse and tries every part, reporting each failure.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

import numpy as np
import pykka

from imprint._faults import fail
from imprint._fs import instance_id, private_dir
from imprint._priority import Priority
from imprint.actors._rechunk import Rechunk
from imprint.actors.inference import Inference, InferenceActor, InferenceProxy
from imprint.actors.read_messages import Family
from imprint.actors.readers import ReaderPool, pools_for
from imprint.actors.write_messages import Reindex
from imprint.actors.writer import Writer, WriterActor, WriterProxy
from imprint.config import Config
from imprint.errors import StoreError
from imprint.logs import get_logger
from imprint.providers import Provider, make_provider
from imprint.store.applying import Applying
from imprint.store.context import TEXT_FORMAT
from imprint.store.embedder import Embedder, QueryEmbedder
from imprint.store.vectors import close_http_client, open_client
from imprint.store.workspace import WorkspaceStore
from imprint.types import WorkspaceName
from imprint.workspaces import create_workspace, resolve_workspace

__all__ = ["Runtime", "Service", "running"]

log = get_logger("imprint.lifecycle")


class Service(Protocol):
    """Actors a layer above starts over this runtime; stopped before the runtime's own."""

    def stop(self) -> list[str]: ...


S = TypeVar("S", bound=Service)


class _Workspace:
    def __init__(self, store: WorkspaceStore, writer_ref: pykka.ActorRef[Any]) -> None:
        self.store = store
        self.writer_ref = writer_ref
        self.writer = cast(WriterProxy, writer_ref.proxy())


class Runtime:
    """One per process and data dir: the embedder, the reader pools and the open workspaces."""

    def __init__(
        self,
        data_dir: Path,
        config: Config,
        embedder: Embedder | None = None,
        provider_factory: Callable[[], Provider] | None = None,
        *,
        reindex: bool = True,
    ) -> None:
        """`reindex`: a workspace's upkeep runs in the background once it is opened (the
        owning server's runtime; not a one-shot command's): an index older than
        `TEXT_FORMAT` is re-indexed, and the BM25 index's segments are merged."""
        self.data_dir = data_dir
        self.config = config
        self._reindex = reindex
        self._embedder = embedder
        self._embedder_lock = threading.Lock()
        self._query_embedder: QueryEmbedder | None = None
        self._open: dict[WorkspaceName, _Workspace] = {}
        self._open_lock = threading.Lock()
        self._http_client: Any = None
        self._inference_ref: pykka.ActorRef[Any] | None = None
        self._inference_logic: Inference | None = None
        self._inference_lock = threading.Lock()
        self._provider_factory = provider_factory
        self._pools: dict[Family, ReaderPool] = {}
        self._services: dict[str, Service] = {}
        self._services_lock = threading.Lock()
        # Interactive calls in flight; background work waits for a turn between its units.
        self.priority = Priority()
        self._started = False
        # The ids each workspace's writer is applying, for searches (`store.applying`).
        self.applying = Applying()

    # -- start ---------------------------------------------------------------------------

    def start(self) -> Runtime:
        private_dir(self.data_dir)
        size = self.config.readers.pool_size
        try:
            self._pools = pools_for(size, self, self.embed_query)
        except BaseException:
            self.stop()
            raise
        self._started = True
        log.info("runtime.started", data_dir=str(self.data_dir), pool_size=size)
        return self

    def pool(self, family: Family) -> ReaderPool:
        pool = self._pools.get(family)
        if pool is None:
            raise StoreError("runtime: reader pools are not started")
        return pool

    def service(self, name: str, make: Callable[[Runtime], S]) -> S:
        """The runtime's one `name` service, started by `make` on first use."""
        with self._services_lock:
            if not self._started:
                raise StoreError("runtime: not started")
            found = self._services.get(name)
            if found is None:
                found = make(self)
                self._services[name] = found
            return cast(S, found)

    def embedder(self) -> Embedder:
        """Loaded on first use: a command that never embeds never pays for the model."""
        with self._embedder_lock:
            if self._embedder is None:
                self._embedder = Embedder.from_config(self.config.embedding)
            return self._embedder

    def embed_query(self, text: str) -> np.ndarray:
        """A query's embedding: concurrent callers are batched into one inference, repeated
        queries come from a small cache (`embedding.query_cache_size`)."""
        return self._batcher().embed(text)

    def prime_queries(self, texts: list[str]) -> None:
        """Start embedding queries that are about to be asked for (a recall's search steps)
        in ONE inference now; `embed_query` of each then waits for that batch."""
        self._batcher().prime(texts)

    def _batcher(self) -> QueryEmbedder:
        with self._embedder_lock:
            batcher = self._query_embedder
        if batcher is None:
            embedder = self.embedder()
            with self._embedder_lock:
                if self._query_embedder is None:
                    self._query_embedder = QueryEmbedder(
                        embedder, cache_size=self.config.embedding.query_cache_size
                    )
                batcher = self._query_embedder
        return batcher

    def workspace(self, name: str = "", *, create: bool = False) -> WorkspaceStore:
        """Open (once) and return a workspace. Empty name = the active workspace."""
        return self._workspace(name, create=create).store

    def writer(self, name: WorkspaceName) -> WriterProxy:
        return self._workspace(name).writer

    def resolve(self, name: str = "", *, create: bool = False) -> WorkspaceName:
        ws = resolve_workspace(self.data_dir, name, must_exist=not create)
        if create:
            create_workspace(self.data_dir, ws)
        return ws

    def _workspace(self, name: str, *, create: bool = False) -> _Workspace:
        if not self._started:
            raise StoreError("runtime: not started")
        ws = self.resolve(name, create=create)
        with self._open_lock:
            opened = self._open.get(ws)
            if opened is not None:
                return opened
            create_workspace(self.data_dir, ws)
            chroma_url = self.config.store.chroma_url
            if chroma_url and self._http_client is None:
                self._http_client = open_client(self.data_dir, chroma_url)
            started = time.monotonic()
            store = WorkspaceStore(
                self.data_dir,
                ws,
                self.embedder(),
                chroma_url=chroma_url,
                http_client=self._http_client,
                namespace=self.namespace(),
            )
            try:
                ingest = self.config.ingest
                sizes = Rechunk(
                    target=ingest.chunk_chars,
                    overlap=ingest.chunk_overlap,
                    max_file_bytes=ingest.max_file_bytes,
                )
                logic = Writer(
                    store,
                    self.embedder(),
                    min_free_mb=self.config.store.min_free_mb,
                    rechunk=sizes,
                    applying=self.applying,
                )
                logic.recover()
                upkeep = logic.reembed_due() or store.sqlite.text_format() < TEXT_FORMAT
                ref = WriterActor.start(logic, self.priority)
            except BaseException:
                store.close()
                raise
            opened = _Workspace(store, ref)
            self._open[ws] = opened
            if self._reindex and upkeep:
                opened.writer.reindex(Reindex())
            if self._reindex:  # a store written by an older version has segments to merge
                opened.writer.merge_soon()
            log.info(
                "workspace.opened",
                workspace=ws,
                elapsed_ms=round((time.monotonic() - started) * 1000, 1),
            )
            return opened

    def namespace(self) -> str:
        """A random id for this data dir, made once, so a shared Chroma server keeps dirs apart."""
        return instance_id(self.data_dir)

    def inference(self) -> InferenceProxy:
        """The process's one InferenceActor, started on first use; the model loads later still,
        on its first request."""
        with self._inference_lock:
            if self._inference_ref is None or not self._inference_ref.is_alive():
                factory = self._provider_factory or (lambda: make_provider(self.config.tagger))
                self._inference_logic = Inference(factory)
                self._inference_ref = InferenceActor.start(self._inference_logic)
            return cast(InferenceProxy, self._inference_ref.proxy())

    def inference_state(self) -> dict[str, Any]:
        """Provider, load state and whether the model is busy (since when), without starting
        anything and without a message: a long prompt holds the actor's mailbox, and a
        diagnostic must never wait for it. `busy_since` is a time.time() instant or None."""
        ref, logic = self._inference_ref, self._inference_logic
        if ref is None or logic is None or not ref.is_alive():
            return {
                "provider": "not started",
                "loaded": False,
                "load_seconds": None,
                "busy_since": None,
                "busy_with": "",
            }
        return logic.snapshot()

    def opened(self, workspace: WorkspaceName) -> WorkspaceStore:
        """For readers: a workspace the caller opened before sending them a message."""
        opened = self._open.get(workspace)
        if opened is None:
            raise StoreError(f"workspace: {workspace!r} is not open in this process")
        return opened.store

    # -- stop ----------------------------------------------------------------------------

    def stop(self) -> list[str]:
        """Services above first, then writers (they finish queued writes), the model, the
        readers and the stores. Every part is tried; returns (and logs) each failure."""
        failures: list[str] = []

        def attempt(what: str, stop: Callable[[], object]) -> None:
            try:
                fail(
                    "runtime.stop." + what.replace(" ", ".")
                )  # one part failing (test_reads_layer)
                result = stop()
            except Exception as exc:
                failures.append(f"{what}: {type(exc).__name__}: {exc}")
                log.error("runtime.stop_failed", part=what, error=f"{type(exc).__name__}: {exc}")
                return
            if isinstance(result, list):
                for failure in result:
                    failures.append(f"{what}: {failure}")
                    log.error("runtime.stop_failed", part=what, error=str(failure))

        self._started = False
        with self._services_lock:
            services = list(self._services.items())
            self._services.clear()
        for name, service in reversed(services):
            attempt(f"service {name}", service.stop)
        with self._open_lock:
            workspaces = list(self._open.items())
            self._open.clear()
        for ws, opened in reversed(workspaces):
            # block=True: queued writes are handled before the actor stops.
            attempt(f"writer {ws}", functools.partial(opened.writer_ref.stop, block=True))
        if self._inference_ref is not None:
            # The model is below every reader and writer: nothing waits on it here.
            ref, self._inference_ref = self._inference_ref, None
            attempt("inference", functools.partial(ref.stop, block=True, timeout=60))
        pools, self._pools = self._pools, {}
        for family, pool in reversed(list(pools.items())):
            attempt(f"{family.value} readers", pool.stop)
        for ws, opened in reversed(workspaces):
            attempt(f"store {ws}", opened.store.close)
        client, self._http_client = self._http_client, None
        if client is not None:
            attempt("vector server client", functools.partial(close_http_client, client))
        batcher, self._query_embedder = self._query_embedder, None
        if batcher is not None:
            attempt("query embedder", batcher.close)
        alive = pykka.ActorRegistry.get_all()
        if alive:
            log.error("runtime.actors_alive", actors=[str(a) for a in alive])
        log.info("runtime.stopped", data_dir=str(self.data_dir), failures=len(failures))
        return failures


@contextmanager
def running(data_dir: Path, config: Config, *, reindex: bool = True) -> Iterator[Runtime]:
    runtime = Runtime(data_dir, config, reindex=reindex)
    try:
        yield runtime.start()
    finally:
        runtime.stop()
