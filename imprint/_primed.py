"""Answers asked for before anyone needs them (a recall's query embeddings, its vector reads),
each taken by as many later asks as it was offered for; bounded, the oldest dropped first.
An offer no ask ever takes (its step failed first) only costs its slot until it is dropped.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterable
from typing import Generic, TypeVar

__all__ = ["Primed"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Primed(Generic[K, V]):
    """Thread-safe: offers and takes may come from any thread."""

    def __init__(self, most: int = 64) -> None:
        self._most = most
        self._lock = threading.Lock()
        self._entries: OrderedDict[K, tuple[V, int]] = OrderedDict()  # key -> (value, asks left)

    def offer(self, key: K, value: V) -> bool:
        """Keep `value` for the next ask of `key`; False when `key` is already offered (its
        first value then serves one more ask, and `value` is not kept)."""
        with self._lock:
            held = self._entries.get(key)
            if held is not None:
                self._entries[key] = (held[0], held[1] + 1)
                return False
            self._entries[key] = (value, 1)
            while len(self._entries) > self._most:
                self._entries.popitem(last=False)
            return True

    def take(self, key: K) -> V | None:
        """The value offered for `key`, counted as taken; None when none is left."""
        with self._lock:
            held = self._entries.get(key)
            if held is None:
                return None
            value, left = held
            if left <= 1:
                del self._entries[key]
            else:
                self._entries[key] = (value, left - 1)
            return value

    def drop(self, keys: Iterable[K]) -> None:
        """Forget these offers, taken or not."""
        with self._lock:
            for key in keys:
                self._entries.pop(key, None)
