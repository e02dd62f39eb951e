"""The failpoints of imprint/_faults.py, armed by environment variables."""

from __future__ import annotations

import sqlite3

import pytest
import structlog

from imprint._faults import delay, fail, failpoint, hold


def test_an_unset_or_other_point_does_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unset, or armed for another point, no failpoint fails, stalls, holds or kills."""
    with structlog.testing.capture_logs() as logs:
        for name in ("a", "b"):
            fail(name)
            delay(name)
            hold(name)
            failpoint(name)
        for var in ("IMPRINT_FAIL", "IMPRINT_DELAY", "IMPRINT_HOLD", "IMPRINT_FAILPOINT"):
            monkeypatch.setenv(var, "other:1")
        fail("a")
        delay("a")
        hold("a")
        failpoint("a")
    assert logs == []


def test_fail_raises_on_every_pass_or_on_the_nth_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """`IMPRINT_FAIL=point` raises a RuntimeError naming the point each time it is reached;
    `point:2` raises the second time only; a point may name the error it raises."""
    monkeypatch.setenv("IMPRINT_FAIL", "p")
    for _ in range(3):
        with pytest.raises(RuntimeError, match=r"^failpoint p$"):
            fail("p")
    monkeypatch.setenv("IMPRINT_FAIL", "q:2")
    fail("q")
    with pytest.raises(sqlite3.OperationalError, match=r"^failpoint q$"):
        fail("q", sqlite3.OperationalError)
    fail("q")
    fail("q")


def test_delay_logs_each_pass_up_to_its_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """`IMPRINT_DELAY=point:0:2` logs `fault.delay` for the first two passes only; without a
    count, every pass."""
    monkeypatch.setenv("IMPRINT_DELAY", "d:0:2")
    with structlog.testing.capture_logs() as logs:
        for _ in range(4):
            delay("d")
    assert [(e["event"], e["point"], e["seconds"]) for e in logs] == [("fault.delay", "d", 0.0)] * 2
    monkeypatch.setenv("IMPRINT_DELAY", "e:0")
    with structlog.testing.capture_logs() as logs:
        for _ in range(4):
            delay("e")
    assert len(logs) == 4
