"""LLM tagging through the InferenceActor, and its fallback to the rules."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from imprint.actors.lifecycle import Runtime
from imprint.config import Config
from imprint.reads.device import device_row
from imprint.reads.memory import GetMemoryArgs, memory_row
from imprint.store.embedder import Embedder
from imprint.store.records import Record
from imprint.writes.files import ingest_path
from imprint.writes.gateway import Writes
from imprint.writes.memories import store_memory
from tests.conftest import TOPICS, write_tree
from tests.support.fakes import FakeProvider

GOOD = json.dumps({"type": "decision", "domains": ["Concurrency"], "topics": ["actors", "locks"]})


def runtime_with(
    tmp_path: Path, embedder: Embedder, provider: FakeProvider, **tagger: object
) -> Runtime:
    config = Config()
    config.tagger.llm = True
    config.tagger.provider = "local"
    for key, value in tagger.items():
        setattr(config.tagger, key, value)
    return Runtime(
        tmp_path / "data", config, embedder=embedder, provider_factory=lambda: provider
    ).start()


@pytest.fixture
def released() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


def _stored(writes: Writes, content: str, **kwargs: Any) -> Record:
    """Store a memory and read its record back, as get_memory would."""
    rid = store_memory(writes, content, **kwargs)
    return memory_row(writes.reads, writes.reads.open(""), GetMemoryArgs(id=rid)).record


def test_store_takes_the_models_tags_and_records_it(tmp_path: Path, embedder: Embedder) -> None:
    """With tagger.llm on, a memory gets the model's type, domains and topics."""
    provider = FakeProvider(tokens=[GOOD[:10], GOOD[10:]])
    rt = runtime_with(tmp_path, embedder, provider)
    try:
        writes = Writes(rt)
        record = _stored(writes, "We serialize writes through one actor per workspace.")
        assert (record.type, record.tagged_by) == ("decision", "model")
        assert record.domains == ("concurrency",) and record.topics == ("actors", "locks")
        assert provider.calls[0]["schema"]["required"] == ["type", "domains", "topics"]
        # What the caller says wins over the model.
        record = _stored(writes, "Tabs, not spaces.", type="preference", topics=["style"])
        assert (record.type, record.topics, record.tagged_by) == ("preference", ("style",), "model")
    finally:
        rt.stop()


@pytest.mark.parametrize(
    "tokens", [["not json"], ['{"type": "poem", "domains": [], "topics": []}']]
)
def test_bad_model_output_falls_back_to_rules(
    tmp_path: Path, embedder: Embedder, tokens: list[str]
) -> None:
    """Output that is not JSON, or breaks the schema, leaves the rule-based tags."""
    rt = runtime_with(tmp_path, embedder, FakeProvider(tokens=tokens))
    try:
        record = _stored(Writes(rt), "A note about retries.")
        assert (record.type, record.tagged_by) == ("note", "rules")
    finally:
        rt.stop()


def test_a_slow_model_is_given_up_at_tagger_timeout(
    tmp_path: Path, embedder: Embedder, released: threading.Event
) -> None:
    """A model that does not answer within tagger.timeout_sec: the rules tag, the store lands."""
    rt = runtime_with(tmp_path, embedder, FakeProvider(prompt_gate=released), timeout_sec=0.2)
    try:
        record = _stored(Writes(rt), "Slow model, quick store.")
        assert record.tagged_by == "rules"
    finally:
        released.set()
        rt.stop()


def test_ingest_tags_each_file_once(tmp_path: Path, embedder: Embedder) -> None:
    """Ingest asks the model once per file and marks its chunks as model-tagged."""
    provider = FakeProvider(tokens=[GOOD])
    rt = runtime_with(tmp_path, embedder, provider)
    try:
        report = ingest_path(rt, write_tree(tmp_path / "p", TOPICS), project="p")
        assert len(provider.calls) == report.files == 5
        listing = rt.workspace("").reader()
        try:
            tagged = {r.tagged_by for r in listing.fetch(listing.ids()).values()}
        finally:
            listing.close()
        assert tagged == {"model"}
    finally:
        rt.stop()


def test_device_context_reports_provider_locality_and_load_state(
    tmp_path: Path, embedder: Embedder
) -> None:
    """device_context says whether inference is local, and whether the model is loaded."""
    provider = FakeProvider(tokens=[GOOD])
    rt = runtime_with(tmp_path, embedder, provider)
    try:
        writes = Writes(rt)
        before = device_row(rt)
        assert before["inference_local"] is True and before["model_loaded"] is False
        store_memory(writes, "Load the model now.")
        assert device_row(rt)["model_loaded"] is True
    finally:
        rt.stop()
    config = Config()
    config.tagger.provider = "vllm"
    config.tagger.base_url = "http://192.168.1.9:8000"
    remote = Runtime(tmp_path / "d2", config, embedder=embedder).start()
    try:
        assert device_row(remote)["inference_local"] is False
    finally:
        remote.stop()
