"""Chunking as ingest uses it; the chunkers live in `imprint.chunking` (the writer re-chunks
a store indexed by an older chunker, below this layer)."""

from imprint.chunking import (
    TREE_LANGUAGES,
    Chunk,
    chunk_file,
    chunk_text,
    split_sections,
    structured,
)

__all__ = ["TREE_LANGUAGES", "Chunk", "chunk_file", "chunk_text", "split_sections", "structured"]
