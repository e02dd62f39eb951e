"""Providers against a loopback server that speaks each API; locality of every kind of host."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from imprint.actors.inference import CompleteRequest, Inference
from imprint.config import TaggerConfig
from imprint.errors import ModelMissingError
from imprint.providers import ProviderError, is_local, is_loopback_host, local, make_provider
from imprint.providers.anthropic import AnthropicProvider
from imprint.providers.gemini import GeminiProvider
from imprint.providers.local import amx_hazard
from imprint.providers.openai_compat import OllamaProvider, OpenAIProvider, VllmProvider

SCHEMA = {"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]}
MESSAGES = [
    {"role": "system", "content": "You tag notes."},
    {"role": "user", "content": "Tag: pykka actors"},
]


class Recorder:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.hang = threading.Event()  # set: requests block until `release`
        self.release = threading.Event()
        self.refuse_json_schema = False  # answer like llama-cpp-python's server does


@pytest.fixture
def server() -> Iterator[tuple[str, Recorder]]:
    recorder = Recorder()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            recorder.requests.append(
                {"path": self.path, "headers": dict(self.headers), "body": body}
            )
            if recorder.hang.is_set():
                recorder.release.wait(timeout=30)
                return
            if self.path == "/api/chat":  # ollama: NDJSON lines
                self._send(
                    "application/x-ndjson",
                    [
                        json.dumps({"message": {"content": p}, "done": False}) + "\n"
                        for p in ('{"topic": ', '"actors"}')
                    ]
                    + [json.dumps({"message": {"content": ""}, "done": True}) + "\n"],
                )
            elif (
                self.path == "/v1/chat/completions"
                and recorder.refuse_json_schema
                and (body.get("response_format") or {}).get("type") == "json_schema"
            ):
                detail = {"error": {"message": "loc ('body', 'response_format', 'type')"}}
                payload = json.dumps(detail).encode()
                self.send_response(500)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            elif self.path == "/v1/chat/completions":
                self._sse(
                    [{"choices": [{"delta": {"content": p}}]} for p in ("pyk", "ka")], done=True
                )
            elif self.path == "/v1/messages":
                self._sse(
                    [
                        {"type": "message_start"},
                        {
                            "type": "content_block_delta",
                            "delta": {"type": "text_delta", "text": "pyk"},
                        },
                        {
                            "type": "content_block_delta",
                            "delta": {"type": "input_json_delta", "partial_json": "ka"},
                        },
                        {"type": "message_stop"},
                    ]
                )
            elif ":streamGenerateContent" in self.path:
                self._sse(
                    [{"candidates": [{"content": {"parts": [{"text": p}]}}]} for p in ("pyk", "ka")]
                )
            else:
                self.send_error(404)

        def _send(self, ctype: str, lines: list[str]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.end_headers()
            for line in lines:
                self.wfile.write(line.encode())
                self.wfile.flush()

        def _sse(self, events: list[dict[str, Any]], done: bool = False) -> None:
            lines = [f"data: {json.dumps(e)}\n\n" for e in events]
            self._send("text/event-stream", lines + (["data: [DONE]\n\n"] if done else []))

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", recorder
    finally:
        recorder.release.set()
        httpd.shutdown()
        httpd.server_close()


def collect(provider: Any, schema: dict[str, Any] | None = SCHEMA, seconds: float = 20) -> str:
    pieces = provider.stream(MESSAGES, deadline=time.monotonic() + seconds, schema=schema)
    return "".join(pieces)


def test_vllm_streams_and_sends_a_json_schema(server: tuple[str, Recorder]) -> None:
    """vllm: OpenAI-compatible SSE; the schema goes as response_format json_schema."""
    url, rec = server
    assert collect(VllmProvider(url, "qwen")) == "pykka"
    body = rec.requests[0]["body"]
    assert rec.requests[0]["path"] == "/v1/chat/completions"
    assert body["stream"] is True and body["model"] == "qwen" and body["messages"] == MESSAGES
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == SCHEMA
    assert body["guided_json"] == SCHEMA


def test_a_server_refusing_json_schema_gets_json_object_with_the_schema(
    server: tuple[str, Recorder],
) -> None:
    """llama-cpp-python's server takes json_object + schema: one retry, then remembered."""
    url, rec = server
    rec.refuse_json_schema = True
    provider = VllmProvider(url, "qwen")
    assert collect(provider) == "pykka" and collect(provider) == "pykka"
    formats = [r["body"]["response_format"] for r in rec.requests]
    assert formats[0]["type"] == "json_schema"
    assert formats[1:] == [{"type": "json_object", "schema": SCHEMA}] * 2
    # That server's default repeat penalty bends greedy output; it is turned off there only.
    penalties = [r["body"].get("repeat_penalty") for r in rec.requests]
    assert penalties == [None, 1.0, 1.0]
    rec.requests.clear()
    with pytest.raises(ProviderError, match=r"^vllm: HTTP 404"):  # other refusals: no retry
        collect(VllmProvider(url + "/nope", "qwen"))
    assert len(rec.requests) == 1


