"""Text made safe to show on one line of a terminal or a tool's answer.

The one place that decides which characters are shown as escapes: headers of search and
recall blocks, file names in progress lines, values in the console log. Below every layer
(standard library only), so the logs can use it as well as the tools.
"""

from __future__ import annotations

import re

__all__ = ["clip", "counted", "one_line", "shown"]

_SPACE = re.compile(r"\s+")


def counted(n: int, noun: str) -> str:
    """`1 chunk`, `2 chunks`: a count and its noun (a regular plural, with an s)."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _visible(char: str, keep: str) -> str:
    if char.isprintable() or char in keep:
        return char
    return char.encode("unicode_escape").decode("ascii")


def shown(text: object, keep: str = "") -> str:
    """`text` with every character that is not printable shown as a backslash escape
    (`\\x1b`, `\\u202e`): controls such as newline, tab and escape; format characters such as
    the bidi overrides and isolates, zero-width spaces and joiners, the byte-order mark;
    line and paragraph separators; other spaces than the plain one; lone surrogates.
    Characters in `keep` (say "\\n") stay. Idempotent: what it returns is printable."""
    text = str(text)
    if text.isprintable():  # the common case, at C speed
        return text
    return "".join(_visible(c, keep) for c in text)


def one_line(text: str) -> str:
    """`text` on one line: every run of white space one space."""
    return _SPACE.sub(" ", text).strip()


def clip(text: str, width: int) -> str:
    """At most `width` characters; a cut is marked with an ellipsis inside the width."""
    if len(text) <= width:
        return text
    if width <= 1:
        return text[:width]
    return text[: width - 1] + "…"
