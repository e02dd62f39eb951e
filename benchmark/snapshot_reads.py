"""Byte-identity check for refactors: every read tool's output on one data dir, to a file.

    python -m benchmark.snapshot_reads build --data-dir D [--corpus ../shared/corpus]
    python -m benchmark.snapshot_reads snapshot --data-dir D --out before.json
    (change the code)
    python -m benchmark.snapshot_reads snapshot --data-dir D --out after.json
    python -m benchmark.snapshot_reads compare before.json after.json [--also before2.json]

`build` ingests the corpus and adds a few memories and facts through the MCP tools;
`snapshot` calls only read tools through an in-memory MCP session (the interface that a
refactor must keep), so the same script runs against the code before and after a change.
`get_memory`'s `path_context.working_directory` is masked (it names the caller's folder).
A second baseline run (`--also`) shows which calls differ between two runs of the SAME code
(vector search on 2 threads is not bit-for-bit repeatable at the tail of long result lists);
a call counts as identical when it equals any baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

import anyio
from mcp.client import Client

from imprint.actors.lifecycle import Runtime
from imprint.config import load_config
from imprint.server import build_server

HERE = Path(__file__).resolve().parent
DEFAULT_CORPUS = HERE.parent.parent / "shared" / "corpus"
ID = re.compile(r"^\[\d+\] ([0-9a-f]{16}) \|", re.M)
SOURCE = re.compile(r"^\[\d+\] [0-9a-f]{16} \| ([^|]+) \| ([^#|]+)#\d+[^|]* \|", re.M)

MEMORIES = [
    ("We decided to keep one writer per workspace so Chroma and FTS5 never disagree.", "decision"),
    ("Found: pykka futures block the event loop when awaited; use a worker thread.", "finding"),
    ("Bug: the daemon socket was created before its folder's mode was checked.", "bug"),
]
FACTS = [
    ("imprint", "uses", "pykka"),
    ("imprint", "uses", "chromadb"),
    ("recall", "deadline", "30 s"),
]


class Session:
    def __init__(self, runtime: Runtime, cwd: Path, roots: list[Path]) -> None:
        self.server = build_server(runtime, cwd, roots)

    def call(self, tool: str, args: dict[str, Any]) -> tuple[bool, str]:
        async def go() -> tuple[bool, str]:
            async with Client(self.server) as client:
                result = await client.call_tool(tool, args)
                text = "\n".join(getattr(c, "text", "") for c in result.content)
                return bool(result.is_error), text

        return anyio.run(go)


def _runtime(data_dir: Path) -> Runtime:
    os.environ["IMPRINT_DATA_DIR"] = str(data_dir)
    return Runtime(data_dir, load_config(data_dir)).start()


def build(data_dir: Path, corpus: Path) -> None:
    if not corpus.is_dir():
        sys.exit(f"corpus: {corpus} is not a folder; pass --corpus")
    # The session's working directory is the corpus: a relative path given here would be
    # read against it (and refused as outside the allowed roots).
    corpus = corpus.resolve()
    rt = _runtime(data_dir)
    try:
        s = Session(rt, corpus, [corpus])
        for sub in sorted(p for p in corpus.iterdir() if p.is_dir()):
            failed, text = s.call("ingest_path", {"path": str(sub), "project": sub.name})
            print(text, flush=True)
            if failed:
                sys.exit(f"ingest_path {sub}: failed; the store in {data_dir} is incomplete")
        for content, kind in MEMORIES:
            print(s.call("store", {"content": content, "project": "imprint", "type": kind})[1])
        for subject, predicate, obj in FACTS:
            args = {"action": "add", "subject": subject, "predicate": predicate, "object": obj}
            print(s.call("kg_edit", args)[1])
    finally:
        rt.stop()


def _calls(s: Session) -> list[tuple[str, dict[str, Any]]]:
    """The read calls to record; ids and sources come from the store itself."""
    queries = [
        "how do I stop an actor",
        "structured logging processors",
        "MCP server tool registration",
        "mopidy extension config schema",
        "recall merges evidence from several steps",
        "ActorRef.stop",
    ]
    calls: list[tuple[str, dict[str, Any]]] = []
    for q in queries:
        for mode in ("hybrid", "semantic", "lexical"):
            calls.append(("search", {"query": q, "mode": mode}))
        calls.append(("search", {"query": q, "detail": "full"}))
        calls.append(("search", {"query": q, "max_chars": 1200}))
        calls.append(("search", {"query": q, "max_chars": 12000, "limit": 30}))
    calls += [
        ("search", {"query": "actor", "project": "pykka", "limit": 5}),
        ("search", {"query": "logging", "lang": "markdown", "layer": "docs"}),
        ("search", {"query": "writer", "type": "decision"}),
        ("search", {"query": "   "}),
        ("search", {"query": "x", "mode": "fuzzy"}),
        ("search", {"query": "x", "type": "nonsense"}),
        ("search", {"query": "x", "limit": 0}),
        ("search", {"query": "x", "limit": 99, "max_chars": 50}),
        ("search", {"query": "x", "limit": "ten"}),
    ]
    seed = s.call("search", {"query": "actor lifecycle", "limit": 20})[1]
    ids = ID.findall(seed)[:6]
    mem = s.call("search", {"query": "writer per workspace decided", "limit": 3})[1]
    ids += ID.findall(mem)[:2]
    for rid in ids:
        calls.append(("get_memory", {"id": rid}))
        calls.append(("neighbors", {"id": rid}))
        calls.append(("neighbors", {"id": rid, "k": 3}))
        calls.append(("graph_scope", {"scope": f"chunk:{rid}"}))
    calls += [
        ("get_memory", {"id": "0000000000000000"}),
        ("get_memory", {"id": "../etc"}),
        ("neighbors", {"id": "nope!"}),
        ("neighbors", {"id": ids[0] if ids else "x", "k": 99}),
    ]
    listing = s.call("list_sources", {"limit": 200})[1]
    calls.append(("list_sources", {"limit": 200}))
    calls += [
        ("list_sources", {}),
        ("list_sources", {"project": "pykka"}),
        ("list_sources", {"lang": "markdown", "limit": 5}),
        ("list_sources", {"layer": "docs", "limit": 3}),
        ("list_sources", {"limit": 0}),
    ]
    sources: list[tuple[str, str]] = []
    for line in listing.splitlines():
        m = re.match(r"^\s*(\S+)\s+\((\S+?),", line)
        if m:
            sources.append((m.group(1), m.group(2)))
    for project, source in SOURCE.findall(seed):
        sources.append((source.strip(), project.strip()))
    seen: set[tuple[str, str]] = set()
    for source, project in sources[:40]:
        if (source, project) in seen:
            continue
        seen.add((source, project))
        calls.append(("file_summary", {"source": source}))
        calls.append(("file_summary", {"source": source, "project": project}))
        calls.append(("file_chunks", {"source": source}))
        calls.append(("file_chunks", {"source": source, "start": 2, "end": 4, "max_chars": 1200}))
        calls.append(("graph_scope", {"scope": f"source:{source}"}))
    calls += [
        ("file_chunks", {"source": "no/such.md"}),
        ("file_chunks", {"source": ""}),
        ("file_chunks", {"source": "README.md", "start": -1}),
        ("file_chunks", {"source": "README.md", "start": 5, "end": 2}),
        ("file_summary", {"source": "no/such.md"}),
        ("kg_query", {}),
        ("kg_query", {"subject": "imprint"}),
        ("kg_query", {"predicate": "uses", "include_ended": True}),
        ("kg_query", {"subject": "nobody"}),
        ("kg_query", {"limit": 0}),
        ("graph_scope", {}),
        ("graph_scope", {"scope": "root", "depth": 2}),
        ("graph_scope", {"scope": "nonsense"}),
        ("status", {}),
    ]
    for project in ("pykka", "structlog", "mopidy", "python-sdk", "imprint-memory-layer"):
        calls.append(("graph_scope", {"scope": f"project:{project}"}))
        calls.append(("graph_scope", {"scope": f"project:{project}", "depth": 2}))
    for topic in ("actors", "logging", "testing"):
        calls.append(("graph_scope", {"scope": f"topic:{topic}"}))
    questions = [
        "how do I stop an actor and what happens to its mailbox",
        "how are structlog processors chained",
    ]
    for q in questions:
        calls.append(("recall", {"question": q}))
        calls.append(("recall", {"question": q, "max_chars": 1200}))
    plan = [
        {"tool": "search", "args": {"query": "stop an actor"}},
        {"tool": "kg_query", "args": {"subject": "imprint"}},
        {"tool": "list_sources", "args": {"project": "pykka"}},
    ]
    if ids:
        plan.append({"tool": "get_memory", "args": {"id": ids[0]}})
        plan.append({"tool": "neighbors", "args": {"id": ids[0], "k": 3}})
    if sources:
        plan.append({"tool": "file_summary", "args": {"source": sources[0][0]}})
        plan.append({"tool": "file_chunks", "args": {"source": sources[0][0], "end": 2}})
    for budget in (1200, 4000, 12000):
        calls.append(("recall", {"question": "mixed", "plan": plan, "max_chars": budget}))
    calls += [
        ("recall", {"question": "x", "plan": [{"tool": "store", "args": {}}]}),
        ("recall", {"question": "x", "plan": [{"tool": "search", "args": {"nope": 1}}]}),
        ("recall", {"question": "x", "plan": "not json"}),
        ("recall", {"question": "x", "plan": [{"tool": "search", "args": {"query": 5}}]}),
        ("recall", {"question": ""}),
    ]
    return calls


def _mask(tool: str, text: str) -> str:
    if tool == "get_memory":
        text = re.sub(r"working_directory=\S+", "working_directory=<cwd>", text)
    return text


def snapshot(data_dir: Path, out: Path) -> None:
    rt = _runtime(data_dir)
    try:
        s = Session(rt, HERE, [])
        rows = []
        for tool, args in _calls(s):
            is_error, text = s.call(tool, args)
            rows.append({"tool": tool, "args": args, "error": is_error, "text": _mask(tool, text)})
    finally:
        rt.stop()
    out.write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(rows)} calls -> {out}")


def compare(a: Path, b: Path, also: list[Path]) -> int:
    left = json.loads(a.read_text(encoding="utf-8"))
    right = json.loads(b.read_text(encoding="utf-8"))
    others = [json.loads(p.read_text(encoding="utf-8")) for p in also]
    if any(len(x) != len(left) for x in [right, *others]):
        print(f"different call counts: {len(left)} vs {len(right)}")
        return 1
    diffs = unstable = 0
    for i, (x, y) in enumerate(zip(left, right, strict=True)):
        baselines = [x, *(o[i] for o in others)]
        if any(base != x for base in baselines):
            unstable += 1
        if all(base != y for base in baselines):
            diffs += 1
            print(f"DIFF {x['tool']} {json.dumps(x['args'])[:120]}")
            print("  before:", x["text"][:300].replace("\n", "\\n"))
            print("  after: ", y["text"][:300].replace("\n", "\\n"))
    print(f"{len(left)} calls, {diffs} differ ({unstable} already differ between baseline runs)")
    return 1 if diffs else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--data-dir", type=Path, required=True)
    b.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    s = sub.add_parser("snapshot")
    s.add_argument("--data-dir", type=Path, required=True)
    s.add_argument("--out", type=Path, required=True)
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    c.add_argument("--also", type=Path, action="append", default=[], help="another baseline")
    args = parser.parse_args()
    if args.cmd == "build":
        build(args.data_dir, args.corpus)
        return 0
    if args.cmd == "snapshot":
        snapshot(args.data_dir, args.out)
        return 0
    return compare(args.a, args.b, args.also)


if __name__ == "__main__":
    raise SystemExit(main())
