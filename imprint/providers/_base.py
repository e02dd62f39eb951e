"""The one small Protocol every provider implements, and what they share."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from ipaddress import ip_address
from typing import Any, Protocol, TypedDict
from urllib.parse import urlsplit

import httpx

from imprint.errors import ImprintError
from imprint.logs import add_secret

__all__ = [
    "ChatMessage",
    "HttpProvider",
    "Provider",
    "ProviderError",
    "effective_base_url",
    "is_local",
    "is_loopback_host",
    "remaining",
    "sse_data",
]


class ProviderError(ImprintError):
    """A provider could not do what was asked (unreachable, refused, bad output)."""


class ChatMessage(TypedDict):
    role: str  # system, user or assistant
    content: str


class Provider(Protocol):
    """Streams text pieces for a chat; JSON under `schema` when one is given.

    `deadline` is a `time.monotonic()` instant. A provider uses it to bound its own waits
    (an HTTP client's timeout); the InferenceActor stops reading at the first piece past it.
    `grammar` (GBNF) is enforced by `local`; the others ignore it, so callers keep their own
    checks of the output. `pin` asks a provider with a prompt-state cache to keep this
    prompt's state (a fixed prefix that later prompts share); the others ignore it.
    A provider may also offer `count_tokens(messages) -> int`, for the InferenceActor's
    estimate of a prompt's cost.
    """

    name: str

    def stream(
        self,
        messages: list[ChatMessage],
        *,
        deadline: float,
        schema: dict[str, Any] | None = None,
        max_tokens: int = 256,
        grammar: str | None = None,
        pin: bool = False,
    ) -> Iterator[str]: ...

    def close(self) -> None: ...


def is_loopback_host(host: str) -> bool:
    """127.0.0.0/8, ::1 in any spelling (also IPv4-mapped), or localhost."""
    host = host.strip().strip("[]").lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        addr = ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    mapped = getattr(addr, "ipv4_mapped", None)
    return bool(addr.is_loopback or (mapped is not None and mapped.is_loopback))


# Where a provider's client sends requests when `tagger.base_url` is empty. vllm has none:
# it is always someone's own server, so the URL is required.
DEFAULT_BASE_URLS = {
    "ollama": "http://127.0.0.1:11434",
    "openai": "https://api.openai.com",
    "anthropic": "https://api.anthropic.com",
    "gemini": "https://generativelanguage.googleapis.com",
}


def effective_base_url(provider: str, base_url: str) -> str:
    """The URL a provider's client really talks to: the configured one, else its default.

    The clients and `is_local` both call this, so the locality check judges the address
    that requests actually go to.
    """
    return (base_url or DEFAULT_BASE_URLS.get(provider, "")).rstrip("/")


def is_local(provider: str, base_url: str) -> bool:
    """Whether inference runs on this computer: `local`, or ollama/vllm on a loopback host.

    Remote APIs (openai, anthropic, gemini) are never local, wherever their base URL points:
    they are other people's computers by design. LAN hosts are never local.
    """
    if provider == "local":
        return True
    url = effective_base_url(provider, base_url)
    if provider in ("ollama", "vllm") and url:
        return is_loopback_host(urlsplit(url).hostname or "")
    return False


def remaining(deadline: float, what: str) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise ProviderError(f"{what}: the deadline passed before the request was sent")
    return left


def api_key(configured: str, env_names: tuple[str, ...], setting: str = "tagger.api_key") -> str:
    key = configured or next((os.environ[n] for n in env_names if os.environ.get(n)), "")
    if not key:
        raise ProviderError(f"{setting}: empty; set it or the environment variable {env_names[0]}")
    add_secret(key)  # never in a log line, whatever error text carries it
    return key


def sse_data(response: httpx.Response) -> Iterator[dict[str, Any]]:
    """The JSON payloads of a server-sent-events stream, ending at `[DONE]`."""
    for line in response.iter_lines():
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            return
        if data:
            yield json.loads(data)


@contextmanager
def post_stream(
    client: httpx.Client,
    name: str,
    url: str,
    *,
    deadline: float,
    body: dict[str, Any],
    headers: dict[str, str] | None = None,
    params: dict[str, str] | None = None,
) -> Iterator[httpx.Response]:
    """POST and stream the answer, with what is left until the deadline as the timeout;
    transport failures become one-line ProviderErrors naming the provider."""
    timeout = remaining(deadline, name)
    try:
        with client.stream(
            "POST",
            url,
            json=body,
            headers=headers or {},
            params=params,
            timeout=httpx.Timeout(timeout),
        ) as response:
            check_status(response, name)
            yield response
    except httpx.TimeoutException as exc:
        raise ProviderError(f"{name}: no answer within {timeout:.1f} s") from exc
    except httpx.HTTPError as exc:
        raise ProviderError(f"{name}: {url} unreachable ({type(exc).__name__})") from exc


def check_status(response: httpx.Response, what: str) -> None:
    if response.status_code >= 400:
        response.read()
        detail = response.text[:200].replace("\n", " ")
        raise ProviderError(f"{what}: HTTP {response.status_code}: {detail}")


class HttpProvider:
    """What every HTTP provider sets up the same way: the URL it really talks to, a model
    it must be given, its API key (from the setting or the environment, never logged), one
    httpx client for all its requests, and `close`. Subclasses add `stream`."""

    name = "http"
    # The environment variables a key may come from; none: the key is optional.
    key_env: tuple[str, ...] = ()
    # Whether an empty `tagger.base_url` is an error (no default server to talk to).
    needs_base_url = False

    def __init__(self, base_url: str, model: str, key: str = "") -> None:
        self.base_url = effective_base_url(self.name, base_url)
        if self.needs_base_url and not self.base_url:
            raise ProviderError(f"tagger.base_url: required for provider {self.name}")
        if not model:
            raise ProviderError(f"tagger.model: required for provider {self.name}")
        self.model = model
        self.key = api_key(key, self.key_env) if self.key_env else key
        add_secret(self.key)
        # Made last: a setting refused above leaves no client to close.
        self._client = httpx.Client()

    def _post(
        self,
        path: str,
        *,
        deadline: float,
        body: dict[str, Any],
        headers: dict[str, str] | None = None,
        params: dict[str, str] | None = None,
    ) -> AbstractContextManager[httpx.Response]:
        """`post_stream` to `path` under the base URL, with this provider's client and name."""
        return post_stream(
            self._client,
            self.name,
            f"{self.base_url}{path}",
            deadline=deadline,
            body=body,
            headers=headers,
            params=params,
        )

    def close(self) -> None:
        self._client.close()
