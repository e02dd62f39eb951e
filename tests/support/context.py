"""Helpers shared by tests (moved unchanged from the test module of the same name)."""

from __future__ import annotations

from imprint.config import Config


def _small_chunks() -> Config:
    config = Config()
    config.ingest.chunk_chars = 300
    config.ingest.chunk_overlap = 0
    return config