def test_ollama_streams_ndjson_and_sends_format(server: tuple[str, Recorder]) -> None:
    """ollama: /api/chat NDJSON stream; the schema goes in `format`."""
    url, rec = server
    assert collect(OllamaProvider(url, "llama3.2")) == '{"topic": "actors"}'
    body = rec.requests[0]["body"]
    assert rec.requests[0]["path"] == "/api/chat"
    assert body["format"] == SCHEMA and body["stream"] is True
    assert body["options"]["temperature"] == 0


@pytest.mark.parametrize("kind", ["vllm", "ollama"])
def test_the_remaining_time_is_the_http_timeout(server: tuple[str, Recorder], kind: str) -> None:
    """A server that does not answer is given up at the deadline, not later."""
    url, rec = server
    rec.hang.set()
    provider = VllmProvider(url, "m") if kind == "vllm" else OllamaProvider(url, "m")
    started = time.monotonic()
    with pytest.raises(ProviderError, match=r"no answer within 0\.[0-9] s"):
        collect(provider, seconds=0.5)
    assert time.monotonic() - started < 10  # bounded by the deadline, far below any default


def test_a_deadline_already_past_sends_nothing(server: tuple[str, Recorder]) -> None:
    """No request leaves when the deadline has already passed."""
    url, rec = server
    with pytest.raises(ProviderError, match="deadline passed"):
        collect(VllmProvider(url, "m"), seconds=-1)
    assert rec.requests == []


def test_openai_sends_bearer_key_and_strict_schema(
    server: tuple[str, Recorder], monkeypatch: pytest.MonkeyPatch
) -> None:
    """openai: the key from OPENAI_API_KEY as a bearer token, strict json_schema."""
    url, rec = server
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert collect(OpenAIProvider(url, "gpt-x")) == "pykka"
    req = rec.requests[0]
    assert req["headers"]["Authorization"] == "Bearer sk-test"
    assert req["body"]["response_format"]["json_schema"]["strict"] is True


def test_anthropic_sends_what_the_messages_api_expects(
    server: tuple[str, Recorder], monkeypatch: pytest.MonkeyPatch
) -> None:
    """anthropic: x-api-key, version header, system apart, schema as a forced tool."""
    url, rec = server
    monkeypatch.setenv("ANTHROPIC_API_KEY", "ak-test")
    assert collect(AnthropicProvider(url, "claude-x")) == "pykka"
    req = rec.requests[0]
    assert req["path"] == "/v1/messages"
    assert req["headers"]["x-api-key"] == "ak-test"
    assert req["headers"]["anthropic-version"] == "2023-06-01"
    body = req["body"]
    assert body["system"] == "You tag notes."
    assert body["messages"] == [MESSAGES[1]]
    assert body["tools"][0]["input_schema"] == SCHEMA
    assert body["tool_choice"] == {"type": "tool", "name": "answer"}


def test_gemini_sends_what_generate_content_expects(
    server: tuple[str, Recorder], monkeypatch: pytest.MonkeyPatch
) -> None:
    """gemini: streamGenerateContent with alt=sse, x-goog-api-key, JSON schema config."""
    url, rec = server
    monkeypatch.setenv("GEMINI_API_KEY", "gk-test")
    assert collect(GeminiProvider(url, "gemini-x")) == "pykka"
    req = rec.requests[0]
    assert req["path"] == "/v1beta/models/gemini-x:streamGenerateContent?alt=sse"
    assert req["headers"]["x-goog-api-key"] == "gk-test"
    body = req["body"]
    assert body["systemInstruction"] == {"parts": [{"text": "You tag notes."}]}
    assert body["contents"] == [{"role": "user", "parts": [{"text": "Tag: pykka actors"}]}]
    assert body["generationConfig"]["responseJsonSchema"] == SCHEMA


def test_missing_keys_and_models_name_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    """A remote provider without a key, or a local one without a model, says which setting."""
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    for kind in ("openai", "anthropic", "gemini"):
        with pytest.raises(ProviderError, match=r"^tagger.api_key: empty"):
            make_provider(TaggerConfig(provider=kind, model="m"))  # type: ignore[arg-type]
    with pytest.raises(ModelMissingError, match=r"^tagger.local.model_path: '/nope.gguf' is not"):
        make_provider(
            TaggerConfig.model_validate(
                {"provider": "local", "local": {"model_path": "/nope.gguf"}}
            )
        )
    with pytest.raises(ProviderError, match=r"^tagger.model: required"):
        make_provider(TaggerConfig(provider="vllm", base_url="http://127.0.0.1:1"))


