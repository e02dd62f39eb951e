"""One deadline per call (`imprint.actors.deadline`, by its old address too: the hook's
briefing, the session capture and the imports import it from here), and the part of a
caller's deadline a call keeps for its own tail (`Reserve`).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from imprint.actors.deadline import Deadline, Done, Pending, call_deadline

__all__ = [
    "RESERVE_FLOOR_SEC",
    "CostEstimate",
    "Deadline",
    "Done",
    "Pending",
    "Reserve",
    "call_deadline",
    "cpu_contention",
]


# What a call keeps of its caller's deadline for what comes after its last wait (merge,
# budget, format, the hand-back to the transport), whatever was measured: a floor.
RESERVE_FLOOR_SEC = 0.05
# Never more than this share of the caller's budget: the rest is for gathering.
RESERVE_MAX_SHARE = 0.5
# How much of the gap to a lower sample one observation closes: a new peak is taken at
# once, a quieter machine is believed over a few calls.
RESERVE_EASE = 0.2


# The most the machine's load multiplies a tail's CPU time by (see `cpu_contention`).
MAX_CONTENTION = 4.0


def cpu_contention() -> float:
    """How many runnable tasks share each core now (the 1-minute load average per CPU, at
    least 1, at most MAX_CONTENTION): a tail's CPU time takes about that much longer in wall
    time. 1 where the system keeps no load average."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return 1.0
    return min(MAX_CONTENTION, max(1.0, load / (os.cpu_count() or 1)))


class CostEstimate:
    """A cost that adapts to what it measures now: a new peak is taken at once, then eased
    down toward later, smaller samples (`RESERVE_EASE` of the gap per sample)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.value = 0.0
        self.samples = 0

    def observe(self, seconds: float) -> None:
        seconds = max(0.0, seconds)
        with self._lock:
            if seconds >= self.value:
                self.value = seconds
            else:
                self.value -= (self.value - seconds) * RESERVE_EASE
            self.samples += 1


class Reserve:
    """The part of a caller's deadline kept for a call's tail: what follows its last wait.

    Two measured parts: the tail's wall time (`wall`: under load it includes waiting for
    the cores), and its own CPU time (`cpu`), which every call in flight (`in_flight`, the
    interactive calls the runtime counts now) will spend at about the same time, one after
    another behind the interpreter's lock, on cores shared with what else runs
    (`cpu_contention`). The hand-back to the transport comes on top. The reserve is the
    larger of the two, never less than `floor`, never more than `RESERVE_MAX_SHARE` of the
    budget.
    """

    def __init__(
        self,
        *,
        floor: float = RESERVE_FLOOR_SEC,
        clock: Callable[[], float] = time.monotonic,
        cpu_clock: Callable[[], float] = time.thread_time,
        contention: Callable[[], float] = cpu_contention,
    ) -> None:
        self.floor = floor
        self._contention = contention
        self._clock = clock
        self._cpu_clock = cpu_clock
        self.wall = CostEstimate()
        self.cpu = CostEstimate()
        # From the tail's end to the caller's transport taking the answer (the tool's worker
        # thread handing back to the event loop), measured by the transport's side.
        self.transport = CostEstimate()
        # A group of steps asked after the model planned: from asking to having them.
        self.steps = CostEstimate()

    def seconds(self, budget: float, in_flight: int = 1) -> float:
        # Before any tail of a burst is measured (the first after a start), its cost is
        # what each call's CPU time comes to, one after another, on cores this busy.
        queued = self.cpu.value * max(1, in_flight) * self._contention()
        wanted = max(self.floor, max(self.wall.value, queued) + self.transport.value)
        return min(wanted, budget * RESERVE_MAX_SHARE)

    def steps_fit(self, left: float) -> bool:
        """Whether steps asked now would likely be answered in `left` seconds. A refusal
        eases the estimate down, as a fast sample would: one slow group of steps must not
        stop every later recall from asking any."""
        if left > 0 and self.steps.value <= left:
            return True
        self.steps.observe(0.0)
        return False

    def stop(self) -> list[str]:
        """A runtime service (`Runtime.service`) with nothing to stop."""
        return []

    def observe(self, wall: float, cpu: float) -> None:
        self.wall.observe(wall)
        self.cpu.observe(cpu)

    @contextmanager
    def tail(self, work_by: float) -> Iterator[None]:
        """Measure one tail: from the end of the last wait (or `work_by`, if that wait ran
        into it) to the end of the block."""
        wall0, cpu0 = min(self._clock(), work_by), self._cpu_clock()
        try:
            yield
        finally:
            self.observe(self._clock() - wall0, self._cpu_clock() - cpu0)
