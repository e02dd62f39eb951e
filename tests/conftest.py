"""Shared fixtures: isolated data dirs, one embedder per session, a real `chroma run` server."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pykka
import pytest

from imprint import _faults
from imprint.actors.lifecycle import Runtime
from imprint.config import Config
from imprint.store.embedder import Embedder
from tests.support.second_user import other_user  # noqa: F401 (a fixture, for every test file)
from tests.support.trace_support import log_watch  # noqa: F401 (a fixture, for every test file)

TOPICS = {
    "docs/actors.md": (
        "# Actors\n\nAn actor processes one message at a time from its mailbox. "
        "Stopping an actor drains the mailbox first.\n\n## Supervision\n\n"
        "A supervisor restarts a crashed actor with a fresh state."
    ),
    "docs/gardening.md": (
        "# Gardening\n\nTomatoes need six hours of sun and deep watering twice a week. "
        "Mulch keeps the soil moist.\n\n## Compost\n\nTurn the compost heap every fortnight."
    ),
    "docs/espresso.md": (
        "# Espresso\n\nA ristretto uses less water than a lungo. Grind finer when the shot "
        "runs fast.\n\nThe purple kangaroo protocol is a phrase that occurs in one file only."
    ),
    "src/retry.py": (
        'import time\n\n\ndef retry(fn, attempts=3):\n    """Call fn until it succeeds, '
        'backing off exponentially."""\n    for i in range(attempts):\n        try:\n'
        "            return fn()\n        except OSError:\n            time.sleep(2 ** i)\n"
        "    raise RuntimeError('gave up')\n"
    ),
    "notes.txt": "Release checklist: bump the version, tag the commit, publish the wheel.",
}


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def drop_one_fts_entry(db: Path) -> None:
    """A hand edit through another connection: one record's full-text entry removed (the
    FTS integrity check then fails, and SQLite's data_version moves for the owner)."""
    from imprint.store.sqlite_write import SqliteWriter

    other = SqliteWriter(db)
    try:
        with other.conn:
            other.conn.execute(
                "INSERT INTO records_fts(records_fts, rowid, content) "
                "SELECT 'delete', rowid, content FROM records LIMIT 1"
            )
    finally:
        other.close()


@pytest.fixture
def small_tree(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "proj", TOPICS)


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No test reads or writes the user's data dir, and no actor outlives its test."""
    monkeypatch.setenv("IMPRINT_DATA_DIR", str(tmp_path / "data"))
    for name in list(os.environ):
        if name.startswith("IMPRINT_") and name != "IMPRINT_DATA_DIR":
            monkeypatch.delenv(name)
    _faults.reset()  # a point armed again counts its passes from one
    yield
    pykka.ActorRegistry.stop_all()


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    return Embedder(threads=2)


def wait_serving(
    proc: subprocess.Popen[Any], url: str, seconds: float, what: str, log: Path
) -> None:
    """Poll a starting loopback server until `url` answers 200; fail with the end of its log
    when it exits first or takes longer than `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"{what} did not start: {log.read_text()[-2000:]}")
        time.sleep(0.2)  # polling a starting server; no event to wait on


def stop_process(proc: subprocess.Popen[Any]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real `chroma run` on 127.0.0.1, started once, stopped at the end of the session."""
    binary = shutil.which("chroma", path=str(Path(sys.executable).parent)) or shutil.which("chroma")
    if binary is None:
        pytest.fail("the chroma CLI (from the chromadb package) is not installed")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    folder = tmp_path_factory.mktemp("chroma-server")
    log = (folder / "server.log").open("wb")
    proc = subprocess.Popen(
        [binary, "run", "--host", "127.0.0.1", "--port", str(port), "--path", str(folder)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_serving(proc, f"{url}/api/v2/heartbeat", 60, "chroma run", folder / "server.log")
        yield url
    finally:
        stop_process(proc)
        log.close()


@pytest.fixture(params=["embedded", "http"])
def store_mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def config(store_mode: str, request: pytest.FixtureRequest) -> Config:
    config = Config()
    if store_mode == "http":
        config.store.chroma_url = request.getfixturevalue("chroma_server")
    return config


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def rt(data_dir: Path, embedder: Embedder) -> Iterator[Runtime]:
    """An embedded-store runtime with the default configuration (store mode
    not parametrised: for tests where it does not matter)."""
    runtime = Runtime(data_dir, Config(), embedder=embedder).start()
    try:
        yield runtime
    finally:
        runtime.stop()


@pytest.fixture
def runtime(data_dir: Path, config: Config, embedder: Embedder) -> Iterator[Runtime]:
    rt = Runtime(data_dir, config, embedder=embedder).start()
    try:
        yield rt
    finally:
        rt.stop()


# Fixtures defined with the helpers they drive, registered here for every test that takes them
# (imported last: those modules import this one).
from tests.support.daemon import private_env, serve, shared_tmp  # noqa: E402, F401
from tests.support.dashboard import dash  # noqa: E402, F401
from tests.support.hooks_briefing import daemon  # noqa: E402, F401