@pytest.mark.parametrize(
    ("provider", "base_url", "local"),
    [
        ("local", "", True),
        ("ollama", "http://127.0.0.1:11434", True),
        ("ollama", "http://127.9.8.7:11434", True),
        ("vllm", "http://[::1]:8000", True),
        ("vllm", "http://[0:0:0:0:0:0:0:1]:8000", True),
        ("vllm", "http://[::ffff:127.0.0.1]:8000", True),
        ("ollama", "http://localhost:11434", True),
        ("ollama", "http://LOCALHOST.:11434", True),
        ("ollama", "http://192.168.1.20:11434", False),
        ("vllm", "http://10.0.0.5:8000", False),
        ("vllm", "http://[fe80::1]:8000", False),
        ("ollama", "http://ollama.example.com:11434", False),
        ("vllm", "https://api.vllm-host.net", False),
        ("ollama", "", True),  # the client's default, http://127.0.0.1:11434
        ("vllm", "", False),  # no default: the client refuses to start
        ("openai", "http://127.0.0.1:8000", False),
        ("anthropic", "http://localhost:9000", False),
        ("gemini", "http://[::1]:9000", False),
        ("none", "", False),
    ],
)
def test_locality(provider: str, base_url: str, local: bool) -> None:
    """Only `local`, or ollama/vllm on a loopback host, run on this computer."""
    assert is_local(provider, base_url) is local


@pytest.mark.parametrize("kind", ["ollama", "vllm", "openai", "anthropic", "gemini"])
@pytest.mark.parametrize(
    "base_url", ["", "http://127.0.0.1:9", "http://[::1]:9", "http://10.0.0.5:9"]
)
def test_the_client_and_the_locality_check_judge_the_same_url(kind: str, base_url: str) -> None:
    """is_local judges the URL the client really sends to, also when base_url is empty."""
    cfg = TaggerConfig(provider=kind, model="m", base_url=base_url, api_key="k")  # type: ignore[arg-type]
    try:
        provider = make_provider(cfg)
    except ProviderError:
        assert (kind, base_url) == ("vllm", "")  # no URL at all: nothing to call local
        assert not is_local(kind, base_url)
        return
    try:
        sent_to = urlsplit(provider.base_url).hostname or ""  # type: ignore[attr-defined]
        expected = kind in ("ollama", "vllm") and is_loopback_host(sent_to)
        assert is_local(kind, base_url) is expected, provider.base_url  # type: ignore[attr-defined]
    finally:
        provider.close()


AMX_BUILD = "CPU : SSE3 = 1 | AVX2 = 1 | AVX512 = 1 | AMX_INT8 = 1 | OPENMP = 1 | "
BASELINE_BUILD = "CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | OPENMP = 1 | "


def test_an_amx_build_is_a_hazard_only_on_a_cpu_with_amx() -> None:
    """llama.cpp's AMX kernels run (and crash) only where the build has them and the CPU has
    AMX: the baseline build is safe everywhere, an AMX build on an AMD or older Intel CPU
    is too."""
    sapphire = " fpu sse2 avx2 avx512f amx_bf16 amx_tile amx_int8 "
    epyc = " fpu sse2 avx2 avx512f avx512_vnni "
    assert amx_hazard(AMX_BUILD, sapphire)
    assert not amx_hazard(AMX_BUILD, epyc)
    assert not amx_hazard(BASELINE_BUILD, sapphire)
    assert not amx_hazard(AMX_BUILD, "")


def test_the_local_provider_refuses_an_amx_build_on_an_amx_cpu_before_loading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Loading would segfault the daemon in the first decode: the provider raises the
    rebuild instead, and the inference it was asked for is an error with that detail."""
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    monkeypatch.setattr(local, "_system_info", lambda: AMX_BUILD)
    monkeypatch.setattr(local, "_cpu_flags", lambda: " avx2 amx_tile amx_int8 ")
    provider = local.LocalProvider(str(model), n_threads=1)
    with pytest.raises(ProviderError, match=r"AMX.*GGML_NATIVE=OFF"):
        provider.load()
    assert not provider.loaded
    done = Inference(lambda: provider).complete(
        CompleteRequest(messages=MESSAGES, deadline=time.monotonic() + 60, max_tokens=4)
    )
    assert done.outcome == "error" and "llama.cpp#20824" in (done.detail or "")


@pytest.mark.parametrize(
    ("cls", "env"),
    [
        (AnthropicProvider, "ANTHROPIC_API_KEY"),
        (GeminiProvider, "GEMINI_API_KEY"),
        (OpenAIProvider, "OPENAI_API_KEY"),
        (VllmProvider, ""),
        (OllamaProvider, ""),
    ],
)
def test_every_http_provider_refuses_a_missing_model_and_key_alike(
    cls: Any, env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The HTTP providers' one shared setup: a missing model, base URL (vllm) or key is one
    line naming the setting, and a provider with what it needs talks to its base URL."""
    for name in ("ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    url = "http://127.0.0.1:9"
    if env:
        with pytest.raises(ProviderError, match=rf"^tagger.api_key: empty; .* {env}$"):
            cls(url, "m")
        monkeypatch.setenv(env, "k-" + "0123456789")
    with pytest.raises(ProviderError, match=rf"^tagger.model: required for provider {cls.name}$"):
        cls(url, "")
    if cls is VllmProvider:
        with pytest.raises(ProviderError, match=r"^tagger\.base_url: required for provider vllm$"):
            cls("", "m")
    provider = cls(url + "/", "m")
    assert (provider.base_url, provider.model) == (url, "m")
    provider.close()
