"""Chroma: one collection per workspace, embedded (PersistentClient) or a server (HttpClient).

An embedded Chroma folder must have one writing process: two were seen to corrupt a
collection, and a second process does not see vectors added after it opened. `StoreLock`
makes the owning process explicit; other processes get `StoreBusyError`.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

import chromadb
import httpx
import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
from chromadb.config import Settings
from filelock import FileLock, Timeout

from imprint._fs import atomic_write_text, private_dir
from imprint.errors import StoreBusyError, StoreError
from imprint.logs import get_logger
from imprint.store.embedder import Embedder
from imprint.store.records import Filters, Record
from imprint.types import MemoryId, WorkspaceName

FALLBACK_MAX_BATCH = 1000

__all__ = [
    "ImprintEmbeddingFunction",
    "StoreLock",
    "VectorIndex",
    "close_http_client",
    "collection_name",
    "open_client",
]


def _settings() -> Settings:
    # A fresh object per client: chromadb's client constructors write the path, host and
    # port into the Settings they are given, so a shared one would cross two clients.
    return Settings(anonymized_telemetry=False, allow_reset=False)


log = get_logger(__name__)


class ImprintEmbeddingFunction(EmbeddingFunction[Documents]):
    """Our local MiniLM, so Chroma never reaches for its own (downloaded) default model."""

    def __init__(self, embedder: Embedder | None = None) -> None:
        self._embedder = embedder

    def __call__(self, input: Documents) -> Embeddings:
        if self._embedder is None:
            raise StoreError("embedding: no embedder attached to the collection")
        return list(self._embedder.embed(list(input)))

    @staticmethod
    def name() -> str:
        return "imprint-minilm-int8"

    def get_config(self) -> dict[str, Any]:
        return {}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> ImprintEmbeddingFunction:
        return ImprintEmbeddingFunction()

    def default_space(self) -> Any:
        return "cosine"


def collection_name(workspace: WorkspaceName, namespace: str = "") -> str:
    """Chroma wants [a-zA-Z0-9._-], alphanumeric at both ends; workspace names may end in '-'.

    On a shared server the data dir's namespace keeps two data dirs' workspaces apart.
    """
    return f"imprint.{namespace + '.' if namespace else ''}{workspace}.v1"


class StoreLock:
    """An exclusive, non-blocking lock on a workspace folder, naming its owner when refused."""

    def __init__(self, folder: Path) -> None:
        private_dir(folder)
        self._lock = FileLock(folder / "store.lock", thread_local=False, mode=0o600)
        self._owner = folder / "store.owner"

    def acquire(self) -> None:
        try:
            self._lock.acquire(timeout=0)
        except Timeout as exc:
            owner = "another process"
            try:
                info = json.loads(self._owner.read_text(encoding="utf-8"))
                owner = f"process {info['pid']}"
            except (OSError, ValueError, KeyError):
                pass
            raise StoreBusyError(
                f"workspace store {self._owner.parent} is owned by {owner}; "
                "stop it or use its server (Chroma's embedded store allows one writing process)"
            ) from exc
        atomic_write_text(self._owner, json.dumps({"pid": os.getpid()}))

    def release(self) -> None:
        if self._lock.is_locked:
            self._lock.release()


def open_client(chroma_dir: Path, chroma_url: str) -> Any:
    if chroma_url:
        parts = urlsplit(chroma_url)
        return chromadb.HttpClient(
            host=parts.hostname or "127.0.0.1",
            port=parts.port or (443 if parts.scheme == "https" else 8000),
            ssl=parts.scheme == "https",
            settings=_settings(),
        )
    private_dir(chroma_dir)
    client = chromadb.PersistentClient(path=str(chroma_dir), settings=_settings())
    # Chroma creates its files under the process umask; the owner process sets 077, and
    # what exists now (an embedding library's process may not) is narrowed here as well.
    for path in chroma_dir.rglob("*"):
        with contextlib.suppress(OSError):
            if not path.is_symlink() and path.stat().st_mode & 0o077:
                os.chmod(path, 0o700 if path.is_dir() else 0o600)
    return client


def close_http_client(client: Any) -> None:
    """Close a server's client (`open_client` with a URL): Chroma's `close` releases its
    shared system but not the HTTP sessions of the client and of its admin client (chromadb
    1.5.9), whose pooled sockets stayed open: a runtime started and stopped against a server
    kept two descriptors each time (8 cycles: 8 -> 22), none with both closed."""
    client.close()
    for owner in (client, getattr(client, "_admin_client", None)):
        session = getattr(getattr(owner, "_server", None), "_session", None)
        if isinstance(session, httpx.Client):
            session.close()


# Filtered queries first look at this many times `limit` nearest records, unfiltered; when
# too few of those match, at OVERFETCH times as many again (at most WIDEST records).
OVERFETCH = 8
WIDEST = 4000


def _where(filters: Filters) -> dict[str, Any] | None:
    pairs = filters.pairs()
    if not pairs:
        return None
    if len(pairs) == 1:
        return {pairs[0][0]: pairs[0][1]}
    return {"$and": [{k: v} for k, v in pairs]}


# A collection this small is searched exhaustively: HNSW's default beam (ef_search 100)
# missed 1.2 % of the 30 nearest records of a 1,586-record store, and which ones differed
# from one process to the next (each builds its own graph); a beam as wide as the store
# finds them all, in under a millisecond at this size. Larger ones get a beam of 400: with
# Chroma's 100, a search found only 93.6 % of the 10 nearest records of a 10k-chunk store
# and 87.8 % at 100k (120 corpus queries against an exact scan; 98.5 % and 96.3 % with
# 400, 99.7 % and 97.9 % with 800), at no search time measurable beside the rest of a query
# (`benchmark.paired_search`, 100 against 400: semantic 0.990 and 1.012 of the medians at
# 10k and 100k, hybrid 1.015 and 0.953).
EXACT_UP_TO = 2000
DEFAULT_EF_SEARCH = 400


def _hits(ids: Sequence[str], distances: Sequence[float]) -> list[tuple[MemoryId, float]]:
    """Chroma's ids and cosine distances as (id, similarity), nearest first."""
    return [(MemoryId(i), 1.0 - float(d)) for i, d in zip(ids, distances, strict=True)]


