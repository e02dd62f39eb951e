"""What a chunk is about beyond its own words: its source's path and the headings above it.

A chunk of `docs/handlers/sampling-and-roots.md` that sits under "Sampling > Model
preferences" is indexed (embedded and in BM25) with one line before its text:

    docs > handlers > sampling and roots | Sampling > Model preferences

so a question that names the topic finds a chunk that only says "it". A code chunk's line
carries its symbol path instead of headings, and that path's words (`_client.py`'s
`BaseClient._redirect_headers` adds "base client redirect headers"), so `ActorRef.tell`,
`actor_ref tell` and "tell on ActorRef" all find it. The line is stored in
`Record.context`, never shown: results, budgets and `content_sha` see the content alone.

`TEXT_FORMAT` numbers what gets indexed. A workspace records the format its index was built
with; when it is older, the writer re-indexes it in the background (`Writer.reindex_step`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from imprint.store.text import identifier_parts

__all__ = [
    "TEXT_FORMAT",
    "chunk_contexts",
    "embedded_context",
    "heading_trails",
    "source_label",
    "symbol_words",
]

# 1: the content alone; 2: the context line, then the content; 3: code chunked by its
# structure (tree-sitter), each chunk's symbol path in its context line; 4: a later piece of
# a split definition carries the definition's signature (`Record.head`, shown, not indexed);
# 5: a code chunk's symbol words are in the lexical index only, not embedded
# (`embedded_context`); 6: a signature holds the definition's decorators and not a comment
# or blank line opening its body, and a Go type is headed by its `type X struct {` line (a
# store at 5 re-chunks the code files whose heads differ; their text and ids stay).
TEXT_FORMAT = 6

_MD_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_RST_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+<>:.])\1{2,}\s*$")
_MARKUP = re.compile(r"`+|\*\*|\[([^\]]*)\]\([^)]*\)")
_IDENT = re.compile(r"\w+")
MAX_CONTEXT_CHARS = 300


def source_label(source: str) -> str:
    """A source path as words: `docs/run/asgi.md` -> `docs > run > asgi`."""
    path = source.split("://", 1)[-1].strip("/")
    if "." in path.rsplit("/", 1)[-1]:
        path = path.rsplit(".", 1)[0]
    parts = [re.sub(r"[-_]+", " ", p).strip() for p in path.split("/")]
    return " > ".join(p for p in parts if p)


def _clean(title: str) -> str:
    return _MARKUP.sub(lambda m: m.group(1) or "", title).strip()


def heading_trails(chunks: Sequence[str], lang: str) -> list[str]:
    """For each chunk of one file, in order, the trail of headings it sits under.

    The trail is taken at the chunk's first heading (a chunk that opens a section is about
    that section), else at the chunk's start. Markdown (`#` headings outside code fences) and
    reST (underlined titles, levels in the order the underline characters first appear);
    other kinds have no headings.
    """
    if lang not in ("markdown", "rst"):
        return ["" for _ in chunks]
    stack: list[tuple[int, str]] = []
    rst_levels: list[str] = []
    out: list[str] = []
    for chunk in chunks:
        at_start = [title for _, title in stack]
        first: list[str] | None = None
        lines = chunk.splitlines()
        fence = ""
        for i, line in enumerate(lines):
            level, title = 0, ""
            if lang == "markdown":
                opened = _FENCE.match(line)
                if opened:
                    mark = opened.group(1)
                    fence = "" if fence and mark[0] == fence[0] else (fence or mark)
                    continue
                found = None if fence else _MD_HEADING.match(line)
                if found:
                    level, title = len(found.group(1)), found.group(2)
            else:
                nxt = lines[i + 1] if i + 1 < len(lines) else ""
                under = _RST_UNDERLINE.match(nxt)
                if line.strip() and under and len(nxt.rstrip()) >= len(line.rstrip()):
                    if _RST_UNDERLINE.match(line):
                        continue  # an overline, not a title
                    char = under.group(1)
                    if char not in rst_levels:
                        rst_levels.append(char)
                    level, title = rst_levels.index(char) + 1, line
            title = _clean(title)
            if not level or not title:
                continue
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            if first is None:
                first = [t for _, t in stack]
        out.append(" > ".join(first if first is not None else at_start))
    return out


def symbol_words(symbol: str) -> str:
    """A symbol path's identifiers as lower-case words, where they differ from the path's
    own tokens: `BaseClient._redirect_headers` -> `base client redirect headers`."""
    tokens = _IDENT.findall(symbol)
    parts = [p.lower() for t in tokens for p in identifier_parts(t)]
    return "" if parts == [t.lower() for t in tokens] else " ".join(parts)


def embedded_context(context: str, symbol: str) -> str:
    """The part of a chunk's context line that is embedded: all of it but a code chunk's
    symbol words (its last field, perhaps cut at `MAX_CONTEXT_CHARS`). The words spell
    identifiers out for the lexical index (`actor_ref tell`); the embedder's tokenizer
    splits them itself, and repeating them in the vector weighs a chunk's names over its
    body: a chunk packing `on_validate_error` with two other methods came first for "turn a
    validation error into a nested object" (code search, tree arm: behaviour top-1 8 -> 9
    of 12, task 10 -> 11 of 13, identifier 12 of 12 either way; held out, task R@5 3 -> 2
    and visible 1 -> 2 of 4). A prose chunk has no symbol: its whole line is embedded."""
    words = symbol_words(symbol)
    if not words:
        return context
    head, sep, last = context.rpartition(" | ")
    return head if sep and last and words.startswith(last) else context


def chunk_contexts(
    source: str, chunks: Sequence[str], lang: str, symbols: Sequence[str] = ()
) -> list[str]:
    """The context line of each chunk of one source (see the module's docstring); `symbols`,
    where given, has each chunk's symbol path."""
    label = source_label(source)
    out = []
    trails = heading_trails(chunks, lang)
    for i, trail in enumerate(trails):
        symbol = symbols[i] if i < len(symbols) else ""
        parts = (label, trail, symbol, symbol_words(symbol)) if symbol else (label, trail)
        line = " | ".join(part for part in parts if part)
        out.append(line[:MAX_CONTEXT_CHARS])
    return out
