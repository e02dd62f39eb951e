"""The embedder's inferences are bounded: at most batch_size texts and BATCH_TOKENS padded
tokens each (the largest batch sizes what onnxruntime's arena keeps), and no memory pattern
is kept per input shape; the vectors are the same as embedding each text alone. The memory
itself is measured in benchmark/memory.py."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from imprint.store.embedder import BATCH_TOKENS, Embedder


class _Recording:
    """The real session, with every inference's input shape written down."""

    def __init__(self, session: Any) -> None:
        self._session = session
        self.shapes: list[tuple[int, int]] = []

    def run(self, names: Any, feeds: dict[str, np.ndarray]) -> Any:
        self.shapes.append(feeds["input_ids"].shape)
        return self._session.run(names, feeds)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)


def test_batches_keep_within_the_count_and_the_padded_token_budget(embedder: Embedder) -> None:
    """Long and short texts mixed: no inference holds more than batch_size texts or more than
    BATCH_TOKENS padded tokens, and each text's vector equals its vector embedded alone."""
    long_text = " ".join(f"word{i} of a long chunk about actors" for i in range(120))
    texts = [f"{long_text} {n}" for n in range(40)] + [f"short text {n}" for n in range(40)]
    recording = _Recording(embedder._session)
    original = embedder._session
    embedder._session = recording  # type: ignore[assignment]
    try:
        together = embedder.embed(texts)
    finally:
        embedder._session = original
    assert recording.shapes, "no inference ran"
    for rows, width in recording.shapes:
        assert rows <= embedder.batch_size
        assert rows == 1 or rows * width <= BATCH_TOKENS, (rows, width)
    assert sum(rows for rows, _ in recording.shapes) == len(texts)
    for i in (0, 39, 40, 79):
        alone = embedder.embed([texts[i]])[0]
        assert np.allclose(together[i], alone, atol=1e-4)


@pytest.mark.parametrize(
    ("lengths", "size", "expected"),
    [
        ([10, 3000, 20], 32, [[0, 2], [1]]),  # 3000 tokens: alone, past the budget
        ([256] * 20, 32, [list(range(16)), list(range(16, 20))]),  # 16 x 256 = BATCH_TOKENS
        ([5] * 5, 2, [[0, 1], [2, 3], [4]]),  # the count cap
        ([], 32, []),
    ],
)
def test_batches_group_by_length_under_both_caps(
    embedder: Embedder, lengths: list[int], size: int, expected: list[list[int]]
) -> None:
    """How positions are grouped: by length, at most `size` each, at most BATCH_TOKENS."""
    saved = embedder.batch_size
    embedder.batch_size = size
    try:
        assert embedder.batches(lengths) == expected
    finally:
        embedder.batch_size = saved


def test_no_memory_pattern_is_kept_per_shape(embedder: Embedder) -> None:
    """Every batch has its own shape; a pattern planned and kept for each grew RSS with the
    work, so the session runs without memory patterns."""
    assert embedder._session.get_session_options().enable_mem_pattern is False