class VectorIndex:
    """The vector side of one workspace. Chroma's client is safe to share between threads."""

    def __init__(
        self, client: Any, workspace: WorkspaceName, embedder: Embedder, namespace: str = ""
    ) -> None:
        self.client = client
        self._opened_with = (client, workspace, embedder, namespace)
        self._max_batch: int | None = None
        self.collection = client.get_or_create_collection(
            name=collection_name(workspace, namespace),
            embedding_function=ImprintEmbeddingFunction(embedder),
            # A new collection is small: exhaustive from its first search.
            configuration={"hnsw": {"space": "cosine", "ef_search": EXACT_UP_TO}},
        )
        self._size_the_beam()

    def _size_the_beam(self) -> None:
        """ef_search for the collection's size. Chroma applies it when it next loads the
        index: a store that grew past EXACT_UP_TO keeps the wide (slower) beam until it is
        opened again; an older store searches exactly from its next open on."""
        try:
            wanted = EXACT_UP_TO if self.collection.count() <= EXACT_UP_TO else DEFAULT_EF_SEARCH
            configured = getattr(self.collection, "configuration_json", None) or {}
            if (configured.get("hnsw") or {}).get("ef_search") != wanted:
                self.collection.modify(configuration={"hnsw": {"ef_search": wanted}})
        except Exception as exc:  # search still works, with the beam it had
            log.warning("vectors.ef_search_unchanged", error=f"{type(exc).__name__}: {exc}")

    def reopened(self) -> VectorIndex:
        """The same workspace's collection opened again (after a repair recreated it)."""
        return VectorIndex(*self._opened_with)

    def reconnected(self) -> VectorIndex:
        """The same collection through a new client of the same folder; the old client is
        closed. After a write failed (ENOSPC), Chroma's embedded client was seen to block for
        good at its next call, holding the interpreter lock; a new client works. A server's
        client is kept (each call is its own HTTP request)."""
        client, workspace, embedder, namespace = self._opened_with
        settings = client.get_settings()
        if not settings.is_persistent or not settings.persist_directory:
            return self.reopened()
        with contextlib.suppress(Exception):  # what it held goes with it; a new one follows
            client.close()
        fresh = open_client(Path(settings.persist_directory), "")
        return VectorIndex(fresh, workspace, embedder, namespace)

    def close(self) -> None:
        """Close an embedded client: its SQLite and HNSW files are released once the last
        client of the folder is closed (Chroma counts the clients sharing one folder's
        system). Never closed, each closed store kept six to ten descriptors open (CI reached
        1,024) and the segments cached: a reopened store read its HNSW files from memory,
        not disk, and did not see them damaged. A server's client is the runtime's, shared
        by its workspaces, and kept."""
        if self.client.get_settings().is_persistent:
            self.client.close()

    def max_batch(self) -> int:
        """The most ids Chroma takes in one call (5461 embedded); asked once, then kept.

        A larger call is refused whole, so every upsert and delete is split to this size."""
        if self._max_batch is None:
            try:
                size = int(self.client.get_max_batch_size())
            except Exception:  # an old server without the pre-flight answer
                size = FALLBACK_MAX_BATCH
            self._max_batch = size if size > 0 else FALLBACK_MAX_BATCH
        return self._max_batch

    def upsert(self, records: Sequence[Record], embeddings: np.ndarray) -> None:
        step = self.max_batch()
        for start in range(0, len(records), step):
            part = records[start : start + step]
            self.collection.upsert(
                ids=[r.id for r in part],
                embeddings=embeddings[start : start + step],
                metadatas=[r.chroma_metadata() for r in part],
            )

    def delete(self, ids: Sequence[str]) -> None:
        step = self.max_batch()
        ids = list(ids)
        for start in range(0, len(ids), step):
            self.collection.delete(ids=ids[start : start + step])

    def query(
        self, embedding: np.ndarray, limit: int, filters: Filters
    ) -> list[tuple[MemoryId, float]]:
        """Nearest records by cosine similarity (1 - distance), best first.

        With filters, the nearest OVERFETCH x limit records are asked for unfiltered and
        filtered here first: Chroma's own `where` first gathers every record the filter
        admits, which grew linearly with the store (0.3 s at 100k records). When those
        hold too few matches, OVERFETCH times as many (at most WIDEST) are looked at; only
        when those too hold fewer than `limit` (a rare project, say, whose records Chroma
        gathers quickly because they are few) does Chroma filter."""
        where = _where(filters)
        if where is not None:
            wanted = dict(filters.pairs())
            first = limit * OVERFETCH
            for asked in dict.fromkeys((first, max(first, min(first * OVERFETCH, WIDEST)))):
                result = self.collection.query(
                    query_embeddings=[embedding],
                    n_results=asked,
                    include=["distances", "metadatas"],
                )
                ids = result["ids"][0]
                distances = (result.get("distances") or [[]])[0]
                metas = (result.get("metadatas") or [[]])[0]
                hits = [
                    (MemoryId(i), 1.0 - float(d))
                    for i, d, m in zip(ids, distances, metas, strict=True)
                    if m is not None and all(m.get(k) == v for k, v in wanted.items())
                ]
                # Fewer ids than asked for: the collection is smaller, so nothing was missed.
                if len(hits) >= limit or len(ids) < asked:
                    return hits[:limit]
        result = self.collection.query(
            query_embeddings=[embedding],
            n_results=limit,
            where=where,
            include=["distances"],
        )
        return _hits(result["ids"][0], (result.get("distances") or [[]])[0])

    def query_many(
        self, embeddings: Sequence[np.ndarray], asks: Sequence[tuple[int, Filters]]
    ) -> list[list[tuple[MemoryId, float]]]:
        """`query` for each embedding with its (limit, filters), in order. Unfiltered asks
        of one limit go to Chroma as one batched query (the same HNSW search each would get
        alone, one call instead of one per embedding); filtered ones as `query` does them."""
        out: dict[int, list[tuple[MemoryId, float]]] = {}
        by_limit: dict[int, list[int]] = {}
        for i, (limit, filters) in enumerate(asks):
            if _where(filters) is None:
                by_limit.setdefault(limit, []).append(i)
        for limit, group in by_limit.items():
            result = self.collection.query(
                query_embeddings=[embeddings[i] for i in group],
                n_results=limit,
                include=["distances"],
            )
            distances = result.get("distances") or [[] for _ in group]
            for row, i in enumerate(group):
                out[i] = _hits(result["ids"][row], distances[row])
        return [
            out[i] if i in out else self.query(embeddings[i], limit, filters)
            for i, (limit, filters) in enumerate(asks)
        ]

    def embedding_of(self, record_id: str) -> np.ndarray | None:
        got = self.collection.get(ids=[record_id], include=["embeddings"])
        embeddings = got.get("embeddings")
        if embeddings is None or len(embeddings) == 0:
            return None
        return np.asarray(embeddings[0], dtype=np.float32)

    def neighbors(self, record_id: str, k: int) -> list[tuple[MemoryId, float]]:
        """The k records nearest to one record, itself excluded; empty for an unknown id.

        HNSW search is approximate: asking for a margin beyond k keeps small collections
        from coming back short.
        """
        vector = self.embedding_of(record_id)
        if vector is None:
            return []
        hits = self.query(vector, k + 1 + 10, Filters())
        return [(rid, score) for rid, score in hits if rid != record_id][:k]

    def ids(self) -> set[str]:
        """Every id, in ONE call: Chroma answers a page at offset k in time growing with k,
        so paging was quadratic (a million ids took over 120 s in pages of 5,000, 2.9 s in
        one call; the ids alone, no documents or vectors, are about 70 MB at that size)."""
        return set(self.collection.get(include=[])["ids"])

    def count(self) -> int:
        return int(self.collection.count())
