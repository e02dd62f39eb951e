"""Each client's transcript format, by name: Claude Code's (`imprint.capture.transcript`),
Codex's (`imprint.capture.codex`) and Gemini CLI's (`imprint.capture.gemini`). The formats
import the transcript's types; only this module names all three."""

from __future__ import annotations

from pathlib import Path

from imprint.capture.codex import CodexReader
from imprint.capture.gemini import GeminiReader
from imprint.capture.transcript import Batch, ClaudeCodeReader, LineReader, read_lines

__all__ = ["read_new", "reader_for"]


def reader_for(client: str) -> LineReader:
    """A fresh reader of `client`'s format; Claude Code's for any other name."""
    if client == "codex":
        return CodexReader()
    if client == "gemini":
        return GeminiReader()
    return ClaudeCodeReader()


def read_new(path: Path, offset: int, client: str = "claude-code") -> Batch:
    """The turns of `path`'s complete lines from `offset` on, read as `client`'s format
    (`imprint.capture.transcript.read_lines`)."""
    return read_lines(path, offset, reader_for(client))
