"""code_search: does `search` find the file and the symbol where code lives (issue 31)?

Real installed source at fixed versions, lookups written before any chunker change, figures
per lookup style, for each chunker arm in one run.

    .venv/bin/python -m benchmark.code_search fixture --out DIR [--zod-tgz FILE]
    .venv/bin/python -m benchmark.code_search run --fixture DIR [--arms lines,tree]
                                               [--queries benchmark/code_search.json]
                                               [--publish [--out FOLDER]]

Method
------
1. Fixture (`fixture`): httpx, starlette and rich copied from this venv's site-packages (their
   `.py` files, the installed version checked against the lookups file's `fixture`), and
   zod's TypeScript core (`src/v4/core/*.ts`, tests left out) from `npm pack zod@VERSION`
   (or a tarball given with `--zod-tgz`, its version checked). One folder per project under
   DIR, and `FIXTURE.json` with each project's version, file count and a sha256 over its
   files; `run` refuses a fixture whose files differ from it.
2. Lookups: `benchmark/code_search.json`, each with a style (identifier, behaviour, task),
   a query and its gold: project, source, symbol and `defines` (the text that starts the
   symbol's definition, which must occur in the gold file: checked at load).
3. Each arm: a fresh data dir; every fixture folder ingested as its own project by
   `ingest_path` (timed: files, chunks, seconds); then each lookup searched once per repeat
   with `search(ActorReads(runtime), SearchArgs(query, limit=10, mode=hybrid))`, the rows
   the `search` tool formats, and formatted by `format_search` at 4,000 characters.
   The arms run one after the other (the first also warms the embedder), so their ingest
   seconds are not a paired comparison: use `farm-bench --vs` for that.
   Arms: `tree` is this version's chunker (tree-sitter for the languages it parses);
   `lines` is the line-pattern chunker every language had before (the same code with the
   tree-sitter languages turned off for the run).
4. Figures per style and arm:
   - top-1 / R@5: lookups whose gold file is the first result / among the first 5;
   - symbol top-1: the first result is the gold file and its chunk holds `defines`;
   - visible@4000: the formatted output shows a block of the gold file whose shown text
     holds `defines` (the code itself on screen, not only the file's name).
5. `--publish` writes `benchmark/published/code-search-<UTC timestamp>/` (README.md and
   results.json with each lookup's top 10).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from benchmark import _common as common
from benchmark._common import PUBLISHED, REPO, note
from imprint.actors.lifecycle import Runtime
from imprint.config import load_config
from imprint.logs import configure_logging
from imprint.reads.gateway import ActorReads
from imprint.reads.search import SearchArgs, format_search, search
from imprint.writes.files import ingest_path

DEFAULT_QUERIES = REPO / "benchmark" / "code_search.json"
STYLES = ("identifier", "behaviour", "task")
PYTHON_PROJECTS = ("httpx", "starlette", "rich")
ZOD_PART = "package/src/v4/core/"
LIMIT = 10
BUDGET = 4000
PACKAGES = ("imprint", "chromadb", "onnxruntime", "tree-sitter")
# A block header: "[n] id | project | source#chunk[ symbol][ Lx-y] | type | score".
BLOCK = re.compile(r"^\[\d+\] \S+ \| (.*?) \| (.*?)#\d+(?: [^|]*)? \| ", re.M)


@dataclass(frozen=True)
class Lookup:
    id: str
    style: str
    query: str
    project: str
    source: str
    symbol: str
    defines: str


# -- the fixture --------------------------------------------------------------------------


def _tree_sha(folder: Path) -> tuple[int, str]:
    digest = hashlib.sha256()
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    for file in files:
        digest.update(str(file.relative_to(folder)).encode() + b"\0" + file.read_bytes())
    return len(files), digest.hexdigest()


def _copy_python(name: str, version: str, out: Path) -> None:
    installed = metadata.version(name)
    if installed != version:
        raise SystemExit(
            f"code_search fixture: {name} {installed} is installed; the lookups are for "
            f"{version} (install that version or write lookups for this one)"
        )
    package = Path(str(metadata.distribution(name).locate_file(name)))
    for file in sorted(package.rglob("*.py")):
        target = out / name / file.relative_to(package)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(file, target)


def _copy_zod(version: str, out: Path, tgz: Path | None) -> None:
    with tempfile.TemporaryDirectory(prefix="imprint-zod-") as tmp:
        if tgz is None:
            subprocess.run(
                ["npm", "pack", f"zod@{version}", "--pack-destination", tmp, "--silent"],
                check=True,
                capture_output=True,
            )
            tgz = Path(tmp) / f"zod-{version}.tgz"
        with tarfile.open(tgz) as tar:
            manifest = tar.extractfile("package/package.json")
            found = json.loads(manifest.read()) if manifest else {}
            if found.get("version") != version:
                raise SystemExit(
                    f"code_search fixture: {tgz} holds zod {found.get('version')}; want {version}"
                )
            for member in tar.getmembers():
                name = member.name
                if not member.isfile() or not name.startswith(ZOD_PART):
                    continue
                rel = name[len(ZOD_PART) :]
                if "/" in rel or not rel.endswith(".ts"):  # tests/ and anything deeper
                    continue
                data = tar.extractfile(member)
                target = out / "zod" / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data.read() if data else b"")


def make_fixture(out: Path, versions: dict[str, str], zod_tgz: Path | None) -> dict[str, Any]:
    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"code_search fixture: --out {out} is not empty; give a new folder")
    out.mkdir(parents=True, exist_ok=True)
    for name in PYTHON_PROJECTS:
        _copy_python(name, versions[name], out)
    _copy_zod(versions["zod"], out, zod_tgz)
    projects = {}
    for name in (*PYTHON_PROJECTS, "zod"):
        files, sha = _tree_sha(out / name)
        projects[name] = {"version": versions[name], "files": files, "sha256": sha}
    manifest = {"projects": projects}
    (out / "FIXTURE.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def check_fixture(folder: Path, versions: dict[str, str]) -> dict[str, Any]:
    path = folder / "FIXTURE.json"
    if not path.is_file():
        raise SystemExit(f"code_search: --fixture {folder} has no FIXTURE.json; make one first")
    manifest: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    problems = []
    for name, want in versions.items():
        entry = manifest["projects"].get(name)
        if entry is None or entry["version"] != want:
            problems.append(f"{name}: the fixture has {entry and entry['version']}, want {want}")
            continue
        files, sha = _tree_sha(folder / name)
        if (files, sha) != (entry["files"], entry["sha256"]):
            problems.append(f"{name}: the files differ from FIXTURE.json")
    common.refuse("code_search", path, problems)
    return manifest


# -- lookups ------------------------------------------------------------------------------


def load_lookups(path: Path, fixture: Path | None) -> tuple[dict[str, str], list[Lookup]]:
    raw, items, problems = common.read_lookups(path)
    out = []
    for lid, item in items:
        gold = item.get("gold") or {}
        lookup = Lookup(
            lid,
            str(item.get("style", "")),
            str(item.get("query", "")),
            *(str(gold.get(k, "")) for k in ("project", "source", "symbol", "defines")),
        )
        if lookup.style not in STYLES:
            problems.append(f"{lid}: style {lookup.style!r} is not one of {', '.join(STYLES)}")
        if not (lookup.query.strip() and lookup.project and lookup.source and lookup.defines):
            problems.append(f"{lid}: needs a query and gold project, source and defines")
        if fixture is not None:
            file = fixture / lookup.project / lookup.source
            if not file.is_file():
                problems.append(f"{lid}: {file} is not in the fixture")
            elif lookup.defines not in file.read_text(encoding="utf-8"):
                problems.append(f"{lid}: {lookup.defines!r} is not in {file}")
        out.append(lookup)
    common.refuse("code_search", path, problems)
    return dict(raw.get("fixture") or {}), out


# -- arms ---------------------------------------------------------------------------------


def _arms() -> dict[str, Callable[[], AbstractContextManager[object]]]:
    """Each arm's setting for the run: the chunker it ingests with."""
    from imprint.ingest import chunking

    languages = getattr(chunking, "TREE_LANGUAGES", None)
    if languages is None:  # a version before the tree-sitter chunker: lines is all it has
        return {"lines": nullcontext}
    arms: dict[str, Callable[[], AbstractContextManager[object]]] = {"tree": nullcontext}

    @contextmanager
    def lines() -> Iterator[object]:
        saved = dict(languages)
        languages.clear()
        try:
            yield None
        finally:
            languages.update(saved)

    arms["lines"] = lines
    return arms


