"""A nearly full disk under a real daemon (issue 26, finding 3), and SIGTERM while a Chroma
call holds the interpreter lock.

The store lives on a small tmpfs of its own (mounted by the test: root only). Before the fix,
Chroma met ENOSPC mid-write, its embedded client then blocked for good at its next call
holding the interpreter lock, the next `store` never answered and SIGTERM did nothing: every
call here is bounded, so that code fails these tests instead of hanging them.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp.client import Client

from tests.integration.conftest import daemon_pid, imprint_stop, wait_gone
from tests.integration.conftest import owner_env as _env
from tests.support.serve import _stdio, _text
from tests.support.wire import initialize_request

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

TMPFS_MB = 160  # above the default store.min_free_mb (64) with the store on it
CALL_SEC = 60.0  # a bound on each tool call: a frozen daemon fails the test, never hangs it
GRACE_SEC = 30.0 + 15.0  # the daemon's STOP_GRACE_SEC, and some room to exit


def _free(path: Path) -> int:
    info = os.statvfs(path)
    return info.f_bavail * info.f_frsize


@pytest.fixture
def small_disk() -> Iterator[Path]:
    """A 160 MB tmpfs, unmounted after the test (a daemon still on it is killed first)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (CI runs as root, where this test must run)")
    mnt = Path(tempfile.mkdtemp(prefix="imprint-disk-"))
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={TMPFS_MB}m,mode=0700", "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        mnt.rmdir()
        pytest.fail(f"mount -t tmpfs failed as root: {done.stderr.strip()}")
    try:
        yield mnt
    finally:
        pid = daemon_pid(mnt / "data") if (mnt / "data" / "run").is_dir() else None
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            wait_gone(pid, 30)
        subprocess.run(["umount", str(mnt)], capture_output=True)
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)  # if still busy
        with contextlib.suppress(OSError):
            mnt.rmdir()


def _fill(mnt: Path, leave: int, n: int) -> Path:
    """A filler file that leaves about `leave` bytes free on the tmpfs."""
    filler = mnt / f"filler-{n}"
    with filler.open("wb") as out:
        while (room := _free(mnt) - leave) > 0:
            try:
                out.write(b"\0" * min(room, 1 << 20))
                out.flush()
            except OSError:
                break
    return filler


async def _store(client: Client, content: str) -> tuple[str, str]:
    """("ok", id), ("error", text) or ("no answer", ...) within CALL_SEC."""
    try:
        with anyio.fail_after(CALL_SEC):
            result = await client.call_tool("store", {"content": content})
    except TimeoutError:
        return "no answer", f"no answer within {CALL_SEC:g} s"
    text = str(result.content[0].text)  # type: ignore[union-attr]
    return ("error", text) if result.is_error else ("ok", text.split()[1])


def _status_check(data_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "imprint.cli", "status", "--check"],
        env=_env(data_dir),
        capture_output=True,
        text=True,
        timeout=300,
    )


def _clean(status: subprocess.CompletedProcess[str]) -> bool:
    out = status.stdout
    return (
        status.returncode == 0
        and "indexes: consistent" in out
        and "journal pending 0" in out
        and "every record agrees" in out
        and "set aside" not in out
    )


def _present(data_dir: Path, cwd: Path, ids: list[str]) -> list[str]:
    """The acknowledged ids get_memory cannot find (a fresh session, maybe a fresh daemon)."""

    async def go() -> list[str]:
        async with Client(_stdio(data_dir, cwd)) as client:
            with anyio.fail_after(120):
                return [
                    rid
                    for rid in ids
                    if (await client.call_tool("get_memory", {"id": rid})).is_error
                ]

    return anyio.run(go)


