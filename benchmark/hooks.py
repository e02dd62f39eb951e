"""Hook latency as a client sees it: each round spawns `imprint hook EVENT --client
claude-code` with the client's JSON event on stdin and times it from spawn to exit.

- session start, daemon warm: the daemon is up; the briefing of a small project is asked;
- session start, cold: no daemon runs (each round stops it first): the hook starts one, and
  answers within `hooks.timeout_ms.session_start` or prints nothing (`answered` counts the
  rounds that printed the briefing);
- capture hand-off: `session-end` of a short transcript, spawn to exit (the capture itself
  happens afterwards, in the daemon);
- a 5 MB transcript: the hand-off's time against the time until the daemon has captured it
  (its capture state reaches the transcript's end), so the hook does not wait for it;
- sessions in a row: each a session start, a stop and a session end of a fresh transcript;
  the processes with this data dir in their environment, and the daemon's thread count,
  before and after (once every capture is done).

    python -m benchmark.hooks [--cold 5] [--warm 20] [--handoffs 20] [--sessions 200]

The figures go to stdout with the load average before and after; progress to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchmark._common import Latency, data_dir, latency, note
from imprint.hooks.install import imprint_executable

__all__ = ["HookBench", "measure_hooks"]

IMPRINT = [imprint_executable()]  # what `imprint hooks install` writes into a client's hooks
PROJECT = "hookbench"
SEED = (
    ("We decided to keep the sightings in SQLite, not CSV files.", "decision"),
    ("Bug: the importer dropped rows with a trailing tab; fixed by stripping fields.", "bug"),
    ("Bird names are written in lower case.", "preference"),
)
BIG_BYTES = 5 * 1024 * 1024


@dataclass
class HookBench:
    loadavg_before: list[float]
    loadavg_after: list[float] = field(default_factory=list)
    start_warm: Latency | None = None
    start_cold: Latency | None = None
    cold_answered: str = ""
    handoff: Latency | None = None
    big_handoff_ms: float = 0.0
    big_captured_ms: float = 0.0
    sessions: int = 0
    sessions_hooks: Latency | None = None
    processes_before: list[int] = field(default_factory=list)
    processes_after: list[int] = field(default_factory=list)
    threads_before: int = 0
    threads_after: int = 0


class _Transcript:
    """A Claude Code transcript (`.jsonl`): a prompt, an assistant turn with a Bash call
    and its result, per `turn`."""

    def __init__(self, folder: Path, cwd: Path) -> None:
        self.session_id = str(uuid.uuid4())
        self.path = folder / f"{self.session_id}.jsonl"
        self.cwd = cwd
        self.path.touch()

    def _line(self, kind: str, content: Any) -> str:
        role = "assistant" if kind == "assistant" else "user"
        obj = {
            "type": kind,
            "sessionId": self.session_id,
            "cwd": str(self.cwd),
            "uuid": str(uuid.uuid4()),
            "message": {"role": role, "content": content},
        }
        return json.dumps(obj) + "\n"

    def turn(self, n: int, output: str = "") -> None:
        call = f"toolu_{uuid.uuid4().hex[:12]}"
        lines = [
            self._line("user", f"step {n}: list the sightings of the day"),
            self._line(
                "assistant",
                [
                    {"type": "text", "text": f"Listing them (step {n})."},
                    {"type": "tool_use", "id": call, "name": "Bash", "input": {"command": "ls"}},
                ],
            ),
            self._line(
                "user",
                [{"type": "tool_result", "tool_use_id": call, "content": output or "ok"}],
            ),
        ]
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write("".join(lines))

    def event(self, name: str) -> dict[str, str]:
        return {
            "session_id": self.session_id,
            "transcript_path": str(self.path),
            "cwd": str(self.cwd),
            "hook_event_name": name,
        }


def _hook(env: dict[str, str], event: str, payload: dict[str, str]) -> tuple[float, str]:
    """One hook process, spawn to exit: (seconds, what it printed)."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        [*IMPRINT, "hook", event, "--client", "claude-code"],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=env,
        timeout=60,
        check=True,
    )
    return time.perf_counter() - t0, proc.stdout.decode()


def _stop(env: dict[str, str]) -> None:
    subprocess.run([*IMPRINT, "stop"], env=env, capture_output=True, timeout=120, check=True)


def _daemon_pid(root: Path) -> int:
    return int(json.loads((root / "run" / "daemon.json").read_text())["pid"])


