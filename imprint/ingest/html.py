"""HTML to text with bounds: list and quote nesting, output size and time.

html2text indents each list item by its depth, so `<ul><li>x` repeated N times made O(N^2)
text (10 KB of HTML became 1.6 MB, 100 KB ran 40 s). Tags nested deeper than `MAX_DEPTH`
are dropped (their text stays, at the deepest indentation), the output stops at `max_chars`
and the conversion at its deadline; either of the last two raises `HtmlTooLarge`.
"""

from __future__ import annotations

import time
from typing import Any

import html2text

from imprint.errors import InputError

__all__ = ["MAX_DEPTH", "HtmlTooLarge", "html_to_text"]

MAX_DEPTH = 16
_NESTING = frozenset({"ul", "ol", "dl", "blockquote"})


class HtmlTooLarge(InputError):
    """The converted text would pass its size cap, or the conversion its deadline."""


class _BoundedHTML2Text(html2text.HTML2Text):
    def __init__(self, max_chars: int, deadline: float) -> None:
        super().__init__()
        self.ignore_images = True
        self.body_width = 0
        self._max_chars = max_chars
        self._deadline = deadline
        self._written = 0
        self._depth = 0
        self._dropped = 0
        self.tag_callback = self._nesting  # type: ignore[assignment]

    def _nesting(self, _parser: Any, tag: str, _attrs: Any, start: bool) -> bool:
        """True drops the tag. Closing tags close the innermost first, so the dropped ones
        (the deepest) are the first to close."""
        if time.monotonic() > self._deadline:
            raise HtmlTooLarge("html: conversion passed its time limit")
        if tag not in _NESTING:
            return False
        if start:
            if self._depth >= MAX_DEPTH:
                self._dropped += 1
                return True
            self._depth += 1
            return False
        if self._dropped:
            self._dropped -= 1
            return True
        self._depth = max(0, self._depth - 1)
        return False

    def outtextf(self, s: str) -> None:
        self._written += len(s)
        if self._written > self._max_chars:
            raise HtmlTooLarge(f"html: the text is over {self._max_chars} characters")
        super().outtextf(s)

    def handle_data(self, data: str, entity_char: bool = False) -> None:
        if time.monotonic() > self._deadline:
            raise HtmlTooLarge("html: conversion passed its time limit")
        super().handle_data(data, entity_char)


def html_to_text(html: str, *, max_chars: int, deadline: float) -> str:
    """Markdown-ish text of a page; `HtmlTooLarge` past `max_chars` or `deadline`."""
    return _BoundedHTML2Text(max_chars, deadline).handle(html)
