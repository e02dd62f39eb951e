"""retrieval_sides: `benchmark.retrieval` for an old checkout, this one and variants of this
one, side by side in one run, on copies of one data dir (issue 32).

    .venv/bin/python -m benchmark.retrieval_sides --data-dir PATH --before CHECKOUT \
        [--variant 'no history prior:IMPRINT_SEARCH_HISTORY_WEIGHT=0' ...] \
        [--variant 'per chunk:--by-chunk'] [--repeats 3] [--publish [--out FOLDER]]

Each side runs `python -m benchmark.retrieval` in its own process on its own copy of
`--data-dir`, once per query file (`benchmark/retrieval.json`: tune and held-out;
`benchmark/retrieval_blind.json`: blind), with this checkout's benchmark code. The `before`
side imports `imprint` from `--before` (a folder of links puts that checkout's `imprint/`
and this `benchmark/` first on `sys.path`), so the old ranking is measured with the new
figures (R@5 and R@10 by distinct file). A variant is `NAME:SETTING` where each setting is
an environment assignment (`IMPRINT_SEARCH_HISTORY_WEIGHT=0`, how `search.*` settings are
overridden) or an argument for `benchmark.retrieval` (`--by-chunk`), comma-separated.

`--publish` writes `benchmark/published/retrieval-sides-<UTC timestamp>/`: README.md (before
/ after per set and mode, then every variant's hybrid figures) and results.json (each side's
figures, and where each side's own results.json was written).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmark import _common as common
from benchmark._common import DEFAULT_CORPUS, PUBLISHED, REPO, note

# (label, query file, half in that file)
SETS = (
    ("tune", "retrieval.json", "tune"),
    ("held-out", "retrieval.json", "heldout"),
    ("blind", "retrieval_blind.json", "heldout"),
)
MODES = ("hybrid", "semantic", "lexical")
COLUMNS = (
    ("top-1", "top1"),
    ("R@5", "recall5"),
    ("R@10 by file", "files10"),
    ("MRR@10", "mrr10"),
    ("gold @1200", "1200"),
    ("gold @4000", "4000"),
    ("p50 ms", "p50_ms"),
)


@dataclass(frozen=True)
class Side:
    name: str
    env: dict[str, str] = field(default_factory=dict)
    args: tuple[str, ...] = ()
    checkout: Path | None = None  # None: this one


@dataclass
class Results(common.Run):
    sides: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> set -> mode ->
    lookups: dict[str, dict[str, Any]] = field(default_factory=dict)  # before/after: id ->
    total_seconds: float = 0.0


def parse_variant(text: str) -> Side:
    name, sep, spec = text.partition(":")
    if not sep or not name.strip() or not spec.strip():
        raise argparse.ArgumentTypeError(f"{text!r}: give NAME:SETTING[,SETTING]")
    env: dict[str, str] = {}
    args: list[str] = []
    for item in (s.strip() for s in spec.split(",")):
        if item.startswith("--"):
            args.append(item)
        elif "=" in item and item.split("=", 1)[0].startswith("IMPRINT_"):
            key, value = item.split("=", 1)
            env[key] = value
        else:
            raise argparse.ArgumentTypeError(
                f"{item!r}: a setting is IMPRINT_...=VALUE or a --flag of benchmark.retrieval"
            )
    return Side(name.strip(), env, tuple(args))


def _links(checkout: Path, into: Path) -> Path:
    """A folder whose `imprint` is the old checkout's and whose `benchmark` is this one's."""
    into.mkdir(parents=True, exist_ok=True)
    (into / "imprint").symlink_to(checkout.resolve() / "imprint")
    (into / "benchmark").symlink_to(REPO / "benchmark")
    return into


def run_side(side: Side, data_dir: Path, repeats: int, work: Path) -> dict[str, Any]:
    """The side's figures per set and mode, and the results.json files behind them."""
    cwd = REPO if side.checkout is None else _links(side.checkout, work / f"links-{side.name}")
    out: dict[str, Any] = {"figures": {}, "runs": [], "lookups": {}}
    for query_file in dict.fromkeys(q for _, q, _ in SETS):
        copy = work / "store"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(data_dir, copy, symlinks=True)
        runs = work / "runs" / side.name / query_file
        command = [
            sys.executable, "-m", "benchmark.retrieval", "--data-dir", str(copy),
            "--queries", str(REPO / "benchmark" / query_file), "--repeats", str(repeats),
            "--publish", "--out", str(runs), *side.args,
        ]  # fmt: skip
        env = {k: v for k, v in os.environ.items() if not k.startswith("IMPRINT_SEARCH_")}
        note(f"{side.name}: {query_file}")
        done = subprocess.run(
            command, cwd=cwd, env={**env, **side.env}, capture_output=True, text=True
        )
        shutil.rmtree(copy, ignore_errors=True)
        if done.returncode != 0:
            raise SystemExit(f"{side.name} on {query_file} failed:\n{done.stderr[-3000:]}")
        found = sorted(runs.glob("retrieval-*/results.json"))[-1]
        out["runs"].append(str(found))
        run = json.loads(found.read_text(encoding="utf-8"))
        figures = run["figures"]
        for lookup in run["lookups"]:
            out["lookups"][lookup["id"]] = {
                mode: {
                    "rank": got["rank"],
                    "file_rank": got["file_rank"],
                    "top10": [f"{h[1]}#{h[2]}" for h in got["hits"]],
                }
                for mode, got in lookup["modes"].items()
            }
        for label, file, half in SETS:
            if file == query_file:
                out["figures"][label] = figures[half]
    return out