def _threads(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    return 0


def _ours(root: Path) -> list[int]:
    """Live processes with this data dir in their environment (the hooks, the daemon)."""
    marker = f"IMPRINT_DATA_DIR={root}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue  # gone, or not ours to read
    return sorted(found)


def _wait(done: Callable[[], bool], what: str, seconds: float = 300) -> float:
    """Seconds until `done()` holds (another process's background work: polled)."""
    t0 = time.perf_counter()
    while not done():
        if time.perf_counter() - t0 > seconds:
            raise RuntimeError(f"{what}: not done after {seconds:.0f} s")
        time.sleep(0.01)
    return time.perf_counter() - t0


def _captured(root: Path, transcript: _Transcript) -> bool:
    path = root / "capture" / "sessions" / f"{transcript.session_id}.json"
    try:
        offset = int(json.loads(path.read_text())["offset"])
    except (OSError, ValueError, KeyError):
        return False
    return offset == transcript.path.stat().st_size


def _seed(root: Path) -> None:
    from imprint.actors.lifecycle import running
    from imprint.config import load_config
    from imprint.writes.gateway import Writes
    from imprint.writes.memories import store_memory

    with running(root, load_config(root)) as runtime:
        writes = Writes(runtime)
        for content, kind in SEED:
            store_memory(writes, content, project=PROJECT, type=kind)


def measure_hooks(root: Path, cold: int, warm: int, handoffs: int, sessions: int) -> HookBench:
    env = {**os.environ, "IMPRINT_DATA_DIR": str(root), "IMPRINT_SERVER_IDLE_EXIT_SEC": "600"}
    project = root.parent / f"{root.name}-{PROJECT}" / PROJECT
    project.mkdir(parents=True, exist_ok=True)
    transcripts = root.parent / f"{root.name}-transcripts"
    transcripts.mkdir(exist_ok=True)
    start = {"cwd": str(project), "hook_event_name": "SessionStart", "session_id": "bench"}
    res = HookBench(loadavg_before=list(os.getloadavg()))
    _seed(root)

    samples, answered = [], 0
    for n in range(cold):
        _stop(env)
        took, out = _hook(env, "session-start", start)
        samples.append(took)
        answered += bool(out)
        note(f"hooks: cold session start {n + 1}/{cold}: {took * 1000:.0f} ms")
    res.start_cold = latency(samples) if samples else None
    res.cold_answered = f"{answered}/{cold}"
    _hook(env, "session-start", start)  # the daemon the warm rounds find
    _wait(lambda: bool(_hook(env, "session-start", start)[1]), "a warm daemon")
    samples = []
    for _ in range(warm):
        took, out = _hook(env, "session-start", start)
        if not out:
            raise RuntimeError("a warm session start printed no briefing")
        samples.append(took)
    res.start_warm = latency(samples)
    note(f"hooks: warm session start p95 {res.start_warm.p95_ms:.0f} ms")

    samples = []
    for _ in range(handoffs):
        transcript = _Transcript(transcripts, project)
        transcript.turn(0)
        samples.append(_hook(env, "session-end", transcript.event("SessionEnd"))[0])
    res.handoff = latency(samples)
    note(f"hooks: capture hand-off p95 {res.handoff.p95_ms:.0f} ms")

    big = _Transcript(transcripts, project)
    n = 0
    while big.path.stat().st_size < BIG_BYTES:
        # Mostly tool output, as a long session's transcript is (files read, logs shown):
        # what capture trims away.
        big.turn(n, output=f"sighting {n}: " + "heron, egret, kestrel; " * 2000)
        n += 1
    t0 = time.perf_counter()
    took, _ = _hook(env, "session-end", big.event("SessionEnd"))
    res.big_handoff_ms = took * 1000
    _wait(lambda: _captured(root, big), "the 5 MB capture")
    res.big_captured_ms = (time.perf_counter() - t0) * 1000
    note(
        f"hooks: 5 MB: hand-off {res.big_handoff_ms:.0f} ms, "
        f"captured after {res.big_captured_ms:.0f} ms"
    )

    daemon = _daemon_pid(root)
    res.processes_before, res.threads_before = _ours(root), _threads(daemon)
    samples, last = [], big
    for n in range(sessions):
        last = _Transcript(transcripts, project)
        samples.append(_hook(env, "session-start", {**start, "session_id": last.session_id})[0])
        last.turn(0)
        samples.append(_hook(env, "stop", last.event("Stop"))[0])
        last.turn(1)
        samples.append(_hook(env, "session-end", last.event("SessionEnd"))[0])
        if (n + 1) % 50 == 0:
            note(f"hooks: {n + 1}/{sessions} sessions")
    final = last
    _wait(lambda: _captured(root, final), "the last session's capture")
    res.sessions = sessions
    res.sessions_hooks = latency(samples) if samples else None
    res.processes_after, res.threads_after = _ours(root), _threads(daemon)
    res.loadavg_after = list(os.getloadavg())
    _stop(env)
    return res


def _row(name: str, lat: Latency | None) -> str:
    if lat is None:
        return f"  {name:34} -"
    return f"  {name:34} p50 {lat.p50_ms:6.0f} ms  p95 {lat.p95_ms:6.0f} ms  ({lat.queries} runs)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cold", type=int, default=5, help="session starts, no daemon (5)")
    parser.add_argument("--warm", type=int, default=20, help="session starts, daemon up (20)")
    parser.add_argument("--handoffs", type=int, default=20, help="capture hand-offs (20)")
    parser.add_argument("--sessions", type=int, default=200, help="sessions in a row (200)")
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--json", action="store_true", help="the figures as JSON too")
    args = parser.parse_args()
    if not (0 <= args.cold <= 50 and 1 <= args.warm <= 500 and 1 <= args.handoffs <= 500):
        raise SystemExit("--cold: 0-50; --warm and --handoffs: 1-500")
    if not 0 <= args.sessions <= 2000:
        raise SystemExit("--sessions: 0-2000")
    with data_dir(args.data_dir, "imprint-hooks-") as root:
        res = measure_hooks(root, args.cold, args.warm, args.handoffs, args.sessions)
    print(f"imprint hook latency, spawn to exit (load average {res.loadavg_before} -> "
          f"{res.loadavg_after})")  # fmt: skip
    print(_row("session start, daemon warm", res.start_warm))
    print(_row(f"session start, cold ({res.cold_answered} briefed)", res.start_cold))
    print(_row("capture hand-off (session end)", res.handoff))
    print(
        f"  5 MB transcript: the hook exited after {res.big_handoff_ms:.0f} ms; "
        f"the daemon had captured it {res.big_captured_ms:.0f} ms after the spawn"
    )
    print(_row(f"{res.sessions} sessions in a row, each hook", res.sessions_hooks))
    print(
        f"  processes with this data dir: {len(res.processes_before)} before, "
        f"{len(res.processes_after)} after; daemon threads: {res.threads_before} before, "
        f"{res.threads_after} after"
    )
    if args.json:
        print(json.dumps(asdict(res), indent=1))


if __name__ == "__main__":
    main()