def test_a_nearly_full_disk_refuses_writes_in_one_line_and_the_daemon_still_stops(
    small_disk: Path,
) -> None:
    """The disk of the store fills to 300 KB, then 150 KB free: every `store` meanwhile is
    refused at once in one line naming the free space (before: accepted until Chroma met
    ENOSPC, then "Error executing tool store", then no answer at all); once space is freed
    writes work again; the daemon exits within its grace on SIGTERM; `status --check` is
    clean and every acknowledged write is there."""
    data_dir, cwd = small_disk / "data", small_disk
    acked: list[str] = []
    near_full: list[tuple[str, str, int]] = []  # (outcome, text, free bytes before)

    async def go() -> None:
        async with Client(_stdio(data_dir, cwd)) as client:
            for i in range(3):
                outcome, text = await _store(client, f"kept {i}: the petrel nests on cliffs")
                assert outcome == "ok", text
                acked.append(text)
            fillers = []
            for n, (leave, writes) in enumerate(((300_000, 3), (150_000, 9))):
                fillers.append(_fill(small_disk, leave, n))
                for i in range(writes):
                    before = _free(small_disk)
                    body = f"near full {n}.{i}: the gannet plunges after the shoal. " * 30
                    outcome, text = await _store(client, body)
                    near_full.append((outcome, text, before))
                    if outcome == "ok":
                        acked.append(text)
                    if outcome == "no answer":
                        return  # the session is lost; what follows checks the rest
            for filler in fillers:
                filler.unlink()
            for i in range(2):
                outcome, text = await _store(client, f"after {i}: the shag dries its wings")
                after.append((outcome, text, _free(small_disk)))
                if outcome != "ok":
                    return
                acked.append(text)

    after: list[tuple[str, str, int]] = []
    anyio.run(go)
    pid = daemon_pid(data_dir)
    assert pid is not None
    for filler in small_disk.glob("filler-*"):
        filler.unlink()  # the run above may have ended early: room for what follows
    os.kill(pid, signal.SIGTERM)
    stopped = wait_gone(pid, GRACE_SEC)
    if not stopped:
        os.kill(pid, signal.SIGKILL)  # so that the checks below can open the store
        assert wait_gone(pid, 30)
    (data_dir / "run" / "daemon.json").unlink(missing_ok=True)
    status = _status_check(data_dir)
    missing = _present(data_dir, cwd, acked)

    problems = [
        f"with {before} bytes free: {outcome}: {text}"
        for outcome, text, before in near_full
        if outcome != "error"
        or "\n" in text.strip()
        or not text.startswith("write: only ")
        or " MB free on the disk holding " not in text
        or "store.min_free_mb" not in text
    ]
    problems += [
        f"after space was freed ({before} bytes): {outcome}: {text}"
        for outcome, text, before in after
        if outcome != "ok"
    ]
    if len(after) < 2:
        problems.append("the writes after space was freed did not all run")
    if not stopped:
        problems.append(f"the daemon did not exit within {GRACE_SEC:g} s of SIGTERM")
    if not _clean(status):
        problems.append(f"status --check: {status.stdout} {status.stderr}")
    if missing:
        problems.append(f"acknowledged writes missing: {missing}")
    assert problems == [], "\n".join(problems)


def test_sigterm_ends_the_daemon_while_a_chroma_call_holds_the_interpreter_lock(
    data_dir: Path, tmp_path: Path
) -> None:
    """A Chroma call that blocks holding the interpreter lock (IMPRINT_HOLD, as the one
    seen after ENOSPC): `imprint stop` still ends the daemon, at once; the write in flight
    was not acknowledged and the next start finishes it from the journal, so `status
    --check` is clean and the earlier writes are there."""
    env = _env(data_dir)
    log = data_dir / "logs" / "imprint.jsonl"

    async def first() -> str:
        async with Client(_stdio(data_dir, tmp_path)) as client:
            with anyio.fail_after(120):
                return _text(await client.call_tool("store", {"content": "kept: the tern"}))

    kept = anyio.run(first).split()[1]
    assert imprint_stop(env).returncode == 0
    held = {**env, "IMPRINT_HOLD": "writer.vectors:600"}
    bridge = subprocess.Popen(
        [sys.executable, "-m", "imprint.cli", "serve"],
        env=held,
        cwd=str(tmp_path),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert bridge.stdin is not None
        lines = [
            initialize_request(),
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "store", "arguments": {"content": "held: the skua"}},
            },
        ]
        bridge.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in lines))
        bridge.stdin.flush()
        deadline = time.monotonic() + 120
        while not (log.exists() and '"fault.hold"' in log.read_text(errors="replace")):
            assert time.monotonic() < deadline, "the write never reached the held Chroma call"
            assert bridge.poll() is None, "the bridge exited"
            time.sleep(0.05)  # polling another process's log; nothing to wait on
        pid = daemon_pid(data_dir)
        assert pid is not None
        stop = imprint_stop(env)
        assert stop.returncode == 0 and stop.stdout.startswith("stopped"), stop.stderr
        assert wait_gone(pid, 5)
    finally:
        bridge.kill()
        bridge.communicate(timeout=60)  # reaped, its pipes closed
    (data_dir / "run" / "daemon.json").unlink(missing_ok=True)
    status = _status_check(data_dir)
    assert _clean(status), status.stdout + status.stderr
    assert _present(data_dir, tmp_path, [kept]) == []
