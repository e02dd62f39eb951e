"""Hook latency as a client sees it: each round spawns the hook command `imprint hooks
install` writes (`python -I -S .../imprint/hooks/launcher.py EVENT --client claude-code`)
with the client's JSON event on stdin and times it from spawn to exit.

Method.
- session start, cold: no daemon runs (before each round the last one is stopped and the
  one the round before started in the background has come up and been stopped): the hook
  briefs from the store's SQLite file and starts a daemon without waiting for it
  (`briefed` counts the rounds that printed the briefing; `daemon up` is how long after the
  spawn that background daemon owned the data dir);
- session start, daemon warm: the daemon is up; the briefing of a small project is asked;
- capture hand-off: `session-end` of a short transcript, spawn to exit (the capture itself
  happens afterwards, in the daemon); in the same rounds, taking turns: the same hook
  through the console script (`imprint hook ...`, through `site`), and the interpreter's
  floor, `python -c pass` and `python -I -S -c pass`;
- a 5 MB transcript: the hand-off's time against the time until the daemon has captured it
  (its capture state reaches the transcript's end), so the hook does not wait for it;
- sessions in a row: each a session start, a stop and a session end of a fresh transcript;
  the processes with this data dir in their environment, and the daemon's threads (by
  name), before and after (once every capture is done).
Each section records the load average (1, 5, 15 min) at its start and end.

    python -m benchmark.hooks [--cold 5] [--warm 20] [--handoffs 20] [--sessions 200] [--publish]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmark._common import (
    PUBLISHED,
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
from imprint.hooks.install import hook_launcher
from imprint.hooks.mcp_entry import imprint_executable

__all__ = ["HookBench", "measure_hooks"]

LAUNCHER = hook_launcher()  # what `imprint hooks install` writes into a client's hooks
CONSOLE = [imprint_executable(), "hook"]  # the console script, through `site`
FLOOR = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "python -I -S -c pass": [sys.executable, "-I", "-S", "-c", "pass"],
}
PROJECT = "hookbench"
SEED = (
    ("We decided to keep the sightings in SQLite, not CSV files.", "decision"),
    ("Bug: the importer dropped rows with a trailing tab; fixed by stripping fields.", "bug"),
    ("Bird names are written in lower case.", "preference"),
)
BIG_BYTES = 5 * 1024 * 1024


@dataclass
class HookBench(Run):
    revision: dict[str, Any] = field(default_factory=dict)
    loads: dict[str, list[list[float]]] = field(default_factory=dict)  # section: start, end
    start_cold: Latency | None = None
    cold_answered: str = ""
    cold_daemon_up: Latency | None = None
    start_warm: Latency | None = None
    handoff: Latency | None = None
    handoff_console: Latency | None = None
    floor: dict[str, Latency] = field(default_factory=dict)
    big_handoff_ms: float = 0.0
    big_captured_ms: float = 0.0
    sessions: int = 0
    sessions_hooks: Latency | None = None
    processes_before: list[int] = field(default_factory=list)
    processes_after: list[int] = field(default_factory=list)
    threads_before: dict[str, int] = field(default_factory=dict)
    threads_after: dict[str, int] = field(default_factory=dict)
    threads_every_50: list[int] = field(default_factory=list)


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


def _spawn(argv: Sequence[str], env: dict[str, str], payload: object) -> tuple[float, str]:
    """One process, spawn to exit: (seconds, what it printed)."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        list(argv),
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=env,
        timeout=60,
        check=True,
    )
    return time.perf_counter() - t0, proc.stdout.decode()


def _hook(env: dict[str, str], event: str, payload: dict[str, str]) -> tuple[float, str]:
    return _spawn([*LAUNCHER, event, "--client", "claude-code"], env, payload)


def _stop(env: dict[str, str]) -> None:
    subprocess.run([*CONSOLE[:1], "stop"], env=env, capture_output=True, timeout=120, check=True)


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


def _daemon_pid(root: Path) -> int:
    try:
        pid = int(json.loads((root / "run" / "daemon.json").read_text())["pid"])
    except (OSError, ValueError, KeyError):
        return 0
    return pid if _alive(pid) else 0


def _spawned_pid(root: Path) -> int:
    try:
        return int(json.loads((root / "run" / "spawned.json").read_text())["pid"])
    except (OSError, ValueError, KeyError):
        return 0


def _threads(pid: int) -> dict[str, int]:
    """The daemon's threads by name (a count per name)."""
    names: Counter[str] = Counter()
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            names[(task / "comm").read_text().strip()] += 1
        except OSError:
            continue
    return dict(sorted(names.items()))


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


