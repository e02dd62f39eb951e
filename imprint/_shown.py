"""Text made safe to show on one line of a terminal or a tool's answer.

The one place that decides which characters are shown as escapes: headers of search and
recall blocks, file names in progress lines, values in the console log. Below every layer
(standard library only), so the logs can use it as well as the tools.
"""

from __future__ import annotations

__all__ = ["shown"]


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
