"""The local model refining a captured session's summary: only where the model path is on
(`recall.llm` with a provider on this computer), within its deadline, redacted; the
rule-based summary otherwise, and whenever the model is late, fails or leaves the schema."""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from imprint.actors.lifecycle import Runtime
from imprint.capture.session import capture_event
from imprint.config import Config
from imprint.store.embedder import Embedder
from imprint.store.records import SESSION_SUMMARY_KIND
from imprint.writes import Writes
from tests.support.capture_support import Transcript, session_records
from tests.support.fakes import FakeProvider

GIST = "Set up the sightings store in SQLite and fixed the missing birds.toml."


def _runtime(tmp_path: Path, embedder: Embedder, fake: FakeProvider, **cfg: Any) -> Runtime:
    config = Config()
    config.recall.llm = cfg.get("llm", True)
    config.tagger.provider = cfg.get("provider", "local")
    config.recall.llm_timeout_sec = cfg.get("timeout", 30.0)
    return Runtime(
        tmp_path / "data", config, embedder=embedder, provider_factory=lambda: fake
    ).start()


def _summary(tmp_path: Path, rt: Runtime, secret: str = "") -> str:
    """Capture a two-turn session (a decision, a failed command, its fix) and return the
    stored summary's content."""
    cwd = tmp_path / "birdwatch"
    cwd.mkdir(exist_ok=True)
    t = Transcript(tmp_path / "claude" / "s-1.jsonl", "s-1", cwd)
    t.turn(f"set up the store {secret}", "I decided to keep the sightings in SQLite.",
           command="cat birds.toml", output="No such file or directory", error=True)  # fmt: skip
    t.turn("go on", "Writing it.", command="touch birds.toml", output="")
    capture_event(Writes(rt), rt.data_dir, {**t.event(), "client": "claude-code"})
    (summary,) = [
        r for r in session_records(rt, "birdwatch", "session:s-1") if r.kind == SESSION_SUMMARY_KIND
    ]
    return summary.content


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


def test_the_model_adds_one_line_under_the_rule_based_summary(
    tmp_path: Path, embedder: Embedder
) -> None:
    """With the model path on, the summary's second line is the model's sentence and the
    rule-based lines follow unchanged; the model was asked once, with the redacted notes and
    a schema, under the capture's deadline."""
    provider = FakeProvider(responses=[[json.dumps({"gist": GIST})]])
    rt = _runtime(tmp_path, embedder, provider)
    try:
        lines = _summary(tmp_path, rt).splitlines()
    finally:
        rt.stop()
    assert lines[0].startswith("Session in project birdwatch")
    assert lines[1] == f"In short: {GIST}"
    assert "Decisions stated:" in lines[2:] and "Errors and what followed:" in lines[2:]
    (call,) = provider.calls
    assert call["schema"]["required"] == ["gist"]
    assert "cat birds.toml" in json.dumps(call["messages"])


def test_a_secret_the_model_repeats_is_redacted_and_it_never_saw_it(
    tmp_path: Path, embedder: Embedder
) -> None:
    """The model reads the redacted notes only, and a key in its own answer is redacted
    before the summary is written."""
    key = "sk-ant-api03-" + secrets.token_urlsafe(70).replace("-", "x").replace("_", "y")[:93]
    provider = FakeProvider(responses=[[json.dumps({"gist": f"Used the key {key} to set up."})]])
    rt = _runtime(tmp_path, embedder, provider)
    try:
        summary = _summary(tmp_path, rt, secret=f"ANTHROPIC_API_KEY={key}")
    finally:
        rt.stop()
    assert key[:20] not in json.dumps(provider.calls[0]["messages"])
    assert key[:20] not in summary and "In short: Used the key [redacted:" in summary


@pytest.mark.parametrize(
    ("llm", "provider"), [(False, "local"), (True, "openai"), (True, "anthropic")]
)
def test_without_the_model_path_no_model_is_asked(
    tmp_path: Path, embedder: Embedder, llm: bool, provider: str
) -> None:
    """With recall.llm off, or a provider that runs elsewhere, no model sees the session:
    the summary is the rule-based one."""
    fake = FakeProvider(responses=[[json.dumps({"gist": GIST})]])
    rt = _runtime(tmp_path, embedder, fake, llm=llm, provider=provider)
    try:
        summary = _summary(tmp_path, rt)
    finally:
        rt.stop()
    assert fake.calls == []
    assert "In short:" not in summary and "Decisions stated:" in summary


@pytest.mark.parametrize("answer", ["not json at all", json.dumps({"summary": GIST})])
def test_an_answer_out_of_schema_leaves_the_rule_based_summary(
    tmp_path: Path, embedder: Embedder, answer: str
) -> None:
    """A model answer that is not the schema's JSON is dropped: the rule-based summary is
    written as it would be without a model."""
    provider = FakeProvider(responses=[[answer]])
    rt = _runtime(tmp_path, embedder, provider)
    try:
        summary = _summary(tmp_path, rt)
    finally:
        rt.stop()
    assert len(provider.calls) == 1
    assert "In short:" not in summary and summary.splitlines()[1] == "Decisions stated:"


def test_a_model_past_its_deadline_leaves_the_rule_based_summary(
    tmp_path: Path, embedder: Embedder, gate: threading.Event
) -> None:
    """A model still reading its prompt when the deadline (recall.llm_timeout_sec, here
    below the capture's own) passes: the capture writes the rule-based summary and does not
    wait for it."""
    provider = FakeProvider(responses=[[json.dumps({"gist": GIST})]], prompt_gate=gate)
    rt = _runtime(tmp_path, embedder, provider, timeout=0.3)
    try:
        summary = _summary(tmp_path, rt)
        # Written while the model still holds its prompt: the capture did not wait for it.
        assert provider.prompt_started.is_set() and provider.closed == []
        assert "In short:" not in summary and "Decisions stated:" in summary
    finally:
        gate.set()
        rt.stop()
