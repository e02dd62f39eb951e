"""QueryEmbedder: concurrent query embeddings coalesced into one inference, with a cache."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from imprint.store import embedder as embedder_mod
from imprint.store.embedder import DIMENSIONS, Embedder, QueryEmbedder


class GatedEmbedder:
    """Records each batch; the first batch waits until `release` is set."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.entered = threading.Event()
        self.release = threading.Event()
        self.fail_next = False

    def embed(
        self, texts: Sequence[str], *, starting: Callable[[], None] | None = None
    ) -> np.ndarray:
        if starting is not None:
            starting()
        self.batches.append(list(texts))
        if len(self.batches) == 1:
            self.entered.set()
            assert self.release.wait(timeout=30)
        if self.fail_next:
            self.fail_next = False
            raise RuntimeError("onnx fell over")
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i, 0] = len(text)
        return out


def _in_threads(fn: Any, args: list[str]) -> tuple[list[threading.Thread], dict[str, Any]]:
    results: dict[str, Any] = {}

    def run(arg: str) -> None:
        try:
            results[arg] = fn(arg)
        except Exception as exc:
            results[arg] = exc

    threads = [threading.Thread(target=run, args=(a,)) for a in args]
    for t in threads:
        t.start()
    return threads, results


def test_callers_queued_behind_a_batch_share_the_next_inference() -> None:
    """While one embedding runs, the queries that arrive meanwhile go in ONE next batch."""
    fake = GatedEmbedder()
    q = QueryEmbedder(fake, cache_size=0)  # type: ignore[arg-type]
    try:
        first, first_result = _in_threads(q.embed, ["a"])
        assert fake.entered.wait(timeout=30)
        later, later_results = _in_threads(q.embed, ["bb", "ccc", "dddd"])
        # Wait until all three are queued (the worker is still inside the first batch).
        for _ in range(3000):
            if q._queue.qsize() == 3:
                break
            threading.Event().wait(0.001)
        assert q._queue.qsize() == 3
        fake.release.set()
        for t in first + later:
            t.join(timeout=30)
        assert fake.batches[0] == ["a"]
        assert sorted(fake.batches[1]) == ["bb", "ccc", "dddd"] and len(fake.batches) == 2
        assert first_result["a"][0] == 1
        assert {k: float(v[0]) for k, v in later_results.items()} == {
            "bb": 2,
            "ccc": 3,
            "dddd": 4,
        }
    finally:
        fake.release.set()
        q.close()


def test_repeated_query_comes_from_the_cache() -> None:
    """A query asked again is answered from the LRU cache without an inference."""
    fake = GatedEmbedder()
    fake.release.set()
    q = QueryEmbedder(fake, cache_size=2)  # type: ignore[arg-type]
    try:
        a = q.embed("alpha")
        assert q.embed("alpha") is a and q.hits == 1 and len(fake.batches) == 1
        q.embed("beta")
        q.embed("gamma")  # evicts alpha, the least recently used
        q.embed("alpha")
        assert len(fake.batches) == 4
    finally:
        q.close()


def test_an_embedding_error_reaches_every_waiter_and_the_worker_lives_on() -> None:
    """A failing inference fails the callers of that batch only."""
    fake = GatedEmbedder()
    fake.release.set()
    fake.fail_next = True
    q = QueryEmbedder(fake, cache_size=0)  # type: ignore[arg-type]
    try:
        with pytest.raises(RuntimeError, match="onnx fell over"):
            q.embed("x")
        assert q.embed("yy")[0] == 2
    finally:
        q.close()


def test_batched_vectors_match_single_ones(embedder: Embedder) -> None:
    """Coalescing does not change the vectors (same model, attention-masked padding)."""
    q = QueryEmbedder(embedder, cache_size=0)
    texts = ["how do I stop an actor", "structlog processors", "a much longer query " * 5]
    try:
        threads, results = _in_threads(q.embed, texts)
        for t in threads:
            t.join(timeout=60)
        for text in texts:
            alone = embedder.embed([text])[0]
            assert np.allclose(results[text], alone, atol=1e-4)
    finally:
        q.close()


