"""Helpers shared by tests (moved unchanged from the test module of the same name)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from imprint.actors.lifecycle import Runtime
from imprint.config import Config
from imprint.store.embedder import Embedder
from imprint.writes.files import ingest_path
from tests.conftest import TOPICS, write_tree


def make_runtime(tmp_path: Path, embedder: Embedder, factory: Any, **recall: Any) -> Runtime:
    config = Config()
    config.recall.llm = True
    config.tagger.provider = "local"
    for key, value in recall.items():
        setattr(config.recall, key, value)
    rt = Runtime(tmp_path / "data", config, embedder=embedder, provider_factory=factory).start()
    ingest_path(rt, write_tree(tmp_path / "p", TOPICS), project="proj")
    return rt
