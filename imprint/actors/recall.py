"""RecallCoordinator: fans a plan's steps out as messages, gathers them under ONE deadline.

Each recall gets its own coordinator and one StepRunner per step, so concurrent recalls never
queue behind one another; the steps' reads meet again only in the reader pools. pykka's
`get_all(timeout=)` would give every future the whole timeout; here the deadline is computed
once and each wait gets only what is left of it. A step that misses the deadline is reported
as timed out; its runner finishes in the background and its result is dropped.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pykka
from pykka.typing import proxy_method

from imprint.actors._trace import Message, traced
from imprint.errors import ImprintError
from imprint.logs import get_logger
from imprint.recall.evidence import StepResult, to_items
from imprint.recall.plan import STEP_FUNCTIONS, Step
from imprint.types import WorkspaceName

__all__ = ["RecallCoordinator", "RecallRequest", "RunStep", "StepRunner", "run_plan"]

log = get_logger("imprint.recall")


class RunStep(Message):
    """One step of a recall; `step` (from Message) is its 1-based index."""

    workspace: WorkspaceName
    task: Step
    cwd: str = ""


class RecallRequest(Message):
    workspace: WorkspaceName
    steps: tuple[Step, ...]
    timeout_sec: float


def _call(reads: Any, msg: RunStep) -> Any:
    fn = STEP_FUNCTIONS[msg.task.tool]
    kwargs = dict(msg.task.args)
    if msg.task.tool == "get_memory" and msg.cwd:
        kwargs["cwd"] = Path(msg.cwd)
    return fn(reads, **kwargs, workspace=msg.workspace)


class StepRunner(pykka.ThreadingActor):
    """Runs one step's row function; its reads go to the reader pools as messages."""

    def __init__(self, reads: Any, index: int) -> None:
        super().__init__()
        self.reads = reads
        self.actor_name = f"StepRunner-{index}"

    @traced("recall.step")
    def run(self, msg: RunStep) -> StepResult:
        started = time.monotonic()
        label = msg.task.label()
        try:
            items, detail = to_items(msg.task.tool, _call(self.reads, msg))
        except ImprintError as exc:
            return StepResult(
                index=msg.step,
                label=label,
                outcome="error",
                detail=str(exc),
                run_ms=(time.monotonic() - started) * 1000,
            )
        return StepResult(
            index=msg.step,
            label=label,
            outcome="ok",
            detail=detail,
            items=tuple(items),
            run_ms=(time.monotonic() - started) * 1000,
        )


class RecallCoordinator(pykka.ThreadingActor):
    def __init__(self, reads: Any, cwd: str = "") -> None:
        super().__init__()
        self.reads = reads
        self.cwd = cwd
        self.actor_name = "RecallCoordinator"

    @traced("recall.gather")
    def recall(self, msg: RecallRequest) -> list[StepResult]:
        deadline = time.monotonic() + msg.timeout_sec
        runners = [StepRunner.start(self.reads, i + 1) for i in range(len(msg.steps))]
        try:
            futures = [
                runner.proxy().run(
                    RunStep(
                        request_id=msg.request_id,
                        recall_id=msg.recall_id,
                        step=i + 1,
                        workspace=msg.workspace,
                        task=step,
                        cwd=self.cwd,
                    )
                )
                for i, (runner, step) in enumerate(zip(runners, msg.steps, strict=True))
            ]
            results: list[StepResult] = []
            for i, (future, step) in enumerate(zip(futures, msg.steps, strict=True), start=1):
                left = max(0.0, deadline - time.monotonic())
                try:
                    results.append(future.get(timeout=left))
                except pykka.Timeout:
                    log.warning(
                        "recall.step.timeout",
                        recall_id=msg.recall_id,
                        step=i,
                        tool=step.tool,
                        timeout_sec=msg.timeout_sec,
                    )
                    results.append(
                        StepResult(
                            index=i,
                            label=step.label(),
                            outcome="timeout",
                            detail=f"no answer within the recall's {msg.timeout_sec:g} s deadline",
                        )
                    )
                except Exception as exc:  # a step that crashed must not sink the others
                    log.exception("recall.step.crashed", recall_id=msg.recall_id, step=i)
                    results.append(
                        StepResult(
                            index=i,
                            label=step.label(),
                            outcome="error",
                            detail=f"failed ({type(exc).__name__})",
                        )
                    )
            return results
        finally:
            for runner in runners:
                # Not blocking: a late runner stops after its step; its result is dropped.
                runner.stop(block=False)


class RecallCoordinatorProxy:
    recall = proxy_method(RecallCoordinator.recall)


def run_plan(
    reads: Any,
    workspace: WorkspaceName,
    steps: list[Step],
    timeout_sec: float,
    *,
    recall_id: str,
    cwd: str = "",
) -> list[StepResult]:
    """Start a coordinator for one recall, ask it, stop it."""
    ref = RecallCoordinator.start(reads, cwd)
    try:
        proxy: Any = ref.proxy()
        request = RecallRequest(
            recall_id=recall_id, workspace=workspace, steps=tuple(steps), timeout_sec=timeout_sec
        )
        # The coordinator answers by the deadline; the margin only guards against a hang.
        return proxy.recall(request).get(timeout=timeout_sec + 30)
    finally:
        ref.stop(block=False)
