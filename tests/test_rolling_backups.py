"""Rolling backups (`backup.every_hours`, `backup.keep`): the daemon's schedule driven by a
fake clock and an injected wait (no sleeps), each backup verified, only its own pruned; the
last backup shown by `imprint status` and the dashboard; a real daemon making one."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient
from typer.testing import CliRunner

from imprint.actors.lifecycle import Runtime
from imprint.cli import app as cli_app
from imprint.config import BackupConfig, Config
from imprint.daemon import stop_daemon
from imprint.daemon.rolling import RollingBackups
from imprint.dashboard import Guard, build_app
from imprint.errors import StoreError
from imprint.store.embedder import Embedder
from imprint.writes import Writes
from imprint.writes.backup import (
    backup_line,
    backups_dir,
    last_backup,
    make_backup,
    read_manifest,
    rolling_backups,
)
from imprint.writes.memories import store_memory
from tests.support.archive import cli, start_daemon
from tests.support.dashboard_support import owner

HOUR = 3600.0
START = 1_800_000_000.0  # 2027-01-15 08:00 UTC: the fake clock's first reading


class Clock:
    """A clock that moves only when told."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def runtime(data_dir: Path, embedder: Embedder) -> Iterator[Runtime]:
    rt = Runtime(data_dir, Config(), embedder=embedder, reindex=False).start()
    try:
        store_memory(Writes(rt), "Decision: backups run every hour and the last two are kept.")
        yield rt
    finally:
        rt.stop()


def _schedule(rt: Runtime, clock: Clock, hours: float = 1.0, keep: int = 2) -> RollingBackups:
    config = BackupConfig(every_hours=hours, keep=keep)
    return RollingBackups(rt.data_dir, config, lambda _timeout: rt, clock=clock)


def test_a_backup_is_made_when_due_verified_and_only_the_newest_rolling_ones_kept(
    runtime: Runtime,
) -> None:
    """The first rolling backup is due at once, the next `every_hours` after it (not a
    second earlier); each lands in `backups/auto-<time>` (0700), dated by the clock and
    verified against its manifest; beyond `keep` the oldest rolling ones are removed, while a
    backup `imprint backup` made stays."""
    clock = Clock()
    manual = make_backup(runtime, now=START - 10 * HOUR)
    schedule = _schedule(runtime, clock)
    first = schedule.tick()
    assert first is not None and first.verified and first.made_by == "schedule", first
    assert Path(first.path).name == "auto-20270115T080000Z"
    assert first.created_at == START and first.bytes > 0
    assert schedule.tick() is None  # not due again yet
    clock.now += HOUR - 1
    assert schedule.tick() is None
    clock.now += 1
    second = schedule.tick()
    assert second is not None and second.verified
    clock.now += HOUR
    third = schedule.tick()
    assert third is not None and third.verified
    kept = [path for _, path in rolling_backups(runtime.data_dir)]
    assert kept == [Path(second.path), Path(third.path)]
    assert not Path(first.path).exists()
    assert Path(manual.path).is_dir()  # not a rolling backup: never pruned
    for folder in (backups_dir(runtime.data_dir), *kept):
        assert folder.stat().st_mode & 0o777 == 0o700, folder
    assert read_manifest(Path(third.path))["created_at"] == START + 2 * HOUR
    assert last_backup(runtime.data_dir) == third
    assert backup_line(runtime.data_dir) == (
        f"last backup 2027-01-15 10:00 UTC (rolling), {third.bytes / 1e6:.1f} MB, "
        f"verified: {third.path}"
    )


def test_the_thread_waits_until_each_backup_is_due_and_stops_when_told(
    runtime: Runtime,
) -> None:
    """The schedule's loop asks its wait for the time left until the next backup (0 for
    the first, then `every_hours`), backs up after each wait, and ends when the wait says
    it was stopped."""
    clock = Clock()
    asked: list[float] = []

    def wait(seconds: float) -> bool:
        asked.append(seconds)
        clock.now += seconds
        return len(asked) > 2  # the third wait is interrupted: stopped

    schedule = RollingBackups(
        runtime.data_dir,
        BackupConfig(every_hours=0.5, keep=5),
        lambda _timeout: runtime,
        clock=clock,
        wait=wait,
    )
    schedule.run()
    assert asked == [0.0, 1800.0, 1800.0]
    dated = [made for made, _ in rolling_backups(runtime.data_dir)]
    assert dated == [START, START + 1800.0]


