"""Chunking: about `target` characters with overlap, cut at headings and top-level definitions.

Markdown and reST split at headings, code at top-level definitions; a section longer than
the target is cut at paragraph, then line, then word boundaries. Consecutive small
sections are packed together up to the target. Each chunk after the first of a long
section repeats the last `overlap` characters of the one before.
"""

from __future__ import annotations

import re

__all__ = ["chunk_text", "cut", "split_sections", "tail"]

_MD_HEADING = re.compile(r"^#{1,6}\s")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_RST_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+<>:.])\1{2,}\s*$")
_CODE_DEF = re.compile(
    r"^(def |async def |class |function |export |func |fn |pub fn |pub struct |struct |impl |"
    r"interface |type |public |private |protected |module |package |const [A-Za-z_]+ ?= ?\()"
)
_DECORATOR = re.compile(r"^@\w")


def _split_markdown(lines: list[str]) -> list[list[str]]:
    sections: list[list[str]] = [[]]
    fence = ""  # the opening fence while inside a code block
    for line in lines:
        found = _FENCE.match(line)
        if found:
            mark = found.group(1)
            if not fence:
                fence = mark
            elif mark[0] == fence[0] and len(mark) >= len(fence) and not line.strip()[len(mark) :]:
                # CommonMark: only a bare fence of the same character, as long or longer, closes.
                fence = ""
        elif not fence and _MD_HEADING.match(line) and sections[-1]:
            sections.append([])
        sections[-1].append(line)
    return sections


def _split_rst(lines: list[str]) -> list[list[str]]:
    sections: list[list[str]] = [[]]
    for i, line in enumerate(lines):
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        is_title = (
            line.strip() and _RST_UNDERLINE.match(nxt) and len(nxt.rstrip()) >= len(line.rstrip())
        )
        if is_title and sections[-1]:
            # An overline belongs with the title it sits above.
            carry = [sections[-1].pop()] if _RST_UNDERLINE.match(sections[-1][-1]) else []
            sections.append(carry)
        sections[-1].append(line)
    return sections


def _split_code(lines: list[str]) -> list[list[str]]:
    sections: list[list[str]] = [[]]
    for line in lines:
        starts_def = bool(_CODE_DEF.match(line) or _DECORATOR.match(line))
        prev = sections[-1][-1] if sections[-1] else ""
        if starts_def and sections[-1] and not _DECORATOR.match(prev):
            sections.append([])
        sections[-1].append(line)
    return sections


def split_sections(text: str, kind: str) -> list[str]:
    lines = text.splitlines(keepends=True)
    if kind == "markdown":
        parts = _split_markdown(lines)
    elif kind == "rst":
        parts = _split_rst(lines)
    elif kind == "code":
        parts = _split_code(lines)
    else:
        parts = [lines]
    return ["".join(p) for p in parts if "".join(p).strip()]


def cut(text: str, target: int) -> list[str]:
    """Pieces of at most `target` characters, cut at the best boundary available."""
    pieces: list[str] = []
    rest = text
    while len(rest) > target:
        window = rest[:target]
        cut = -1
        for sep in ("\n\n", "\n", ". ", " "):
            at = window.rfind(sep)
            if at >= target // 3:
                cut = at + len(sep)
                break
        if cut <= 0:
            cut = target
        pieces.append(rest[:cut])
        rest = rest[cut:]
    if rest.strip():
        pieces.append(rest)
    return pieces


def tail(text: str, overlap: int) -> str:
    if overlap <= 0:
        return ""
    tail = text[-overlap:]
    space = tail.find(" ")
    return tail[space + 1 :] if 0 <= space < len(tail) // 2 else tail


def chunk_text(text: str, kind: str, target: int = 1200, overlap: int = 150) -> list[str]:
    """Chunks of roughly `target` characters (never over target + overlap)."""
    chunks: list[str] = []
    current = ""
    for section in split_sections(text, kind):
        if len(current) + len(section) <= target:
            current += section
            continue
        if current.strip():
            chunks.append(current)
        current = ""
        if len(section) <= target:
            current = section
            continue
        pieces = cut(section, target)
        for i, piece in enumerate(pieces):
            prefix = tail(pieces[i - 1], overlap) if i else ""
            chunks.append(prefix + piece)
    if current.strip():
        chunks.append(current)
    return [c.strip("\n") for c in chunks if c.strip()]