def test_primed_queries_are_one_inference_that_their_callers_take() -> None:
    """prime() queues its texts as ONE batch; each later embed() of one of them waits for
    that batch instead of embedding again (cache off), once per time the text was primed."""
    fake = GatedEmbedder()
    q = QueryEmbedder(fake, cache_size=0)  # type: ignore[arg-type]
    texts = ["a", "bb", "ccc", "dddd"]
    try:
        q.prime([*texts, "a"])  # "a" twice: two callers may take it
        assert fake.entered.wait(timeout=30)
        assert fake.batches == [texts]
        threads, results = _in_threads(q.embed, [*texts, "a"])
        fake.release.set()
        for t in threads:
            t.join(timeout=30)
        assert fake.batches == [texts], "a primed text was embedded again"
        assert {t: float(results[t][0]) for t in texts} == {t: len(t) for t in texts}
        q.embed("bb")  # its prime was taken: with the cache off it is embedded again
        assert fake.batches == [texts, ["bb"]]
    finally:
        fake.release.set()
        q.close()


def test_primed_vectors_match_single_ones(embedder: Embedder) -> None:
    """A primed batch gives each query the vector it gets embedded alone."""
    q = QueryEmbedder(embedder, cache_size=0)
    texts = ["how do I stop an actor", "structlog processors", "a much longer query " * 5]
    try:
        q.prime(texts)
        for text in texts:
            assert np.allclose(q.embed(text), embedder.embed([text])[0], atol=1e-4)
        assert q.batches == 1
    finally:
        q.close()


@pytest.mark.parametrize("size", [0, 8])
def test_query_cache_size_comes_from_config(tmp_path: Any, embedder: Embedder, size: int) -> None:
    """embedding.query_cache_size: 0 embeds a repeated query again, a cache answers it."""
    from imprint.actors.lifecycle import Runtime
    from imprint.config import Config

    config = Config()
    config.embedding.query_cache_size = size
    rt = Runtime(tmp_path / "data", config, embedder=embedder).start()
    try:
        first = rt.embed_query("how do I stop an actor")
        again = rt.embed_query("how do I stop an actor")
        assert np.array_equal(first, again)
        batcher = rt._query_embedder
        assert batcher is not None
        assert (batcher.hits, batcher.batches) == ((0, 2) if size == 0 else (1, 1))
    finally:
        rt.stop()


class _OrderedEmbedder:
    """Records when each inference starts; each waits for the test to let it start, then
    to let it finish."""

    def __init__(self) -> None:
        self.order: list[str] = []
        self.entered = threading.Event()
        self.let_start = threading.Event()
        self.release = threading.Event()

    def embed(
        self, texts: Sequence[str], *, starting: Callable[[], None] | None = None
    ) -> np.ndarray:
        self.entered.set()
        assert self.let_start.wait(timeout=30)
        self.order.append(f"inference {len(texts)}")
        if starting is not None:
            starting()
        assert self.release.wait(timeout=30)
        return np.zeros((len(texts), DIMENSIONS), dtype=np.float32)


def test_prime_returns_once_its_inference_starts_unless_the_worker_is_busy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An idle worker: `prime` hands over, returning only once the batch's inference starts
    (so the reads a recall sends next do not queue ahead of it). A busy worker: `prime`
    returns at once, its batch queued behind the one running."""
    monkeypatch.setattr(embedder_mod, "PRIME_HANDOFF_S", 30.0)  # the bound, out of the way
    fake = _OrderedEmbedder()
    q = QueryEmbedder(fake, cache_size=0)  # type: ignore[arg-type]

    def prime(texts: list[str]) -> None:
        q.prime(texts)
        fake.order.append(f"primed {len(texts)}")

    try:
        first = threading.Thread(target=prime, args=(["a", "b"],))
        first.start()
        assert fake.entered.wait(timeout=30)
        fake.let_start.set()
        first.join(timeout=30)
        assert fake.order == ["inference 2", "primed 2"]
        prime(["c", "d", "e"])  # the worker is still on the first batch
        assert fake.order == ["inference 2", "primed 2", "primed 3"]
        fake.release.set()
        for text in "abcde":
            q.embed(text)
        assert fake.order[-1] == "inference 3"
    finally:
        fake.let_start.set()
        fake.release.set()
        q.close()
