"""Watch mode on a generated git work tree (issue 31): how soon a saved edit is searchable,
what a rescan with nothing changed costs, and a branch switch touching many files indexed
while searches keep answering (their latency beside the idle latency).

    python -m benchmark.watch [--files 5000] [--switch 2000] [--edits 20] [--publish]

Each generated file is small (one chunk), so the chunk count equals the file count; the
embedder's own speed on the same chunks is measured beside the switch's indexing speed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmark._common import (
    REPO,
    Run,
    latency,
    machine,
    note,
    publish,
    shown_command,
    utc_now,
)
from imprint.actors.lifecycle import Runtime
from imprint.config import Config
from imprint.ingest.records import build_records
from imprint.reads import ActorReads
from imprint.reads.search import SearchArgs, search
from imprint.watch import WatchHost
from imprint.watch.host import GROUP_CHUNKS
from imprint.writes.files import ingest_path

WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
]


@dataclass
class WatchResults(Run):
    results: dict[str, Any] = field(default_factory=dict)


def _git(tree: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(tree), "-c", "user.name=b", "-c", "user.email=b@example.com", *args],
        check=True,
        capture_output=True,
    )


def _text(i: int, salt: str) -> str:
    words = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(12))
    return f"# Module {i}\n\nfile{i} {salt} {words}\n"


def _tree(root: Path, files: int, switch: int) -> Path:
    tree = root / "tree"
    for i in range(files):
        folder = tree / f"pkg{i // 100:03}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"m{i:05}.md").write_text(_text(i, "main"))
    _git(tree, "init", "-q", "-b", "main")
    _git(tree, "add", "-A")
    _git(tree, "commit", "-q", "-m", "main")
    _git(tree, "checkout", "-q", "-b", "other")
    for i in range(switch):
        (tree / f"pkg{i // 100:03}" / f"m{i:05}.md").write_text(_text(i, "otherbranch"))
    _git(tree, "commit", "-q", "-am", "other")
    _git(tree, "checkout", "-q", "main")
    return tree


def _rel(i: int) -> str:
    return f"pkg{i // 100:03}/m{i:05}.md"


def _embed_speed(rt: Runtime, texts: list[str]) -> float:
    """Chunks/s of the embedder alone, in groups of the watcher's size."""
    t0 = time.monotonic()
    for at in range(0, len(texts), GROUP_CHUNKS):
        rt.embedder().embed(texts[at : at + GROUP_CHUNKS])
    return len(texts) / (time.monotonic() - t0)


@contextmanager
def _searching(rt: Runtime) -> Iterator[list[float]]:
    """A busy assistant: a hybrid search every 50 ms while the block runs; their times.
    The first starts at once, so even a block shorter than 50 ms has one."""
    times: list[float] = []
    stop = threading.Event()

    def loop() -> None:
        i = 0
        while True:
            times.append(_timed_search(rt, WORDS[i % 12] + " module"))
            i += 1
            if stop.wait(0.05):
                return

    thread = threading.Thread(target=loop)
    thread.start()
    try:
        yield times
    finally:
        stop.set()
        thread.join()


def _lexical(rt: Runtime, word: str) -> int:
    """Hits for `word` (at most 50)."""
    return len(search(ActorReads(rt), SearchArgs(query=word, mode="lexical", limit=50)).hits)


def _timed_search(rt: Runtime, query: str) -> float:
    started = time.perf_counter()
    search(ActorReads(rt), SearchArgs(query=query))
    return time.perf_counter() - started


