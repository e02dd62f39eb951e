"""Clients find the running daemon through the data dir (issue 26, finding 5): whatever
their XDG_RUNTIME_DIR or TMPDIR, and after a tmp cleaner removed its socket file."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from tests.integration.conftest import daemon_pid, imprint_stop, wait_gone
from tests.integration.conftest import owner_env as _env
from tests.support.serve import _text

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

CLIENT_SEC = 60.0  # a bound for a failing test (a client used to wait 90 s, then fail)


@pytest.fixture
def runtime_dirs() -> Iterator[list[Path]]:
    """Two private runtime folders with short paths (a socket path must fit in 104 bytes)."""
    made = [Path(tempfile.mkdtemp(prefix="xdg-", dir="/tmp")) for _ in range(2)]
    try:
        yield made
    finally:
        for folder in made:
            shutil.rmtree(folder, ignore_errors=True)


def _params(data_dir: Path, cwd: Path, **env: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "imprint.cli", "serve"],
        env={**_env(data_dir), **env},
        cwd=str(cwd),
    )


def _call(params: StdioServerParameters, tool: str, args: dict[str, object]) -> str:
    async def go() -> str:
        with anyio.fail_after(CLIENT_SEC):
            async with Client(params) as client:
                return _text(await client.call_tool(tool, args))

    return anyio.run(go)


def _stop(data_dir: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return imprint_stop({**_env(data_dir), **env})


def test_a_client_with_another_runtime_dir_uses_the_running_daemon(
    data_dir: Path, tmp_path: Path, runtime_dirs: list[Path]
) -> None:
    """A daemon started under one XDG_RUNTIME_DIR serves a client that has another, and
    `imprint stop` without XDG_RUNTIME_DIR stops it (before: that client waited 90 s for a
    socket in its own runtime folder and failed)."""
    first, second = runtime_dirs
    stored = _call(
        _params(data_dir, tmp_path, XDG_RUNTIME_DIR=str(first)),
        "store",
        {"content": "the avocet sweeps the mud"},
    )
    pid = daemon_pid(data_dir)
    assert pid is not None
    found = _call(
        _params(data_dir, tmp_path, XDG_RUNTIME_DIR=str(second)), "search", {"query": "avocet"}
    )
    assert stored.split()[1] in found
    assert daemon_pid(data_dir) == pid
    assert not list(second.rglob("*.sock"))  # no second daemon was started there
    env = {k: v for k, v in _env(data_dir).items() if k != "XDG_RUNTIME_DIR"}
    stop = imprint_stop(env)
    assert stop.returncode == 0 and stop.stdout.startswith("stopped"), stop.stdout + stop.stderr
    assert wait_gone(pid, 5)


def _wait_socket(path: Path, not_inode: int, seconds: float = 30) -> int:
    """The inode of the socket file at `path` once it is there again (a new one)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            inode = path.lstat().st_ino
        except FileNotFoundError:
            inode = None
        if inode is not None and inode != not_inode:
            return inode
        time.sleep(0.05)  # polling another process's socket file; nothing to wait on
    pytest.fail(f"the daemon did not bind {path} again within {seconds:g} s")


def test_a_removed_socket_is_bound_again_and_stop_needs_none(
    data_dir: Path, tmp_path: Path, runtime_dirs: list[Path]
) -> None:
    """A tmp cleaner removes the daemon's socket, then its whole socket folder: the daemon
    binds it again each time and a new stdio client is served by the same daemon; removed
    once more, `imprint stop` still stops the daemon (before: "no imprint daemon is running"
    while it ran), and the next client starts a new one."""
    params = _params(data_dir, tmp_path, XDG_RUNTIME_DIR=str(runtime_dirs[0]))
    stored = _call(params, "store", {"content": "the dunlin probes the sand"}).split()[1]
    pid = daemon_pid(data_dir)
    assert pid is not None
    sock = Path(json.loads((data_dir / "run" / "daemon.json").read_text())["socket"])
    assert sock.parent == runtime_dirs[0] / "imprint"
    for remove in (sock.unlink, lambda: shutil.rmtree(sock.parent)):
        inode = sock.lstat().st_ino
        remove()
        _wait_socket(sock, inode)
        assert stored in _call(params, "search", {"query": "dunlin"})
        assert daemon_pid(data_dir) == pid
    sock.unlink()
    stop = _stop(data_dir)
    assert stop.returncode == 0 and stop.stdout.startswith("stopped"), stop.stdout + stop.stderr
    assert wait_gone(pid, 5)
    assert stored in _call(params, "search", {"query": "dunlin"})
    again = daemon_pid(data_dir)
    assert again is not None and again != pid  # the fixture stops it