# -- measuring ----------------------------------------------------------------------------


@dataclass
class Searched:
    id: str
    style: str
    rank: int | None  # of the gold file within LIMIT, 1-based
    symbol_top1: bool
    visible: bool
    hits: list[list[Any]]  # [project, source, chunk_index, score, first line]
    ms: list[float] = field(default_factory=list)


@dataclass
class Figures:
    lookups: int
    top1: int
    recall5: int
    symbol_top1: int
    visible: int
    p50_ms: float


@dataclass
class Arm:
    name: str
    ingest: dict[str, Any] = field(default_factory=dict)
    lookups: list[Searched] = field(default_factory=list)
    figures: dict[str, Figures] = field(default_factory=dict)


@dataclass
class Results(common.Run):
    """One run: the fixture and lookups it measured, and each arm's ingest and figures."""

    repeats: int
    fixture: dict[str, Any]
    queries: dict[str, Any]
    method: dict[str, str]
    arms: list[Arm] = field(default_factory=list)
    total_seconds: float = 0.0


def shown_blocks(text: str) -> list[tuple[str, str, str]]:
    """(project, source, shown text) of each block in a formatted search output."""
    found = list(BLOCK.finditer(text))
    return [
        (
            m.group(1),
            m.group(2),
            text[m.end() : found[i + 1].start() if i + 1 < len(found) else None],
        )
        for i, m in enumerate(found)
    ]


