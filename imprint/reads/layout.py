"""The budget layout of numbered blocks, the evidence format (DESIGN section 4) that search and
recall share.

Numbered blocks, each a provenance line and an excerpt. Every shown excerpt gets the same
width: the widest that lets the shown blocks fit, at least 300 characters (or the longest
shown content, where all are shorter). Blocks that do not fit are counted on a last line,
never dropped silently. The output never exceeds `max_chars`.

Recall also gives each block a short index line (`source#chunk score`): blocks that do not
fit in full are then listed by those lines, numbered on, as many as fit after the blocks, so
the caller sees where the rest is and can fetch it; the count line stays. With index lines,
the layout keeps every hidden result listed if it can, and shows as many full blocks as that
leaves room for (at least one).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from imprint._shown import clip, one_line, shown
from imprint.store.records import Record
from imprint.types import MemoryId

__all__ = [
    "MIN_EXCERPT",
    "Block",
    "Layout",
    "chunk_place",
    "clamp",
    "clip",
    "day",
    "escape_field",
    "layout_blocks",
    "meta_line",
    "one_line",
    "render_blocks",
    "superseded_note",
]

MIN_EXCERPT = 300


SHOWN_SYMBOL_CHARS = 60


def chunk_place(record: Record) -> str:
    """Where a chunk is: `source#chunk`, then its symbols and lines where known
    (`_actor.py#7 ActorRef.tell L120-168`); packed symbols past 60 characters end in `…`."""
    if not record.source:
        return "(inline)"
    if record.source_type == "memory":
        return record.source  # a memory has no chunks (a session's summary, not its turn 0)
    parts = [f"{record.source}#{record.chunk_index}"]
    if record.symbol:
        shown = record.symbol
        if len(shown) > SHOWN_SYMBOL_CHARS:
            cut = shown.rfind(", ", 0, SHOWN_SYMBOL_CHARS)
            shown = (shown[:cut] if cut > 0 else shown[: SHOWN_SYMBOL_CHARS - 1]) + "…"
        parts.append(shown)
    if record.line_start:
        parts.append(f"L{record.line_start}-{record.line_end}")
    return " ".join(parts)


class Block(BaseModel):
    model_config = ConfigDict(frozen=True)

    meta: str
    content: str
    index: str = ""  # its short line when hidden (recall), e.g. "src.md#3 0.0163"


class Layout(BaseModel):
    """The text, and how many blocks it shows in full and lists by index line after them."""

    model_config = ConfigDict(frozen=True)

    text: str
    shown: int
    listed: int = 0


def clamp(value: int, low: int, high: int) -> int:
    return max(low, min(high, int(value)))


def escape_field(text: object) -> str:
    """A name or header that shows what it holds: every character that is not printable
    (controls such as newline, tab and escape; format characters such as the bidi overrides
    and isolates, zero-width spaces and joiners, the byte-order mark; line and paragraph
    separators; lone surrogates) shown as a backslash escape (`\\u202e`). So stored text
    such as a file name can neither start a forged evidence block, nor reorder what a reader
    sees, nor send a terminal an escape sequence. Idempotent: escaped text is printable.
    Only what is shown changes: stored source names stay as they are."""
    return shown(text)


def day(ts: float) -> str:
    """A record's or fact's date as its block shows it: YYYY-MM-DD, UTC."""
    return time.strftime("%Y-%m-%d", time.gmtime(ts))


def meta_line(
    record: Record,
    score: float | None = None,
    superseded_by: MemoryId | None = None,
    also: Sequence[int] = (),
) -> str:
    """The provenance of one block: id | project | source#chunk [symbol] [lines]
    [+#other,#chunks] | type [| date of a memory] [| superseded by ID] [| score]."""
    where = chunk_place(record)
    if also:
        where += " +" + ",".join(f"#{c}" for c in also)
    parts = [escape_field(p) for p in (record.id, record.project or "-", where, record.type)]
    if record.source_type == "memory":
        parts.append(day(record.created_at))
    if superseded_by:
        parts.append(f"superseded by {escape_field(superseded_by)}")
    if score is not None:
        parts.append(f"{score:.4f}")
    return " | ".join(parts)


def superseded_note(superseded: int) -> str:
    """What the count line says of superseded memories left out; empty for none."""
    if superseded <= 0:
        return ""
    noun = "result" if superseded == 1 else "results"
    return f"{superseded} superseded {noun} hidden; include_superseded=true shows them"


def _footer(hidden: int, max_chars: int, hint: str, superseded: int = 0) -> str:
    note = superseded_note(superseded)
    if hidden <= 0:
        return f"({note})" if note else ""
    noun = "result" if hidden == 1 else "results"
    also = f"; {note}" if note else ""
    return f"({hidden} more {noun} hidden by max_chars={max_chars}; {hint}{also})"


def render_blocks(
    prelude: Sequence[str],
    blocks: Sequence[Block],
    max_chars: int,
    *,
    hint: str,
    extra_hidden: int = 0,
    superseded: int = 0,
) -> str:
    """Lay out as many blocks as fit at a common excerpt width; count the rest (and the
    superseded memories left out, on the same line)."""
    return layout_blocks(
        prelude, blocks, max_chars, hint=hint, extra_hidden=extra_hidden, superseded=superseded
    ).text


def _fit(
    head: str,
    metas: Sequence[str],
    contents: Sequence[str],
    listed: Sequence[str],
    footer: str,
    max_chars: int,
) -> str | None:
    """The text with every block at one width of at least 300 (or the longest), or None."""
    shown = len(metas)
    lines = "\n".join(listed)
    # text = head "\n\n" body ["\n\n" index] ["\n\n" footer]; body = "meta\nexcerpt" blocks
    fixed = (len(head) + 2 if head else 0) + sum(len(m) + 1 for m in metas)
    fixed += 2 * (shown - 1) + (len(lines) + 2 if lines else 0)
    fixed += len(footer) + 2 if footer else 0
    room = (max_chars - fixed) // shown
    longest = max(len(c) for c in contents[:shown])
    if room < min(MIN_EXCERPT, longest):
        return None
    width = min(room, longest)
    body = "\n\n".join(f"{metas[i]}\n{clip(contents[i], width)}" for i in range(shown))
    return "\n\n".join(p for p in (head, body, lines, footer) if p)


def layout_blocks(
    prelude: Sequence[str],
    blocks: Sequence[Block],
    max_chars: int,
    *,
    hint: str,
    extra_hidden: int = 0,
    superseded: int = 0,
) -> Layout:
    """`render_blocks`, saying how many blocks it shows; with index lines (every block has
    one), the hidden blocks are listed too."""
    head = "\n".join(prelude)
    contents = [one_line(b.content) for b in blocks]
    # Escaped here too, whoever built the block: a header holds names (file names, titles).
    metas = [f"[{i + 1}] {escape_field(b.meta)}" for i, b in enumerate(blocks)]
    n = len(blocks)
    if n and all(b.index for b in blocks):
        index = [f"[{i + 1}] {escape_field(b.index)}" for i, b in enumerate(blocks)]
        # Every hidden block listed, with as many full blocks as that leaves room for.
        for shown in range(n, 0, -1):
            footer = _footer(n - shown + extra_hidden, max_chars, hint, superseded)
            text = _fit(head, metas[:shown], contents, index[shown:], footer, max_chars)
            if text is not None:
                return Layout(text=text, shown=shown, listed=n - shown)
        # Not all listable: one block (if it fits) and as many index lines as fit, by rank.
        for shown in (1, 0):
            footer = _footer(n - shown + extra_hidden, max_chars, hint, superseded)
            if shown and _fit(head, metas[:1], contents, [], footer, max_chars) is None:
                continue
            listed = n - shown
            while listed > 0:
                lines = index[shown : shown + listed]
                if shown:
                    text = _fit(head, metas[:1], contents, lines, footer, max_chars)
                else:
                    text = "\n\n".join(p for p in (head, "\n".join(lines), footer) if p)
                    text = text if len(text) <= max_chars else None
                if text is not None:
                    return Layout(text=text, shown=shown, listed=listed)
                listed -= 1
            if shown:
                text = _fit(head, metas[:1], contents, [], footer, max_chars)
                assert text is not None
                return Layout(text=text, shown=1)
        footer = _footer(n + extra_hidden, max_chars, hint, superseded)
        return Layout(text="\n\n".join(p for p in (head, footer) if p)[:max_chars], shown=0)
    for shown in range(n, 0, -1):
        footer = _footer(n - shown + extra_hidden, max_chars, hint, superseded)
        text = _fit(head, metas[:shown], contents, [], footer, max_chars)
        if text is not None:
            return Layout(text=text, shown=shown)
    footer = _footer(n + extra_hidden, max_chars, hint, superseded)
    return Layout(text="\n\n".join(p for p in (head, footer) if p)[:max_chars], shown=0)
