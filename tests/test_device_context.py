"""device_context: answers while the model is busy, names the real embedder and model."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import anyio
import pytest
from mcp.client import Client

from imprint.actors.inference import CompleteRequest
from imprint.actors.lifecycle import Runtime
from imprint.config import Config
from imprint.errors import WorkspaceError
from imprint.reads.device import device_row
from imprint.server import build_server
from imprint.store.embedder import Embedder, bundled_model_path
from tests.support.fakes import FakeProvider


def test_device_context_answers_at_once_while_the_model_is_busy(
    tmp_path: Path, embedder: Embedder
) -> None:
    """A prompt holding the inference actor does not hold device_context: it says busy."""
    gate = threading.Event()
    provider = FakeProvider(prompt_gate=gate)
    config = Config()
    config.tagger.provider = "local"
    rt = Runtime(tmp_path / "data", config, embedder=embedder, provider_factory=lambda: provider)
    rt.start()
    try:
        assert rt.inference_state()["provider"] == "not started"
        before = time.time()
        request = CompleteRequest(
            messages=({"role": "user", "content": "hi"},),
            deadline=time.monotonic() + 60,
            purpose="recall.answer",
        )
        future = rt.inference().complete(request)
        assert provider.prompt_started.wait(timeout=30)
        state = rt.inference_state()  # before the fix: pykka.Timeout after 5 s
        since = state["busy_since"]
        assert since is not None and before <= since <= time.time()
        row = device_row(rt)
        assert row["model_busy"].startswith("yes: recall.answer since "), row["model_busy"]
        assert row["model_loaded"] is True and row["inference_provider"] == "local"
        gate.set()
        assert future.get(timeout=30).ok
        assert device_row(rt)["model_busy"] == "no"
    finally:
        gate.set()
        rt.stop()


def test_device_context_names_the_real_embedder(tmp_path: Path, embedder: Embedder) -> None:
    """The embedder's file, precision and dimension, also for an overridden model_path."""
    bundled = Runtime(tmp_path / "d1", Config(), embedder=embedder).start()
    try:
        row = device_row(bundled)
    finally:
        bundled.stop()
    assert row["embedder_file"] == str(bundled_model_path())
    assert row["embedder_precision"] == "int8" and row["embedder_dimension"] == 384
    assert row["embedder"].startswith("all-MiniLM-L6-v2 (int8 ONNX)")

    copy = tmp_path / "models" / "mine.onnx"
    copy.parent.mkdir()
    shutil.copyfile(bundled_model_path(), copy)
    config = Config()
    config.embedding.model_path = str(copy)
    custom = Runtime(tmp_path / "d2", config).start()  # loads its own embedder from the copy
    try:
        row = device_row(custom)
    finally:
        custom.stop()
    assert row["embedder_file"] == str(copy)
    assert row["embedder"].startswith("custom ONNX model")
    assert row["embedder_precision"] == "int8" and row["embedder_dimension"] == 384


@pytest.mark.parametrize(
    ("provider", "base_url", "shown"),
    [
        ("ollama", "", "base_url: http://127.0.0.1:11434"),
        ("vllm", "http://127.0.0.1:8000", "base_url: http://127.0.0.1:8000"),
    ],
)
def test_device_context_takes_a_workspace_and_names_a_servers_model(
    tmp_path: Path, embedder: Embedder, provider: str, base_url: str, shown: str
) -> None:
    """device_context takes workspace like every tool; a server's model is named, no file."""
    config = Config()
    config.tagger.provider = provider  # type: ignore[assignment]
    config.tagger.base_url = base_url
    config.tagger.model = "qwen3:4b"
    config.tagger.local.model_path = "/somewhere/local.gguf"  # not what ollama/vllm run
    rt = Runtime(tmp_path / "data", config, embedder=embedder).start()
    try:
        rt.workspace("alpha", create=True)
        server = build_server(rt, tmp_path)

        async def go() -> tuple[list[str], str, str]:
            async with Client(server) as client:
                tools = {t.name: t for t in (await client.list_tools()).tools}
                params = list(tools["device_context"].input_schema["properties"])
                ok = await client.call_tool("device_context", {"workspace": "alpha"})
                bad = await client.call_tool("device_context", {"workspace": "nope"})
                assert not ok.is_error and bad.is_error
                return params, ok.content[0].text, bad.content[0].text  # type: ignore[union-attr]

        params, text, error = anyio.run(go)
        assert params == ["workspace"]
        assert "workspace: alpha" in text.splitlines()
        assert "model: qwen3:4b" in text.splitlines() and shown in text.splitlines()
        assert "model_file" not in text and "local.gguf" not in text
        assert "inference_local: True" in text
        assert error.startswith("workspace: 'nope' does not exist") and "\n" not in error
        with pytest.raises(WorkspaceError):
            device_row(rt, "nope")
    finally:
        rt.stop()