class _Section:
    """The load average at a section's start and end."""

    def __init__(self, res: HookBench, name: str) -> None:
        self.res, self.name = res, name

    def __enter__(self) -> None:
        self.res.loads[self.name] = [list(os.getloadavg())]

    def __exit__(self, *exc: object) -> None:
        self.res.loads[self.name].append(list(os.getloadavg()))


def _cold_rounds(res: HookBench, root: Path, env: dict[str, str], start: dict[str, str]) -> None:
    samples, up, answered = [], [], 0
    for n in range(res.config["cold"]):
        _stop(env)
        took, out = _hook(env, "session-start", start)
        samples.append(took)
        answered += bool(out)
        # The daemon it started in the background: up (owning the data dir) when?
        up.append(took + _wait(lambda: _daemon_pid(root) == _spawned_pid(root), "the daemon"))
        note(f"hooks: cold session start {n + 1}: {took * 1000:.0f} ms, daemon up {up[-1]:.1f} s")
    res.start_cold = latency(samples) if samples else None
    res.cold_daemon_up = latency(up) if up else None
    res.cold_answered = f"{answered}/{len(samples)}"


def _handoff_rounds(res: HookBench, env: dict[str, str], transcripts: Path, cwd: Path) -> None:
    launched: list[float] = []
    console: list[float] = []
    floor: dict[str, list[float]] = {name: [] for name in FLOOR}
    for _ in range(res.config["handoffs"]):
        for via, samples in ((LAUNCHER, launched), (CONSOLE, console)):
            transcript = _Transcript(transcripts, cwd)
            transcript.turn(0)
            argv = [*via, "session-end", "--client", "claude-code"]
            samples.append(_spawn(argv, env, transcript.event("SessionEnd"))[0])
        for name, argv in FLOOR.items():
            floor[name].append(_spawn(argv, env, {})[0])
    res.handoff, res.handoff_console = latency(launched), latency(console)
    res.floor = {name: latency(samples) for name, samples in floor.items()}
    note(f"hooks: capture hand-off p95 {res.handoff.p95_ms:.0f} ms")


def measure_hooks(res: HookBench, root: Path) -> None:
    env = {**os.environ, "IMPRINT_DATA_DIR": str(root), "IMPRINT_SERVER_IDLE_EXIT_SEC": "600"}
    project = root.parent / f"{root.name}-{PROJECT}" / PROJECT
    project.mkdir(parents=True, exist_ok=True)
    transcripts = root.parent / f"{root.name}-transcripts"
    transcripts.mkdir(exist_ok=True)
    start = {"cwd": str(project), "hook_event_name": "SessionStart", "session_id": "bench"}
    _seed(root)

    with _Section(res, "cold"):
        _cold_rounds(res, root, env, start)
    _hook(env, "session-start", start)  # the daemon the warm rounds find
    _wait(lambda: bool(_daemon_pid(root)), "a warm daemon")
    # `imprint status` beside a daemon answers once its store has started.
    subprocess.run([CONSOLE[0], "status"], env=env, capture_output=True, timeout=300)
    _hook(env, "session-start", start)  # its first briefing imports the briefing's code
    with _Section(res, "warm"):
        samples = []
        for _ in range(res.config["warm"]):
            took, out = _hook(env, "session-start", start)
            if not out:
                raise RuntimeError("a warm session start printed no briefing")
            samples.append(took)
        res.start_warm = latency(samples)
    note(f"hooks: warm session start p95 {res.start_warm.p95_ms:.0f} ms")

    with _Section(res, "handoff"):
        _handoff_rounds(res, env, transcripts, project)

    big = _Transcript(transcripts, project)
    n = 0
    while big.path.stat().st_size < BIG_BYTES:
        # Mostly tool output, as a long session's transcript is (files read, logs shown):
        # what capture trims away.
        big.turn(n, output=f"sighting {n}: " + "heron, egret, kestrel; " * 2000)
        n += 1
    with _Section(res, "5mb"):
        t0 = time.perf_counter()
        took, _ = _hook(env, "session-end", big.event("SessionEnd"))
        res.big_handoff_ms = took * 1000
        _wait(lambda: _captured(root, big), "the 5 MB capture")
        res.big_captured_ms = (time.perf_counter() - t0) * 1000
    note(f"hooks: 5 MB: hand-off {res.big_handoff_ms:.0f} ms, captured {res.big_captured_ms:.0f}")

    daemon = _daemon_pid(root)
    res.processes_before, res.threads_before = _ours(root), _threads(daemon)
    samples, last = [], big
    with _Section(res, "sessions"):
        for n in range(res.config["sessions"]):
            last = _Transcript(transcripts, project)
            start_n = {**start, "session_id": last.session_id}
            samples.append(_hook(env, "session-start", start_n)[0])
            last.turn(0)
            samples.append(_hook(env, "stop", last.event("Stop"))[0])
            last.turn(1)
            samples.append(_hook(env, "session-end", last.event("SessionEnd"))[0])
            if (n + 1) % 50 == 0:
                res.threads_every_50.append(sum(_threads(daemon).values()))
                note(f"hooks: {n + 1} sessions, daemon threads {res.threads_every_50[-1]}")
        final = last
        _wait(lambda: _captured(root, final), "the last session's capture")
    if _daemon_pid(root) != daemon:
        raise RuntimeError("the daemon changed during the sessions")
    res.sessions = res.config["sessions"]
    res.sessions_hooks = latency(samples) if samples else None
    res.processes_after, res.threads_after = _ours(root), _threads(daemon)
    _stop(env)