def search_once(reads: ActorReads, lookup: Lookup) -> Searched:
    started = time.perf_counter()
    rows = search(reads, SearchArgs(query=lookup.query, limit=LIMIT, mode="hybrid"))
    ms = (time.perf_counter() - started) * 1000
    gold = (lookup.project, lookup.source)
    pairs = [(h.record.project, h.record.source) for h in rows.hits]
    rank = next((i for i, pair in enumerate(pairs, start=1) if pair == gold), None)
    first = rows.hits[0].record if rows.hits else None
    shown = format_search(rows, BUDGET)
    return Searched(
        id=lookup.id,
        style=lookup.style,
        rank=rank,
        symbol_top1=rank == 1 and first is not None and lookup.defines in first.content,
        visible=any(
            (p, s) == gold and lookup.defines in body for p, s, body in shown_blocks(shown)
        ),
        hits=[
            [
                h.record.project,
                h.record.source,
                h.record.chunk_index,
                round(h.score, 6),
                h.record.content.strip().split("\n", 1)[0][:80],
            ]
            for h in rows.hits
        ],
        ms=[ms],
    )


def figures(runs: Sequence[Searched]) -> Figures:
    return Figures(
        lookups=len(runs),
        top1=sum(s.rank == 1 for s in runs),
        recall5=sum(s.rank is not None and s.rank <= 5 for s in runs),
        symbol_top1=sum(s.symbol_top1 for s in runs),
        visible=sum(s.visible for s in runs),
        p50_ms=statistics.median(statistics.median(s.ms) for s in runs) if runs else 0.0,
    )


