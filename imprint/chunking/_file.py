"""A file's chunks: tree-sitter's for the languages it parses here, the line-pattern
chunker's (without symbols or lines) for the rest."""

from __future__ import annotations

from imprint.chunking._lines import chunk_text, cut
from imprint.chunking._tree import TREE_LANGUAGES, Chunk, tree_chunks

__all__ = ["chunk_file", "structured"]


def structured(lang: str) -> bool:
    """Whether files in `lang` are chunked by their structure (and carry symbols)."""
    return lang in TREE_LANGUAGES


def chunk_file(
    text: str, lang: str, source: str, kind: str, target: int = 1200, overlap: int = 150
) -> list[Chunk]:
    """The chunks of one file; `kind` (markdown, rst, code, text) picks the line chunker."""
    if structured(lang):
        found = tree_chunks(text, lang, source, target, overlap, cut)
        if found is not None:
            return found
    return [Chunk(piece) for piece in chunk_text(text, kind, target, overlap)]