def _cell(f: dict[str, Any], key: str) -> str:
    if key == "mrr10":
        return f"{f['mrr10']:.3f}"
    if key == "p50_ms":
        return f"{f['p50_ms']:.1f}"
    value = f["visible"][key] if key in ("1200", "4000") else f[key]
    return f"{value}/{f['lookups']}"


def readme(res: Results, command: str) -> str:
    m = res.machine
    names = list(res.sides)
    head = "| set | mode | side | " + " | ".join(c for c, _ in COLUMNS) + " |"
    rule = "|---|---|---|" + "---:|" * len(COLUMNS)
    lines = [
        f"# Retrieval, sides, {res.started_at}",
        "",
        "`benchmark.retrieval` for the checkout before issue 32 and this one (and variants "
        "of this one), each in its own process on its own copy of one store, with the same "
        "benchmark code. Counts are lookups: top-1, R@5 (a gold file within the first 5 "
        "results), R@10 by file (a gold file among the first 10 distinct files shown), "
        "MRR@10, a gold file shown in a block header at 1,200 / 4,000 characters; p50 is "
        "the median search time (each side ran at another minute: the paired search "
        "benchmark compares speed).",
        "",
        "## Before / after",
        "",
        head,
        rule,
    ]
    for label, _, _ in SETS:
        for mode in MODES:
            for name in names[:2]:
                f = res.sides[name]["figures"][label][mode]
                cells = " | ".join(_cell(f, key) for _, key in COLUMNS)
                lines.append(f"| {label} | {mode} | {name} | {cells} |")
    if len(names) > 2:
        lines += ["", "## Variants (hybrid)", "", head, rule]
        for label, _, _ in SETS:
            for name in names:
                f = res.sides[name]["figures"][label]["hybrid"]
                cells = " | ".join(_cell(f, key) for _, key in COLUMNS)
                lines.append(f"| {label} | hybrid | {name} | {cells} |")
    lines += [
        "",
        "## Setup",
        "",
        f"- Command: `{command}`",
        f"- Code: commit `{m['revision'].get('commit', '?')}`; before: `{res.config['before']}`.",
        f"- Machine: {m['cpus']} CPUs ({m['cpu']}); load average (1 min) "
        f"{m['loadavg_start'][0]:.2f} at start, {m['loadavg_end'][0]:.2f} at end.",
        "- Sides: "
        + "; ".join(f"{n}: {res.config['sides'][n]}" for n in names)
        + f". Store: `{res.config['data_dir']}` (copied per run); total {res.total_seconds:.0f} s.",
        "- `results.json`: every side's figures; before's and after's ranks and top 10 "
        "per lookup and mode.",
    ]
    return "\n".join(lines) + "\n"


def table(res: Results) -> str:
    lines = []
    for label, _, _ in SETS:
        for name, side in res.sides.items():
            f = side["figures"][label]["hybrid"]
            cells = "  ".join(f"{c} {_cell(f, key)}" for c, key in COLUMNS)
            lines.append(f"{label:<9}{name:<28}{cells}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True, metavar="PATH")
    parser.add_argument("--before", type=Path, required=True, help="the old checkout")
    parser.add_argument("--variant", type=parse_variant, action="append", default=[])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--publish", action="store_true")
    parser.add_argument("--out", type=Path, default=PUBLISHED)
    args = parser.parse_args(argv)
    if not (args.data_dir / "workspaces").is_dir():
        parser.error(f"--data-dir: {args.data_dir} holds no workspaces/")
    if not (args.before / "imprint" / "__init__.py").is_file():
        parser.error(f"--before: {args.before} holds no imprint/ package")
    sides = [Side("before", checkout=args.before), Side("after"), *args.variant]
    res = Results(
        started_at=common.utc_now(),
        command=[sys.executable, *sys.argv],
        machine=common.machine(
            ("imprint",), cpu=common.cpu_name(), revision=common.imprint_revision()
        ),
        config={
            "before": str(args.before.resolve()),
            "data_dir": str(args.data_dir.resolve()),
            "sides": {s.name: " ".join([*(f"{k}={v}" for k, v in s.env.items()), *s.args])
                      or ("that checkout" if s.checkout else "defaults") for s in sides},
        },
    )  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="imprint-sides-") as tmp:
        for side in sides:
            got = run_side(side, args.data_dir, args.repeats, Path(tmp))
            res.sides[side.name] = {"figures": got["figures"]}
            if side.name in ("before", "after"):  # every lookup's ranks and top 10
                res.lookups[side.name] = got["lookups"]
    res.total_seconds = common.elapsed()
    common.conclude(res, table, readme if args.publish else None, args.out, "retrieval-sides")
    return 0


if __name__ == "__main__":
    sys.exit(main())
