"""The local provider's prompt-state cache: a few entries, every byte counted, one pinned."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from imprint.providers.local import PromptCache, _entry_bytes

VOCAB = 1000


class State:
    """What llama-cpp-python saves: the model's state bytes, the token ids, the logits."""

    def __init__(self, tokens: tuple[int, ...], state_bytes: int = 1000) -> None:
        self.input_ids = np.array(tokens, dtype=np.intc)
        self.scores = np.ones((len(tokens), VOCAB), dtype=np.single)
        self.n_tokens = len(tokens)
        self.llama_state = b"\0" * state_bytes
        self.llama_state_size = state_bytes


def put(cache: PromptCache, tokens: tuple[int, ...], **kw: Any) -> State:
    state = State(tokens, **kw)
    cache[tokens] = state
    return state


def test_every_byte_an_entry_holds_is_counted_and_the_logits_are_dropped() -> None:
    """The size counts state, token ids and logits; a saved entry keeps one logits row."""
    cache = PromptCache(capacity_bytes=10**9, entries=4)
    state = put(cache, tuple(range(50)), state_bytes=5000)
    assert state.scores.shape == (1, VOCAB)  # 50 rows became 1
    assert _entry_bytes(state) == 5000 + 50 * 4 + VOCAB * 4
    assert cache.cache_size == _entry_bytes(state)


def test_at_most_a_few_entries_and_the_byte_cap_least_recently_used_first() -> None:
    """Past the entry count or the byte cap, the least recently used entry goes."""
    cache = PromptCache(capacity_bytes=10**9, entries=3)
    for i in range(5):
        put(cache, (i, 1, 2))
    assert len(cache) == 3 and (0, 1, 2) not in cache._states
    one = _entry_bytes(put(PromptCache(), (9, 9, 9)))  # as stored: one logits row
    small = PromptCache(capacity_bytes=one * 2 + one // 2, entries=10)
    for i in range(4):
        put(small, (i, 7, 7))
    assert len(small) == 2 and small.cache_size <= small.capacity_bytes


def test_the_pinned_prompt_survives_any_number_of_others() -> None:
    """The pinned state is never the victim; a new pin replaces the old one."""
    cache = PromptCache(capacity_bytes=10**9, entries=2)
    cache.pin_next = True
    put(cache, (1, 2, 3, 4))
    for i in range(10):
        put(cache, (100 + i, 5))
    assert cache.pinned == (1, 2, 3, 4) and (1, 2, 3, 4) in cache._states and len(cache) == 2
    cache.pin_next = True
    put(cache, (1, 2, 3, 9))
    assert cache.pinned == (1, 2, 3, 9) and (1, 2, 3, 4) not in cache._states


def test_lookup_is_by_longest_common_prefix() -> None:
    """A prompt sharing the pinned prefix finds it; the reused tokens are counted."""
    cache = PromptCache(capacity_bytes=10**9, entries=4)
    cache.pin_next = True
    plan = put(cache, (1, 2, 3, 4, 5, 6))
    put(cache, (1, 2, 9))
    assert cache[(1, 2, 3, 4, 5, 7, 8)] is plan
    assert cache.hits == 1 and cache.reused_tokens == 5
    with pytest.raises(KeyError):
        cache[(42,)]
    assert cache.misses == 1


def test_an_empty_cache_is_still_used() -> None:
    """llama-cpp-python saves only `if self.cache:`; an empty cache must be truthy."""
    assert bool(PromptCache()) is True
