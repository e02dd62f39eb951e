"""Handshake latency as a stdio MCP client sees it: spawn `imprint serve`, send `initialize`,
time the reply; then tools/list and a first search. And the same for a client of the 2026
revision (2026-07-28), which sends `server/discover` and then tools/list, each with its
`_meta` envelope, and no `initialize`.

Cold: no daemon runs (each round stops it first), so the bridge starts one. Warm: the daemon
is already up, only the bridge process is new. Each round is a fresh process, as an
assistant starts one per session. The client sends each request as soon as the previous
reply came (initialize, tools/list, then search), and times:

- initialize: spawn -> the `initialize` reply;
- tools_list: the `initialize` reply -> the tools/list reply;
- first_search: sending the search -> its result;
- init_to_search ("first search after a cold start"): the `initialize` reply -> the first
  search's result, tools/list included, as a client that lists tools first sees it;
- spawn_to_search: spawn -> the first search's result.

A 2026 client (`--modern` rounds cold, as many warm) times:

- discover: spawn -> the `server/discover` reply;
- tools_list ("a 2026 client's first tools/list"): spawn -> the tools/list reply, sent as
  soon as the discover reply came;
- spawn_to_search: spawn -> the first search's result (sent on the tools/list reply).

    python -m benchmark.handshake [--cold 5] [--warm 10] [--modern 3] \
        [--serve "python -m imprint.launch serve"]...

`--serve` names the command to time; given more than once, each is timed in turn on the same
store, in one run (a before/after comparison: another checkout on PYTHONPATH, e.g.
`--serve "env PYTHONPATH=../old python -P -m imprint.launch serve"`; `-P` keeps this
folder's own `imprint` off the path). Used by benchmark/scale.py too.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmark._common import DEFAULT_CORPUS, Latency, data_dir, latency, note

__all__ = ["Handshake", "measure_handshake", "prepare_store"]

DEFAULT_SERVE = f"{sys.executable} -m imprint.launch serve"
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "handshake-benchmark", "version": "1"},
    },
}
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "handshake-benchmark", "version": "1"},
}
QUERY = "how does the writer keep the two indexes consistent"


@dataclass
class Round:
    """One client's times, each from a named moment to another (seconds)."""

    initialize_s: float  # spawn of `imprint serve` -> the `initialize` reply
    tools_list_s: float  # the `initialize` reply -> the tools/list reply
    first_search_s: float  # sending the search (after tools/list) -> its result
    init_to_search_s: float  # the `initialize` reply -> the first search's result
    spawn_to_search_s: float  # spawn -> the first search's result


@dataclass
class ModernRound:
    """One 2026 client's times (seconds), each from the spawn of `imprint serve`."""

    discover_s: float  # -> the `server/discover` reply
    tools_list_s: float  # -> the first tools/list reply (sent on the discover reply)
    spawn_to_search_s: float  # -> the first search's result (sent on the tools/list reply)


@dataclass
class Handshake:
    serve: str
    cold: list[Round] = field(default_factory=list)
    warm: list[Round] = field(default_factory=list)
    modern_cold: list[ModernRound] = field(default_factory=list)
    modern_warm: list[ModernRound] = field(default_factory=list)
    loadavg: list[float] = field(default_factory=list)

    def summary(self) -> dict[str, dict[str, Latency]]:
        """The legacy (initialize) client's times, cold and warm."""
        return _summary((("cold", self.cold), ("warm", self.warm)), Round)

    def modern_summary(self) -> dict[str, dict[str, Latency]]:
        """The 2026 client's times, cold and warm."""
        return _summary((("cold", self.modern_cold), ("warm", self.modern_warm)), ModernRound)


def _summary(
    kinds: tuple[tuple[str, list[Any]], ...], shape: type[Round | ModernRound]
) -> dict[str, dict[str, Latency]]:
    keys = list(shape.__dataclass_fields__)
    return {
        name: {key: latency([getattr(r, key) for r in rounds]) for key in keys}
        for name, rounds in kinds
        if rounds
    }


class _Client:
    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def reply(self, rid: int) -> dict[str, Any]:
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"imprint serve closed before answering request {rid}")
            msg = json.loads(line)
            if msg.get("id") == rid:
                if "error" in msg:
                    raise RuntimeError(f"request {rid}: {msg['error']}")
                return dict(msg)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def _search(client: _Client, rid: int, envelope: dict[str, Any] | None = None) -> float:
    """Send the search, wait for its result; the moment it came."""
    params: dict[str, Any] = {"name": "search", "arguments": {"query": QUERY, "limit": 5}}
    if envelope is not None:
        params["_meta"] = envelope
    client.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})
    result = client.reply(rid)["result"]
    if result.get("isError"):
        raise RuntimeError(f"search failed: {result['content'][0]['text']}")
    return time.perf_counter()