def ingest_fixture(runtime: Runtime, fixture: Path, projects: Sequence[str]) -> dict[str, Any]:
    files = chunks = 0
    started = time.perf_counter()
    for name in projects:
        report = ingest_path(runtime, fixture / name, project=name)
        files += report.files
        chunks += report.chunks
    seconds = time.perf_counter() - started
    return {"files": files, "chunks": chunks, "seconds": round(seconds, 2)}


def run_arm(
    name: str,
    setting: Callable[[], AbstractContextManager[object]],
    fixture: Path,
    projects: Sequence[str],
    lookups: Sequence[Lookup],
    repeats: int,
    keep: Path | None = None,
) -> Arm:
    arm = Arm(name)
    with (
        tempfile.TemporaryDirectory(prefix=f"imprint-bench-code-{name}-") as tmp,
        common.data_dir(keep / name if keep else Path(tmp), "imprint-bench-code-") as data_dir,
        setting(),  # the whole run: a kept store opens with the chunker it was made with
    ):
        configure_logging(data_dir, level="warning", to_file=True)
        runtime = Runtime(data_dir, load_config(data_dir)).start()
        made = data_dir / "bench-ingest.json"
        try:
            if made.is_file():
                arm.ingest = {**json.loads(made.read_text(encoding="utf-8")), "reused": True}
            else:
                note(f"{name}: ingesting {', '.join(projects)}")
                arm.ingest = ingest_fixture(runtime, fixture, projects)
                if keep:
                    made.write_text(json.dumps(arm.ingest), encoding="utf-8")
            note(f"{name}: {arm.ingest}; searching {len(lookups)} lookups")
            reads = ActorReads(runtime)
            for lookup in lookups[:3]:  # warm-up, untimed
                search_once(reads, lookup)
            for lookup in lookups:
                got = search_once(reads, lookup)
                for _ in range(repeats - 1):
                    got.ms += search_once(reads, lookup).ms
                arm.lookups.append(got)
        finally:
            runtime.stop()
    groups = {style: [s for s in arm.lookups if s.style == style] for style in STYLES}
    groups["all"] = arm.lookups
    arm.figures = {style: figures(runs) for style, runs in groups.items()}
    return arm


# -- output -------------------------------------------------------------------------------


def _count(k: int, n: int) -> str:
    return f"{k}/{n} {100 * k / n:.0f}%" if n else "-"


def _figure_rows(res: Results) -> list[list[str]]:
    """arm, style, top-1, R@5, symbol top-1, visible@4000, p50 ms: one row per arm and style."""
    return [
        [arm.name, style]
        + [_count(k, f.lookups) for k in (f.top1, f.recall5, f.symbol_top1, f.visible)]
        + [f"{f.p50_ms:.1f}"]
        for arm in res.arms
        for style, f in arm.figures.items()
    ]


def _ingest_rows(res: Results) -> list[list[str]]:
    """arm, files, chunks, seconds, chunks per second."""
    rows = []
    for arm in res.arms:
        files, chunks, seconds = (arm.ingest[k] for k in ("files", "chunks", "seconds"))
        rate = chunks / seconds if seconds else 0.0
        rows.append([arm.name, str(files), str(chunks), f"{seconds:.1f}", f"{rate:.1f}"])
    return rows


def table(res: Results) -> str:
    m = res.machine
    lines = [
        common.title(res, "code_search", f"; hybrid search, limit {LIMIT}; format at {BUDGET}"),
        f"queries {res.queries['path']}: {res.queries['lookups']} lookups; fixture "
        + ", ".join(f"{k} {v['version']} ({v['files']} files)" for k, v in res.fixture.items()),
        "",
        f"  {'arm':<7}{'style':<12}{'top-1':>11}{'R@5':>11}{'sym top-1':>11}"
        f"{'vis@4000':>11}{'p50 ms':>8}",
    ]
    widths = (7, 12, 11, 11, 11, 11, 8)
    for cells in _figure_rows(res):
        pairs = enumerate(zip(cells, widths, strict=True))
        shown = [c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in pairs]
        lines.append("  " + "".join(shown))
    lines += ["", *(f"  ingest {' '.join(cells)}" for cells in _ingest_rows(res))]
    load = m["loadavg_start"][0], m["loadavg_end"][0]
    lines += ["", f"total {res.total_seconds:.0f} s; load (1 min) {load[0]:.2f} -> {load[1]:.2f}"]
    return "\n".join(lines)