def run(files: int, switch: int, edits: int) -> dict[str, Any]:
    out: dict[str, Any] = {"files": files, "switch_files": switch, "chunks_per_file": 1}
    with tempfile.TemporaryDirectory(prefix="imprint-watch-") as tmp:
        root = Path(tmp)
        tree = _tree(root, files, switch)
        rt = Runtime(root / "data", Config()).start()
        host = WatchHost(rt.data_dir, lambda _t: rt).start()
        try:
            started = time.monotonic()
            host.add(str(tree))
            watcher = host.watcher(str(tree.resolve()))
            assert watcher is not None
            assert watcher.wait(lambda w: w.batches >= 1, 3600)
            out["initial_index_sec"] = round(time.monotonic() - started, 1)
            note(f"initial index {out['initial_index_sec']} s")
            rescans = []
            for _ in range(3):
                report = ingest_path(rt, tree, group_chunks=256)
                assert report.files == 0, report.summary()
                rescans.append(report.seconds)
            out["no_change_rescan_sec"] = sorted(rescans)[1]
            out["no_change_rescans_sec"] = [round(s, 3) for s in rescans]
            note(f"no-change rescans {out['no_change_rescans_sec']} s")
            idle = []
            for i in range(60):
                idle.append(_timed_search(rt, WORDS[i % 12] + " module"))
                time.sleep(0.05)  # the same pace as during the switch
            out["idle_search"] = latency(idle).__dict__
            seen = []
            for n in range(edits):
                word = f"editmarker{n}x"
                i = files - 1 - n  # a file the branch switch leaves alone
                file = tree / f"pkg{i // 100:03}" / f"m{i:05}.md"
                t0 = time.monotonic()
                file.write_text(_text(i, word))
                while _lexical(rt, word) == 0:
                    time.sleep(0.02)  # polling the product, as a user's search would
                seen.append(time.monotonic() - t0)
            out["edit_searchable"] = latency(seen).__dict__
            note(f"edit searchable {out['edit_searchable']}, load {os.getloadavg()}")
            # The embedder alone on the very texts the switch indexes (as ingest builds
            # them, in the watcher's groups), idle and beside the same search load.
            texts = [
                build_records("tree", _rel(i), _text(i, "otherbranch"))[0].indexed_text
                for i in range(switch)
            ]
            out["embedder_idle_chunks_per_sec"] = round(_embed_speed(rt, texts), 1)
            with _searching(rt) as beside:
                out["embedder_loaded_chunks_per_sec"] = round(_embed_speed(rt, texts), 1)
            out["search_during_embedder"] = latency(beside).__dict__
            note(
                f"embedder alone {out['embedder_idle_chunks_per_sec']} chunks/s idle, "
                f"{out['embedder_loaded_chunks_per_sec']} beside searches"
            )
            batches, indexing = watcher.batches, watcher.indexing_sec
            with _searching(rt) as during:
                t0 = time.monotonic()
                _git(tree, "checkout", "-q", "other")
                assert watcher.wait(
                    lambda w: (
                        w.batches > batches
                        and w.row().pending == 0
                        and _lexical(rt, "otherbranch") >= min(switch, 50)
                    ),
                    3600,
                )
                switch_sec = time.monotonic() - t0
            out["switch_indexed_sec"] = round(switch_sec, 1)
            out["switch_chunks_per_sec"] = round(switch / switch_sec, 1)
            out["switch_batches"] = watcher.batches - batches
            # The batches' ingest alone: the switch less git's checkout, the event delivery
            # and the quiet period the watcher waits for.
            ingest_sec = watcher.indexing_sec - indexing
            out["switch_ingest_sec"] = round(ingest_sec, 1)
            out["switch_ingest_chunks_per_sec"] = round(switch / max(ingest_sec, 1e-6), 1)
            out["search_during_switch"] = latency(during).__dict__
        finally:
            host.stop()
            rt.stop()
    out["switch_vs_embedder_loaded"] = round(
        out["switch_chunks_per_sec"] / out["embedder_loaded_chunks_per_sec"], 2
    )
    out["switch_vs_embedder_idle"] = round(
        out["switch_chunks_per_sec"] / out["embedder_idle_chunks_per_sec"], 2
    )
    return out


def _readme(res: WatchResults) -> str:
    r = res.results
    idle, busy, edit = r["idle_search"], r["search_during_switch"], r["edit_searchable"]
    beside = r["search_during_embedder"]
    return "\n".join(
        [
            f"# Watch mode, {res.started_at}",
            "",
            f"Command: `{' '.join(res.command)}`; load average at start "
            f"{res.machine['loadavg_start']}, at end {r['loadavg_end']} "
            f"({res.machine['cpus']} CPUs, shared with other work).",
            "",
            f"Generated git work tree: {r['files']} files of one chunk each ({r['files']} "
            f"chunks); a branch switch changes {r['switch_files']} of them.",
            "",
            "| measure | value | target |",
            "|---|---|---|",
            f"| saved edit searchable, p50 / p95 ({edit['queries']} edits) | "
            f"{edit['p50_ms'] / 1000:.2f} s / {edit['p95_ms'] / 1000:.2f} s | p95 2 s |",
            f"| no-change rescan (median of 3) | {r['no_change_rescan_sec']:.2f} s | 1.5 s |",
            f"| branch switch indexed | {r['switch_indexed_sec']} s, "
            f"{r['switch_chunks_per_sec']} chunks/s in {r['switch_batches']} batch(es); "
            f"the batches' ingest alone {r['switch_ingest_sec']} s, "
            f"{r['switch_ingest_chunks_per_sec']} chunks/s | "
            f"- |",
            f"| embedder alone on the same texts, idle / beside the same searches | "
            f"{r['embedder_idle_chunks_per_sec']} / {r['embedder_loaded_chunks_per_sec']} "
            "chunks/s | - |",
            f"| switch against the embedder beside searches / idle | "
            f"{r['switch_vs_embedder_loaded']}x / {r['switch_vs_embedder_idle']}x | 0.9x |",
            f"| search p95, idle / during the switch | {idle['p95_ms']:.1f} ms / "
            f"{busy['p95_ms']:.1f} ms ({busy['queries']} searches answered) | answering |",
            f"| search p95 beside the embedder alone | {beside['p95_ms']:.1f} ms | - |",
            f"| first index of the tree | {r['initial_index_sec']} s | - |",
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--switch", type=int, default=2000)
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--publish", action="store_true")
    args = parser.parse_args()
    res = WatchResults(
        started_at=utc_now(),
        command=shown_command(sys.argv).split(),
        machine=machine(["watchfiles", "chromadb"]),
        config={"files": args.files, "switch": args.switch, "edits": args.edits},
    )
    res.results = run(args.files, args.switch, args.edits)
    res.results["loadavg_end"] = os.getloadavg()
    readme = _readme(res)
    print(readme)
    if args.publish:
        print(publish(res, REPO / "benchmark" / "published", "watch", readme))


if __name__ == "__main__":
    main()