def _round(command: list[str], env: dict[str, str]) -> Round:
    t0 = time.perf_counter()
    client = _Client(command, env)
    try:
        client.send(INIT)
        client.reply(1)
        t_init = time.perf_counter()
        client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        client.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        client.reply(2)
        t_list = time.perf_counter()
        t_search = _search(client, 3)
    finally:
        client.close()
    return Round(t_init - t0, t_list - t_init, t_search - t_list, t_search - t_init, t_search - t0)


def _enveloped(rid: int, method: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": {"_meta": ENVELOPE}}


def _modern_round(command: list[str], env: dict[str, str]) -> ModernRound:
    t0 = time.perf_counter()
    client = _Client(command, env)
    try:
        client.send(_enveloped(1, "server/discover"))
        client.reply(1)
        t_discover = time.perf_counter()
        client.send(_enveloped(2, "tools/list"))
        client.reply(2)
        t_list = time.perf_counter()
        t_search = _search(client, 3, ENVELOPE)
    finally:
        client.close()
    return ModernRound(t_discover - t0, t_list - t0, t_search - t0)


def _stop(env: dict[str, str]) -> None:
    subprocess.run(
        [sys.executable, "-m", "imprint.cli", "stop"],
        env=env,
        capture_output=True,
        timeout=120,
        check=True,
    )


def prepare_store(root: Path, corpus: Path, files: int) -> None:
    """A small store to search: the first `files` Markdown files of the corpus."""
    from imprint.actors.lifecycle import running
    from imprint.config import load_config
    from imprint.writes.files import ingest_path

    picked = sorted(corpus.rglob("*.md"))[:files]
    staging = root.parent / f"{root.name}-files"
    staging.mkdir(exist_ok=True)
    for n, path in enumerate(picked):
        (staging / f"{n:03d}-{path.name}").write_bytes(path.read_bytes())
    with running(root, load_config(root)) as runtime:
        ingest_path(runtime, staging, project="handshake", roots=[staging])


def measure_handshake(root: Path, serve: str, cold: int, warm: int, modern: int = 0) -> Handshake:
    """`cold` rounds with no daemon, then `warm` rounds with the daemon left running; and
    `modern` rounds of each kind for a 2026 client."""
    env = {**os.environ, "IMPRINT_DATA_DIR": str(root), "IMPRINT_LOG_FILE": "false"}
    command = shlex.split(serve)
    res = Handshake(serve=serve, loadavg=list(os.getloadavg()))
    _stop(env)
    for n in range(cold):
        res.cold.append(_round(command, env))
        note(f"handshake: cold {n + 1}/{cold}: {res.cold[-1]}")
        _stop(env)
    for n in range(modern):
        res.modern_cold.append(_modern_round(command, env))
        note(f"handshake: 2026 client cold {n + 1}/{modern}: {res.modern_cold[-1]}")
        _stop(env)
    if warm or modern:
        _round(command, env)  # starts the daemon the warm rounds find
        for n in range(warm):
            res.warm.append(_round(command, env))
            note(f"handshake: warm {n + 1}/{warm}: {res.warm[-1]}")
        for n in range(modern):
            res.modern_warm.append(_modern_round(command, env))
            note(f"handshake: 2026 client warm {n + 1}/{modern}: {res.modern_warm[-1]}")
        _stop(env)
    res.loadavg += list(os.getloadavg())
    return res


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cold", type=int, default=5, help="rounds with no daemon (5)")
    parser.add_argument("--warm", type=int, default=10, help="rounds with the daemon up (10)")
    parser.add_argument(
        "--modern", type=int, default=3, help="2026 client rounds, cold and warm each (3)"
    )
    parser.add_argument(
        "--serve", action="append", help=f"the command to time, once or more ({DEFAULT_SERVE})"
    )
    parser.add_argument("--files", type=int, default=20, help="corpus files in the store (20)")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--data-dir", type=Path, default=None)
    args = parser.parse_args()
    if not 0 <= args.cold <= 50 or not 0 <= args.warm <= 200 or not 0 <= args.modern <= 50:
        raise SystemExit("--cold: 0-50 rounds; --warm: 0-200 rounds; --modern: 0-50 rounds")
    with data_dir(args.data_dir, "imprint-handshake-") as root:
        prepare_store(root, args.corpus, args.files)
        runs = [
            measure_handshake(root, serve, args.cold, args.warm, args.modern)
            for serve in args.serve or [DEFAULT_SERVE]
        ]
    for res in runs:
        print(f"imprint serve handshake  ({res.serve}; load average {res.loadavg})")
        for client, summary in (("legacy", res.summary()), ("2026", res.modern_summary())):
            for kind, rows in summary.items():
                for key, lat in rows.items():
                    print(
                        f"  {client:6} {kind:4} {key:18} p50 {lat.p50_ms:7.0f} ms  "
                        f"p95 {lat.p95_ms:7.0f} ms"
                    )


if __name__ == "__main__":
    main()
