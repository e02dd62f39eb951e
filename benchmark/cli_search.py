"""`imprint search` and `imprint status` beside a warm daemon: two checkouts in one run
(issue 45: "`imprint search` beside a warm daemon: p50 <= 300 ms, paired with today's").

Method.
One daemon (checkout B's, started as `imprint serve` starts it) owns a data dir holding the
repository's own `imprint/` source (ingested first, or a kept `--data-dir`). Then each
command runs as a person types it: a fresh process through the console script's entry
(`imprint.launch.main`), timed from spawn to exit, its output read; checkout A's and
checkout B's in turn (A, B, B, A, ...: neither always goes first), each with its checkout
first on `PYTHONPATH`, against that one daemon, so the pair differs in the client alone.
Searches take turns over a fixed list of questions about the code; `imprint status` is the
second command. Reported: p50, p95 and mean of each checkout's runs, the median of the
per-pair ratios B/A, each run's exit status, and the load average (1 min) before and after
(the machine may be shared).

    python -m benchmark.cli_search --a /path/to/today/checkout [--b .] [--rounds 20]
        [--data-dir FOLDER] [--publish [--out FOLDER]]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmark._common import (
    PUBLISHED,
    REPO,
    Latency,
    Run,
    conclude,
    data_dir,
    imprint_revision,
    latency,
    machine,
    method_of,
    note,
    run_readme,
    title,
    utc_now,
)

__all__ = ["main"]

QUESTIONS = (
    "how does the daemon start when none runs",
    "hook timeout budget for a session start",
    "redaction of secrets before a write",
    "socket path of the data dir",
    "briefing at session start",
    "capture queue hand-off",
    "search modes hybrid semantic lexical",
    "rolling backups schedule",
)

# The console script (`imprint`, as pip writes it) in a fresh process.
ENTRY = "import sys; from imprint.launch import main; sys.argv[0] = 'imprint'; sys.exit(main())"


@dataclass
class CliBench(Run):
    revision: dict[str, Any] = field(default_factory=dict)
    checkouts: dict[str, str] = field(default_factory=dict)
    loads: list[float] = field(default_factory=list)  # 1 min: before, after
    latency: dict[str, dict[str, Latency]] = field(default_factory=dict)  # command: side
    pair_ratio: dict[str, float] = field(default_factory=dict)  # command: median B/A
    failures: dict[str, int] = field(default_factory=dict)  # "command side": runs not 0
    runs_ms: dict[str, dict[str, list[float]]] = field(default_factory=dict)


def _env(checkout: Path, root: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(checkout), "IMPRINT_DATA_DIR": str(root)}


def _timed(checkout: Path, root: Path, argv: Sequence[str]) -> tuple[float, int]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", ENTRY, *argv],
        env=_env(checkout, root), cwd=root, capture_output=True, timeout=300,
    )  # fmt: skip
    return time.perf_counter() - start, done.returncode


def _prepare(b: Path, root: Path) -> None:
    """The store (unless the data dir holds one) and B's daemon, answering a search."""
    env = {**_env(b, root), "IMPRINT_SERVER_IDLE_EXIT_SEC": "3600"}
    if not (root / "workspaces").exists() and not any(root.glob("*.sqlite*")):
        note(f"ingesting {REPO / 'imprint'} into {root}")
        subprocess.run(
            [sys.executable, "-m", "imprint.cli", "ingest", str(REPO / "imprint")],
            env=env, cwd=root, check=True, capture_output=True, timeout=1800,
        )  # fmt: skip
    note("starting checkout B's daemon")
    subprocess.Popen(
        [sys.executable, "-m", "imprint.daemon"],
        env=env, cwd=root, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    for _ in range(3):  # until the store is open and a search answers (the embedder warm)
        took, code = _timed(b, root, ["search", QUESTIONS[0]])
        if code != 0:
            raise SystemExit(f"search beside the daemon exited {code}")
        note(f"warm-up search: {took * 1000:.0f} ms")


def measure(res: CliBench, a: Path, b: Path, root: Path, rounds: int) -> None:
    _prepare(b, root)
    sides = {"A": a, "B": b}
    commands: dict[str, list[list[str]]] = {
        "search": [["search", q] for q in QUESTIONS],
        "status": [["status"]],
    }
    try:
        for argv_list in commands.values():  # one untimed run of each, each side
            for side in sides.values():
                _timed(side, root, argv_list[0])
        res.loads.append(os.getloadavg()[0])
        for command, argv_list in commands.items():
            runs: dict[str, list[float]] = {"A": [], "B": []}
            for n in range(rounds * (len(QUESTIONS) if command == "search" else 1)):
                argv = argv_list[n % len(argv_list)]
                for name in ("A", "B") if n % 2 == 0 else ("B", "A"):
                    took, code = _timed(sides[name], root, argv)
                    runs[name].append(took)
                    if code != 0:
                        key = f"{command} {name}"
                        res.failures[key] = res.failures.get(key, 0) + 1
            res.latency[command] = {name: latency(v) for name, v in runs.items()}
            res.pair_ratio[command] = round(
                statistics.median(y / x for x, y in zip(runs["A"], runs["B"], strict=True)), 3
            )
            res.runs_ms[command] = {k: [round(x * 1000, 1) for x in v] for k, v in runs.items()}
            note(f"{command}: {len(runs['A'])} pairs")
        res.loads.append(os.getloadavg()[0])
    finally:
        subprocess.run(
            [sys.executable, "-m", "imprint.cli", "stop"],
            env=_env(b, root), cwd=root, capture_output=True, timeout=120,
        )  # fmt: skip


def table(res: CliBench) -> str:
    loads = " -> ".join(f"{x:.1f}" for x in res.loads)
    lines = [
        title(res, "cli_search", f", load average {loads}"),
        f"A: {res.checkouts.get('A')}",
        f"B: {res.checkouts.get('B')}",
        "",
        "command  side   runs   p50 ms   p95 ms  mean ms   B/A per pair (median)",
    ]
    for command, sides in res.latency.items():
        for name, lat in sides.items():
            shown = f"{res.pair_ratio[command]:.3f}" if name == "B" else ""
            lines.append(
                f"{command:<8} {name:<5} {lat.queries:>5} {lat.p50_ms:>8.1f} "
                f"{lat.p95_ms:>8.1f} {lat.mean_ms:>8.1f}   {shown}".rstrip()
            )
    if res.failures:
        lines.append(f"runs that did not exit 0: {res.failures}")
    return "\n".join(lines)


def readme(res: CliBench, command: str) -> str:
    return run_readme(
        "CLI beside a warm daemon: `imprint search` and `imprint status`, two checkouts",
        res,
        command,
        method_of(__doc__),
        table(res),
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--a", type=Path, required=True, help="checkout A (today's)")
    parser.add_argument("--b", type=Path, default=REPO, help="checkout B (default: this one)")
    parser.add_argument("--rounds", type=int, default=20, help="searches: rounds x 8 pairs")
    parser.add_argument("--data-dir", type=Path, default=None, help="kept store to reuse")
    parser.add_argument("--out", type=Path, default=PUBLISHED)
    parser.add_argument("--publish", action="store_true", help="publish the run under --out")
    args = parser.parse_args(argv)
    if not 1 <= args.rounds <= 200:
        parser.error("--rounds: 1-200")
    a, b = args.a.resolve(), args.b.resolve()
    for side in (a, b):
        if not (side / "imprint" / "launch.py").is_file():
            parser.error(f"{side}: no imprint/launch.py (not a checkout)")
    res = CliBench(
        started_at=utc_now(),
        command=list(sys.argv),
        machine=machine(["pydantic"]),
        config={"rounds": args.rounds, "questions": len(QUESTIONS)},
        revision=imprint_revision(),
        checkouts={"A": str(a), "B": str(b)},
    )
    with data_dir(args.data_dir, "imprint-cli-search-") as root:
        measure(res, a, b, root, args.rounds)
    conclude(res, table, readme if args.publish else None, args.out, "cli-search")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
