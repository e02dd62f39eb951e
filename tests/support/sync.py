"""Helpers shared by tests (moved unchanged from the test module of the same name)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from imprint.actors.lifecycle import Runtime
from imprint.config import Config
from imprint.reads.export import export_lines
from imprint.store.embedder import Embedder
from imprint.types import WorkspaceName
from imprint.writes import Writes
from imprint.writes.sync import sync_folder

T = TypeVar("T")


DEFAULT = WorkspaceName("default")


@contextmanager
def _writes(data: Path, embedder: Embedder) -> Iterator[Writes]:
    rt = Runtime(data, Config(), embedder=embedder, reindex=False).start()
    try:
        yield Writes(rt)
    finally:
        rt.stop()


def on(data: Path, embedder: Embedder, act: Callable[[Writes], T]) -> T:
    with _writes(data, embedder) as writes:
        return act(writes)


def sync(data: Path, folder: Path, embedder: Embedder, **kwargs: object) -> str:
    return on(data, embedder, lambda w: sync_folder(w, folder, **kwargs))  # type: ignore[arg-type]


def export(data: Path, names: list[str] | None = None) -> str:
    wanted = [WorkspaceName(n) for n in (names or [DEFAULT])]
    return "".join(export_lines(data, wanted))


def _planted(folder: Path, lines: list[dict[str, object]], *, count: int | None = None) -> Path:
    """A file of a machine `feed0001` holding these lines (its header counting `count`)."""
    path = folder / "feed0001" / "000001.jsonl"
    path.parent.mkdir(exist_ok=True)
    header = {
        "line": "header",
        "format": "imprint-sync",
        "version": 1,
        "machine": "feed0001",
        "seq": 1,
        "lines": len(lines) if count is None else count,
    }
    path.write_text("".join(json.dumps(x) + "\n" for x in [header, *lines]))
    return path


def run(
    data: Path, *argv: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "IMPRINT_DATA_DIR": str(data), **(env or {})}
    return subprocess.run(
        [sys.executable, *argv], env=env, capture_output=True, text=True, timeout=240
    )


def cli(
    data: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return run(data, "-m", "imprint.cli", *args, env=env)


def _start_daemon(data: Path) -> None:
    """A real daemon owning `data`, started as `imprint serve` starts one."""
    code = (
        "import sys, pathlib; from imprint.daemon import connect; "
        "connect(pathlib.Path(sys.argv[1])).close()"
    )
    started = run(data, "-c", code, str(data))
    assert started.returncode == 0, started.stderr