INTRO = (
    "{n} lookups from `{path}` over installed source at fixed versions (that file says "
    "when they were written); "
    "hybrid `search` with the tool's defaults (limit 10), formatted by `format_search` at "
    f"{BUDGET} characters. Counts are lookups. top-1 and R@5: the gold file first / among "
    "the first 5; symbol top-1: the first result is the gold file and holds the symbol's "
    "definition; visible@4000: the output shows a block of the gold file with the "
    "definition in its shown text."
)
HEADS = ("arm", "style", "top-1", "R@5", "symbol top-1", "visible@4000", "search p50 ms")


def readme(res: Results, command: str) -> str:
    m, rev = res.machine, res.machine["revision"]
    title = f"# Code search benchmark, {res.started_at}"
    lines = [title, "", INTRO.format(n=res.queries["lookups"], path=res.queries["path"]), ""]
    lines += [f"| {' | '.join(HEADS)} |", "|---|---|" + "---:|" * (len(HEADS) - 2)]
    lines += [f"| {' | '.join(cells)} |" for cells in _figure_rows(res)]
    lines += ["", "| arm | files | chunks | ingest s | chunks/s |", "|---|---:|---:|---:|---:|"]
    lines += [f"| {' | '.join(cells)} |" for cells in _ingest_rows(res)]
    reused = [a.name for a in res.arms if a.ingest.get("reused")]
    if reused:
        lines += [
            "",
            f"Reused stores (`--keep`): {', '.join(reused)}; their ingest figures are from "
            "the run that made them, this run only searched them.",
        ]
    names = [a.name for a in res.arms]
    lines += [
        "",
        "## Per lookup",
        "",
        "Rank of the gold file within 10 (`-`: none), then `s` when the first result holds "
        "the definition and `v` when it is visible at 4,000 characters.",
        "",
        "| lookup | style | query | " + " | ".join(names) + " |",
        "|---|---|---|" + "---|" * len(names),
    ]
    by_arm = [{s.id: s for s in a.lookups} for a in res.arms]
    for s in res.arms[0].lookups if res.arms else []:
        cells = []
        for found in by_arm:
            one = found[s.id]
            marks = ("s" if one.symbol_top1 else "") + ("v" if one.visible else "")
            cells.append(f"{one.rank or '-'} {marks}".strip())
        query = next(q for q in res.queries["items"] if q["id"] == s.id)["query"]
        lines.append(f"| `{s.id}` | {s.style} | {query} | " + " | ".join(cells) + " |")
    setup = f"- Command: `{command}`"
    lines += [
        "\n## Setup\n",
        setup,
        f"- Code: commit `{rev.get('commit', '?')}`"
        + (
            f", with uncommitted changes under imprint/: `{rev['imprint_changes']}`"
            if rev.get("imprint_changes")
            else ""
        )
        + ".",
        f"- Machine: {m['cpus']} CPUs ({m['cpu']}), {m['platform']}, Python {m['python']}; "
        f"load average (1 min) {m['loadavg_start'][0]:.2f} at start, "
        f"{m['loadavg_end'][0]:.2f} at end (shared with other work: p50 and ingest times "
        "are skewed by it).",
        f"- Queries: `{res.queries['path']}` (sha256 `{res.queries['sha256'][:16]}`).",
        "- Fixture: "
        + ", ".join(
            f"{k} {v['version']} ({v['files']} files, sha256 {v['sha256'][:12]})"
            for k, v in res.fixture.items()
        )
        + ".",
        f"- {res.repeats} searches per lookup (the median is p50's); total "
        f"{res.total_seconds:.0f} s.",
        "",
        "Everything, each lookup's top 10 included, is in `results.json`.",
    ]
    return "\n".join(lines) + "\n"


