"""The budgeted evidence format (DESIGN section 4), shared by search and recall.

Numbered blocks, each a provenance line and an excerpt. Every shown excerpt gets the same
width: the widest that lets the shown blocks fit, at least 300 characters (or the longest
shown content, where all are shorter). Blocks that do not fit are counted on a last line,
never dropped silently. The output never exceeds `max_chars`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

__all__ = ["MIN_EXCERPT", "Block", "clamp", "clip", "escape_field", "one_line", "render_blocks"]

MIN_EXCERPT = 300
_SPACE = re.compile(r"\s+")
# C0 and C1 controls, DEL, and the Unicode line and paragraph separators.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


class Block(BaseModel):
    model_config = ConfigDict(frozen=True)

    meta: str
    content: str


def clamp(value: int, low: int, high: int) -> int:
    return max(low, min(high, int(value)))


def one_line(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def escape_field(text: object) -> str:
    """A header field that cannot break its line: every control character (newline, tab,
    escape, ...) shown as a backslash escape, so stored text such as a file name cannot start
    a forged evidence block. Idempotent: escaped text holds no control characters."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), str(text))


def clip(text: str, width: int) -> str:
    """At most `width` characters; a cut is marked with an ellipsis inside the width."""
    if len(text) <= width:
        return text
    if width <= 1:
        return text[:width]
    return text[: width - 1] + "…"


def _footer(hidden: int, max_chars: int, hint: str) -> str:
    if hidden <= 0:
        return ""
    noun = "result" if hidden == 1 else "results"
    return f"({hidden} more {noun} hidden by max_chars={max_chars}; {hint})"


def render_blocks(
    prelude: Sequence[str],
    blocks: Sequence[Block],
    max_chars: int,
    *,
    hint: str,
    extra_hidden: int = 0,
) -> str:
    """Lay out as many blocks as fit at a common excerpt width; count the rest."""
    head = "\n".join(prelude)
    contents = [one_line(b.content) for b in blocks]
    for shown in range(len(blocks), 0, -1):
        footer = _footer(len(blocks) - shown + extra_hidden, max_chars, hint)
        metas = [f"[{i + 1}] {blocks[i].meta}" for i in range(shown)]
        # text = head "\n\n" body ["\n\n" footer]; body = blocks "meta\nexcerpt" joined by "\n\n"
        fixed = (len(head) + 2 if head else 0) + sum(len(m) + 1 for m in metas)
        fixed += 2 * (shown - 1) + (len(footer) + 2 if footer else 0)
        room = (max_chars - fixed) // shown
        longest = max(len(c) for c in contents[:shown])
        if room >= min(MIN_EXCERPT, longest):
            width = min(room, longest)
            body = "\n\n".join(f"{metas[i]}\n{clip(contents[i], width)}" for i in range(shown))
            return "\n\n".join(p for p in (head, body, footer) if p)
    footer = _footer(len(blocks) + extra_hidden, max_chars, hint)
    return "\n\n".join(p for p in (head, footer) if p)[:max_chars]