def _row(name: str, lat: Latency | None) -> str:
    if lat is None:
        return f"  {name:40} -"
    return f"  {name:40} p50 {lat.p50_ms:6.0f} ms  p95 {lat.p95_ms:6.0f} ms  ({lat.queries} runs)"


def _load(res: HookBench, section: str) -> str:
    pair = res.loads.get(section)
    if not pair or len(pair) < 2:
        return ""
    return f"    load {pair[0][0]:.1f} -> {pair[1][0]:.1f}"


def table(res: HookBench) -> str:
    up = res.cold_daemon_up
    lines = [
        title(res, "hooks", ""),
        "hook latency, spawn to exit (load: 1-minute average at the section's start -> end)",
        _row(f"session start, cold ({res.cold_answered} briefed)", res.start_cold)
        + _load(res, "cold"),
        f"    (the daemon it started in the background owned the data dir after p50 "
        f"{up.p50_ms / 1000 if up else 0:.1f} s)",
        _row("session start, daemon warm", res.start_warm) + _load(res, "warm"),
        _row("capture hand-off (session end)", res.handoff) + _load(res, "handoff"),
        _row("  the same through `imprint hook`", res.handoff_console),
        *(_row(f"  {name}", lat) for name, lat in res.floor.items()),
        f"  5 MB transcript: the hook exited after {res.big_handoff_ms:.0f} ms; the daemon had "
        f"captured it {res.big_captured_ms:.0f} ms after the spawn" + _load(res, "5mb"),
        _row(f"{res.sessions} sessions in a row, each hook", res.sessions_hooks)
        + _load(res, "sessions"),
        f"  processes with this data dir: {len(res.processes_before)} before, "
        f"{len(res.processes_after)} after; daemon threads: "
        f"{sum(res.threads_before.values())} before, {sum(res.threads_after.values())} after "
        f"(every 50 sessions: {res.threads_every_50})",
    ]
    if res.threads_before != res.threads_after:
        lines.append(f"  threads by name before: {res.threads_before}")
        lines.append(f"  threads by name after:  {res.threads_after}")
    return "\n".join(lines)


def readme(res: HookBench, command: str) -> str:
    return run_readme(
        "Hooks: latency of each client hook, spawn to exit",
        res,
        command,
        method_of(__doc__),
        table(res),
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--cold", type=int, default=5, help="session starts, no daemon (5)")
    parser.add_argument("--warm", type=int, default=20, help="session starts, daemon up (20)")
    parser.add_argument("--handoffs", type=int, default=20, help="capture hand-offs (20)")
    parser.add_argument("--sessions", type=int, default=200, help="sessions in a row (200)")
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=PUBLISHED)
    parser.add_argument("--publish", action="store_true", help="publish the run under --out")
    args = parser.parse_args(argv)
    if not (0 <= args.cold <= 50 and 1 <= args.warm <= 500 and 1 <= args.handoffs <= 500):
        parser.error("--cold: 0-50; --warm and --handoffs: 1-500")
    if not 0 <= args.sessions <= 2000:
        parser.error("--sessions: 0-2000")
    res = HookBench(
        started_at=utc_now(),
        command=list(sys.argv),
        machine=machine(["pydantic"]),
        config={k: getattr(args, k) for k in ("cold", "warm", "handoffs", "sessions")},
        revision=imprint_revision(),
    )
    with data_dir(args.data_dir, "imprint-hooks-") as root:
        measure_hooks(res, root)
    conclude(res, table, readme if args.publish else None, args.out, "hooks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