# -- main ---------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Code search quality per lookup style and chunker: top-1, R@5, symbol "
        "top-1, visible at 4,000 characters."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    fix = sub.add_parser("fixture", help="copy the sources at the lookups' versions")
    fix.add_argument("--out", type=Path, required=True, help="a new folder for the fixture")
    fix.add_argument("--zod-tgz", type=Path, help="zod's npm tarball (default: npm pack)")
    fix.add_argument("--queries", type=Path, default=DEFAULT_QUERIES)
    run = sub.add_parser("run", help="ingest the fixture per arm and search the lookups")
    run.add_argument("--fixture", type=Path, required=True, help="a folder `fixture` made")
    run.add_argument("--queries", type=Path, default=DEFAULT_QUERIES)
    run.add_argument("--arms", default="lines,tree", help="comma-separated: lines, tree")
    run.add_argument("--repeats", type=int, default=3, help="searches per lookup (default 3)")
    run.add_argument(
        "--keep",
        type=Path,
        help="keep each arm's data dir under KEEP/<arm> and reuse one already there (its "
        "ingest is not re-run: for ranking changes, not chunker changes)",
    )
    run.add_argument("--publish", action="store_true", help="write code-search-<timestamp>/")
    run.add_argument("--out", type=Path, default=PUBLISHED, help="with --publish: where")
    args = parser.parse_args(argv)
    if args.command == "run":
        known = _arms()
        args.arm_list = [a.strip() for a in args.arms.split(",") if a.strip()]
        wrong = [a for a in args.arm_list if a not in known]
        if wrong or not args.arm_list:
            parser.error(f"--arms: {', '.join(wrong) or 'none'}; allowed: {', '.join(known)}")
        if args.repeats < 1:
            parser.error("--repeats: must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    queries_path: Path = args.queries.expanduser().resolve()
    if args.command == "fixture":
        versions, _ = load_lookups(queries_path, None)
        manifest = make_fixture(args.out.expanduser().resolve(), versions, args.zod_tgz)
        print(json.dumps(manifest, indent=2))
        return 0
    fixture = args.fixture.expanduser().resolve()
    versions, _ = load_lookups(queries_path, None)
    manifest = check_fixture(fixture, versions)
    _, lookups = load_lookups(queries_path, fixture)
    raw = json.loads(queries_path.read_text(encoding="utf-8"))
    res = Results(
        started_at=common.utc_now(),
        command=[sys.executable, *sys.argv],
        machine=common.machine(PACKAGES, cpu=common.cpu_name(), revision=common.imprint_revision()),
        config={},
        fixture=manifest["projects"],
        queries={
            "path": str(common.relative(queries_path)),
            "sha256": hashlib.sha256(queries_path.read_bytes()).hexdigest(),
            "lookups": len(lookups),
            "items": raw["lookups"],
        },
        method={
            "search": f"search(ActorReads(runtime), SearchArgs(query, limit={LIMIT}, "
            "mode='hybrid')); untimed warm-up first",
            "visible": f"format_search(rows, {BUDGET}) shows a block of the gold file whose "
            "text holds `defines`",
        },
        repeats=args.repeats,
    )
    known = _arms()
    projects = list(manifest["projects"])
    for name in args.arm_list:
        res.arms.append(
            run_arm(name, known[name], fixture, projects, lookups, args.repeats, args.keep)
        )
    res.total_seconds = common.elapsed()
    common.conclude(res, table, readme if args.publish else None, args.out, "code-search")
    return 0


if __name__ == "__main__":
    sys.exit(main())
