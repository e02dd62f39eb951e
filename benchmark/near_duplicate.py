"""Near-duplicates: how similar the embedder finds paraphrases and related-but-different
memories, to choose `store.near_duplicate` (issue 30):

    python -m benchmark.near_duplicate --publish

Each pair of `benchmark/near_duplicate.json` is embedded as a memory is (the bundled MiniLM,
the text alone) and its cosine similarity recorded. For each candidate threshold the table
gives how many paraphrases it catches (answered `already stored as`) and how many different
memories it would wrongly refuse to store. The cost of the two errors is not the same: a
paraphrase missed is one more memory in the store (today's behaviour); a different memory
caught is a memory lost, so a threshold is only worth having above every `different` pair.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmark import _common as common
from benchmark._common import PUBLISHED, Run, note
from imprint.store.embedder import MODEL_NAME, Embedder

PAIRS = Path(__file__).with_name("near_duplicate.json")
THRESHOLDS = (0.80, 0.85, 0.88, 0.90, 0.92, 0.94, 0.95, 0.96, 0.97)


@dataclass
class Results(Run):
    model: str = MODEL_NAME
    pairs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    summary: dict[str, dict[str, float]] = field(default_factory=dict)
    thresholds: list[dict[str, Any]] = field(default_factory=list)


def similarities(embedder: Embedder, pairs: Sequence[Sequence[str]]) -> list[float]:
    first = embedder.embed([a for a, _ in pairs])
    second = embedder.embed([b for _, b in pairs])
    return [float(x) for x in np.sum(first * second, axis=1)]


def measure(res: Results) -> None:
    spec = json.loads(PAIRS.read_text(encoding="utf-8"))
    embedder = Embedder()
    for group in ("same", "different"):
        sims = similarities(embedder, spec[group])
        res.pairs[group] = [
            {"a": a, "b": b, "similarity": round(s, 4)}
            for (a, b), s in zip(spec[group], sims, strict=True)
        ]
        arr = np.asarray(sims)
        res.summary[group] = {
            "pairs": len(sims),
            "min": float(arr.min()),
            "p10": float(np.percentile(arr, 10)),
            "median": float(np.median(arr)),
            "p90": float(np.percentile(arr, 90)),
            "max": float(arr.max()),
        }
    same = np.asarray([p["similarity"] for p in res.pairs["same"]])
    different = np.asarray([p["similarity"] for p in res.pairs["different"]])
    for t in THRESHOLDS:
        res.thresholds.append(
            {
                "threshold": t,
                "paraphrases_caught": int((same >= t).sum()),
                "different_refused": int((different >= t).sum()),
            }
        )


def table(res: Results) -> str:
    lines = [common.title(res, "near-duplicate", f", {res.model}"), ""]
    lines.append("| pairs | n | min | p10 | median | p90 | max |")
    lines.append("|---|---|---|---|---|---|---|")
    for group, s in res.summary.items():
        lines.append(
            f"| {group} | {s['pairs']:.0f} | {s['min']:.3f} | {s['p10']:.3f} | "
            f"{s['median']:.3f} | {s['p90']:.3f} | {s['max']:.3f} |"
        )
    lines += [
        "",
        "| threshold | paraphrases caught | different memories refused |",
        "|---|---|---|",
    ]
    n_same, n_diff = len(res.pairs["same"]), len(res.pairs["different"])
    for row in res.thresholds:
        lines.append(
            f"| {row['threshold']:.2f} | {row['paraphrases_caught']}/{n_same} | "
            f"{row['different_refused']}/{n_diff} |"
        )
    lines += ["", "Closest different pairs (the ones a threshold must stay above):", ""]
    for p in sorted(res.pairs["different"], key=lambda p: -p["similarity"])[:5]:
        lines.append(f"- {p['similarity']:.3f}: {p['a']!r} / {p['b']!r}")
    lines += ["", "Least similar paraphrases:", ""]
    for p in sorted(res.pairs["same"], key=lambda p: p["similarity"])[:5]:
        lines.append(f"- {p['similarity']:.3f}: {p['a']!r} / {p['b']!r}")
    return "\n".join(lines)


def readme(res: Results, command: str) -> str:
    return "\n".join(
        [
            "# Near-duplicate similarity (issue 30, `store.near_duplicate`)",
            "",
            f"Command: `{command}` (load average {res.machine['loadavg_start']}).",
            "",
            (__doc__ or "").split("\n\n", 2)[-1].strip(),
            "",
            table(res),
            "",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--publish", action="store_true", help="write benchmark/published/...")
    args = parser.parse_args(argv)
    res = Results(
        started_at=common.utc_now(),
        command=sys.argv,
        machine=common.machine(["onnxruntime", "tokenizers"]),
        config={"pairs": str(common.relative(PAIRS))},
    )
    note("embedding the pairs")
    measure(res)
    common.conclude(res, table, readme if args.publish else None, PUBLISHED, "near-duplicate")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
