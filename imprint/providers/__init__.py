"""Inference providers behind one Protocol, and where inference runs."""

from __future__ import annotations

from imprint.config import TaggerConfig
from imprint.providers._base import (
    ChatMessage,
    Provider,
    ProviderError,
    effective_base_url,
    is_local,
    is_loopback_host,
)

__all__ = [
    "ChatMessage",
    "Provider",
    "ProviderError",
    "effective_base_url",
    "is_local",
    "is_loopback_host",
    "make_provider",
]


def make_provider(tagger: TaggerConfig) -> Provider:
    """The configured provider; a missing model or key is a clear error naming the setting."""
    kind = tagger.provider
    if kind == "local":
        from imprint.providers.local import LocalProvider, bundled_gguf

        path = tagger.local.model_path or str(bundled_gguf() or "")
        return LocalProvider(
            path,
            n_threads=tagger.local.n_threads,
            n_ctx=tagger.local.n_ctx,
            chat_format=tagger.local.chat_format,
        )
    if kind == "ollama":
        from imprint.providers.openai_compat import OllamaProvider

        return OllamaProvider(tagger.base_url, tagger.model)
    if kind == "vllm":
        from imprint.providers.openai_compat import VllmProvider

        return VllmProvider(tagger.base_url, tagger.model, tagger.api_key)
    if kind == "openai":
        from imprint.providers.openai_compat import OpenAIProvider

        return OpenAIProvider(tagger.base_url, tagger.model, tagger.api_key)
    if kind == "anthropic":
        from imprint.providers.anthropic import AnthropicProvider

        return AnthropicProvider(tagger.base_url, tagger.model, tagger.api_key)
    if kind == "gemini":
        from imprint.providers.gemini import GeminiProvider

        return GeminiProvider(tagger.base_url, tagger.model, tagger.api_key)
    raise ProviderError(
        "tagger.provider: 'none'; set local, ollama, vllm, openai, anthropic or gemini"
    )