def test_a_failed_backup_is_shown_and_waits_its_turn(data_dir: Path) -> None:
    """A rolling backup that fails is kept as the last backup (status says FAILED and why)
    and the next try waits `every_hours`, not a loop of failures; with `every_hours` 0
    nothing is scheduled."""

    def no_runtime(_timeout: float) -> Runtime:
        raise StoreError("the store could not be opened")

    clock = Clock()
    schedule = RollingBackups(data_dir, BackupConfig(every_hours=2), no_runtime, clock=clock)
    failed = schedule.tick()
    assert failed is not None and not failed.verified and failed.bytes == 0
    assert backup_line(data_dir) == (
        "last backup FAILED 2027-01-15 08:00 UTC (rolling): "
        "StoreError: the store could not be opened"
    )
    assert schedule.due() == START + 2 * HOUR
    assert schedule.tick() is None
    off = RollingBackups(data_dir, BackupConfig(), no_runtime, clock=clock)
    assert off.due() is None
    off.run()  # returns at once: nothing to wait for


def test_status_and_the_dashboard_show_the_last_backup(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`imprint status` prints the last-backup line (none yet, then the backup's time, size
    and verdict); the dashboard's overview shows the same backup and the rolling setting."""
    root = runtime.data_dir
    monkeypatch.setenv("IMPRINT_DATA_DIR", str(root))
    runtime.stop()  # `imprint status` opens the store itself
    before = CliRunner().invoke(cli_app, ["status"])
    assert before.exit_code == 0, before.output
    assert "last backup: none yet (`imprint backup`; backup.every_hours for rolling ones)" in (
        before.output.splitlines()
    )
    rt = Runtime(root, Config(), reindex=False).start()
    try:
        record = make_backup(rt)
        guard = Guard(8767)
        app = build_app(rt, guard, owner(), cwd=root)
        with TestClient(app, base_url="http://127.0.0.1:8767") as client:
            page = client.get(f"/?token={guard.issue_token()}")
        assert page.status_code == 200, page.text
    finally:
        rt.stop()
    after = CliRunner().invoke(cli_app, ["status"])
    assert after.exit_code == 0, after.output
    assert record.line() in after.output.splitlines()
    assert record.line().startswith("last backup ") and "(imprint backup)" in record.line()
    html = page.text
    assert "<h2>backups</h2>" in html
    assert f"<td>{record.path}</td>" in html and '<span class="ok">verified</span>' in html
    assert "rolling backups: off (backup.every_hours)" in html


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_daemon_with_every_hours_makes_a_verified_rolling_backup(
    runtime: Runtime, tmp_path: Path
) -> None:
    """A real daemon started with `backup.every_hours` (from the environment) makes its first
    rolling backup soon after it starts, verified; `imprint status` beside it shows it."""
    root = runtime.data_dir
    runtime.stop()
    start_daemon(root, {"IMPRINT_BACKUP_EVERY_HOURS": "24"})
    try:
        last = backups_dir(root) / "last.json"
        deadline = time.monotonic() + 120
        while not last.exists():  # written by the daemon's backup thread
            assert time.monotonic() < deadline, "no rolling backup within 120 s"
            time.sleep(0.1)  # polling another process's file
        record = json.loads(last.read_text())
        assert record["made_by"] == "schedule" and record["verified"], record
        assert Path(record["path"]).name.startswith("auto-")
        shown = cli(root, "status")
        assert shown.returncode == 0, shown.stderr
        assert "(rolling)" in shown.stdout and ", verified: " in shown.stdout, shown.stdout
    finally:
        stop_daemon(root)
