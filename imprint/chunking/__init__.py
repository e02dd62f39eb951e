"""Chunking: files into the pieces that are indexed and shown (see `_lines` and `_tree`)."""

from imprint.chunking._file import chunk_file, structured
from imprint.chunking._lines import chunk_text, split_sections
from imprint.chunking._tree import TREE_LANGUAGES, Chunk

__all__ = ["TREE_LANGUAGES", "Chunk", "chunk_file", "chunk_text", "split_sections", "structured"]
