"""Runtime benchmarks of the MCP server, by subcommand: the command line only.

Run from the repository root:

    .venv/bin/python -m benchmark.runtime recall [--corpus ../shared/corpus]
                                                 [--lookups benchmark/recall.json]
                                                 [--data-dir PATH] [--repeats 3]
    .venv/bin/python -m benchmark.runtime recall --llm [--threads 2] [--timeout 30] [...]

`recall` is `benchmark/recall.py`:
separate tool calls against one recall with the equivalent plan. `recall --llm` is
`benchmark/recall_llm.py`: recall's model path with the bundled SmolLM2-135M, cold and warm.
Each module's docstring gives its method; both publish to `benchmark/published/`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from benchmark import recall, recall_llm
from benchmark._common import DEFAULT_CORPUS, PUBLISHED, data_dir
from benchmark._recall import DEFAULT_LOOKUPS, setup


def cmd_recall(args: argparse.Namespace) -> int:
    ready = setup(args)
    if ready is None:
        return 2
    with data_dir(args.data_dir, "imprint-bench-recall-") as folder:
        bench = recall_llm if args.llm else recall
        return bench.run(args, ready, folder)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Runtime benchmarks of the MCP server.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    cmd = sub.add_parser(
        "recall",
        help="separate tool calls vs one recall per multi-part lookup",
        description="Separate tool calls against one recall with the equivalent plan, at the "
        "default budget and at a matched one: round trips, caller tokens, gold sources "
        "visible, server time.",
    )
    cmd.add_argument(
        "--corpus",
        type=Path,
        default=DEFAULT_CORPUS,
        help="folder to ingest (default: ../shared/corpus beside the repository)",
    )
    cmd.add_argument(
        "--lookups",
        type=Path,
        default=DEFAULT_LOOKUPS,
        help="lookups file (default: benchmark/recall.json)",
    )
    cmd.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        metavar="PATH",
        help="data dir to ingest into and keep; a rerun skips the unchanged corpus "
        "(default: a temporary one, removed at the end)",
    )
    cmd.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="times each lookup's calls run; server time is the median (default: 3)",
    )
    cmd.add_argument(
        "--out",
        type=Path,
        default=PUBLISHED,
        help="folder for recall-<timestamp>/ or recall-llm-<timestamp>/ "
        "(default: benchmark/published)",
    )
    cmd.add_argument(
        "--llm",
        action="store_true",
        help="instead: recall's local-model path with the bundled SmolLM2-135M, intent-only "
        "and plan+answer, cold and warm prompt cache; writes recall-llm-<timestamp>/ "
        "(--repeats does not apply)",
    )
    cmd.add_argument(
        "--threads",
        type=int,
        default=2,
        help="with --llm: llama.cpp threads, tagger.local.n_threads (default: 2)",
    )
    cmd.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        metavar="SEC",
        help="with --llm: recall.llm_timeout_sec, one deadline for plan + answer (default: 30)",
    )
    cmd.set_defaults(run=cmd_recall)
    args = parser.parse_args(argv)
    if args.command == "recall":
        if args.repeats < 1:
            cmd.error("--repeats: must be at least 1")
        if args.threads < 1:
            cmd.error("--threads: must be at least 1")
        if not 0 < args.timeout <= 600:
            cmd.error("--timeout: must be more than 0 and at most 600 seconds")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    code: int = args.run(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
