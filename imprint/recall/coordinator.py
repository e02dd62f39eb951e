"""RecallCoordinator: fans a plan's steps out as messages, gathers them under ONE deadline.

Coordinators and step runners are long-lived pools started once per runtime (`recall.pool_size`
coordinators, `recall.step_runners` runners), each message going to the least-loaded actor,
so concurrent recalls do not queue behind one another; their reads meet again only in the
reader pools. The deadline is fixed when the recall is asked, carried by every message it
causes (step runners bind it, so the reads they send carry it too) and each wait gets only
what is left of it: pykka's `get_all(timeout=)` would give every future the whole timeout.
A step that misses the deadline is reported as timed out; its runner finishes in the
background, its later reads are skipped by the readers, and its result is dropped.

A plan's search steps (two or more) are not sent to runners: the coordinator answers them
together (`search_many`), while the runners run the other steps. Their queries are embedded
in one inference, the vector store is searched in one call and their records are read in
one fetch; a search whose read is stuck times out alone.

`start_plan` asks without waiting, so a recall can gather its deterministic evidence while
the model plans and wait for it afterwards (`Gathering.wait`); `run_plan` does both at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pykka
import structlog
from pykka.typing import proxy_method

from imprint.actors._pool import ActorPool, Load
from imprint.actors._trace import Message, bind_deadline, log_handled, traced
from imprint.actors.lifecycle import Runtime
from imprint.actors.read_messages import VectorQuery
from imprint.errors import DeadlineExceeded, ImprintError, InputError, StoreError
from imprint.logs import get_logger
from imprint.reads.gateway import Reads
from imprint.reads.search import Search, SearchRows, planned_vector_query, search_many
from imprint.recall.evidence import Item, StepResult
from imprint.recall.plan import SearchStep, Step
from imprint.types import Outcome, RecallId, WorkspaceName

__all__ = [
    "Gathering",
    "RecallCoordinator",
    "RecallCoordinatorProxy",
    "RecallPools",
    "RecallRequest",
    "RunStep",
    "StepRunner",
    "StepRunnerProxy",
    "recall_pools",
    "run_plan",
    "start_plan",
]

log = get_logger("imprint.recall")


class RunStep(Message):
    """One step of a recall; `step` (from Message) is its 1-based index."""

    kind = "recall.step"
    workspace: WorkspaceName
    task: Step
    cwd: str = ""


class RecallRequest(Message):
    kind = "recall.gather"
    workspace: WorkspaceName
    steps: tuple[Step, ...]
    timeout_sec: float
    first_step: int = 1  # the index of steps[0]: steps the model adds follow the baseline


def _call(reads: Reads, msg: RunStep) -> Any:
    return msg.task.rows(reads, msg.workspace, Path(msg.cwd) if msg.cwd else None)


class StepRunner(pykka.ThreadingActor):
    """Runs one step's row function at a time; its reads go to the reader pools."""

    def __init__(self, reads: Reads, index: int, load: Load) -> None:
        super().__init__()
        self.reads = reads
        self.actor_name = f"StepRunner-{index}"
        self._load = load

    def run(self, msg: RunStep) -> StepResult:
        try:
            return self._run(msg)
        finally:
            self._load.done()

    @traced("recall.step")
    def _run(self, msg: RunStep) -> StepResult:
        # The recall's deadline is bound here (by `traced`): the step's reads carry it.
        started = time.monotonic()
        try:
            found = _call(self.reads, msg)
        except ImprintError as exc:
            found = exc
        return _result(msg.step, msg.task, found, started)


# A step's read that gives up this close to the recall's deadline ran into that deadline.
SLACK_SEC = 0.05


def _result(index: int, task: Step, found: Any, started: float) -> StepResult:
    """A step's result from what its row function returned, or the ImprintError it raised."""
    items: list[Item] = []
    rows = None
    if isinstance(found, ImprintError):
        detail = str(found)
        outcome = Outcome.TIMEOUT if isinstance(found, DeadlineExceeded) else Outcome.ERROR
    else:
        items, detail = task.items(found)
        rows = found if isinstance(found, SearchRows) else None
        outcome = Outcome.OK
    return StepResult(
        index=index,
        label=task.label(),
        outcome=outcome,
        detail=detail,
        items=tuple(items),
        run_ms=(time.monotonic() - started) * 1000,
        rows=rows,
    )


def _crashed(recall_id: str, index: int, step: Step, exc: Exception) -> StepResult:
    """A step that crashed (not an ImprintError): logged with its traceback, reported in one
    line; it must not sink the others."""
    log.error("recall.step.crashed", recall_id=recall_id, step=index, exc_info=exc)
    return StepResult(
        index=index,
        label=step.label(),
        outcome=Outcome.ERROR,
        detail=f"failed ({type(exc).__name__})",
    )


def _timed_out(msg: RecallRequest, index: int, step: Step) -> StepResult:
    log.warning(
        "recall.step.timeout",
        recall_id=msg.recall_id,
        step=index,
        tool=step.tool,
        timeout_sec=msg.timeout_sec,
    )
    return StepResult(
        index=index,
        label=step.label(),
        outcome=Outcome.TIMEOUT,
        detail=f"no answer within the recall's {msg.timeout_sec:g} s deadline",
    )


class StepRunnerProxy:
    run = proxy_method(StepRunner.run)


def _runs(task: RunStep) -> Callable[[StepRunnerProxy], pykka.Future[StepResult]]:
    return lambda runner: runner.run(task)


class RecallCoordinator(pykka.ThreadingActor):
    def __init__(
        self, runners: ActorPool[StepRunnerProxy], reads: Reads, index: int, load: Load
    ) -> None:
        super().__init__()
        self._runners = runners
        self._reads = reads
        self._load = load
        self.actor_name = f"RecallCoordinator-{index}"

    def recall(self, msg: RecallRequest, cwd: str = "") -> list[StepResult]:
        try:
            return self._recall(msg, cwd)
        finally:
            self._load.done()

    # Not skipped when late: a late recall still answers, with every step timed out.
    @traced("recall.gather", skip_late=False)
    def _recall(self, msg: RecallRequest, cwd: str) -> list[StepResult]:
        deadline = msg.deadline if msg.deadline is not None else time.monotonic() + msg.timeout_sec
        searches = {pos: s for pos, s in enumerate(msg.steps) if isinstance(s, SearchStep)}
        # Two or more searches are answered together, here, each resolved once.
        together = self._resolve(searches) if len(searches) > 1 else {}
        primed = self._prime(msg.workspace, together)
        try:
            return self._gather(msg, cwd, deadline, together)
        finally:
            self._reads.drop_primed(primed)

    def _resolve(self, searches: dict[int, SearchStep]) -> dict[int, Search | InputError]:
        cfg = self._reads.runtime.config.search
        out: dict[int, Search | InputError] = {}
        for pos, step in searches.items():
            try:
                out[pos] = step.args.resolve(cfg)
            except InputError as exc:  # that step's error, reported in its line
                out[pos] = exc
        return out

    def _gather(
        self,
        msg: RecallRequest,
        cwd: str,
        deadline: float,
        together: dict[int, Search | InputError],
    ) -> list[StepResult]:
        futures: dict[int, pykka.Future[StepResult] | StoreError] = {}
        for pos, step in enumerate(msg.steps):
            if pos in together:
                continue
            task = RunStep(
                request_id=msg.request_id,
                recall_id=msg.recall_id,
                step=msg.first_step + pos,
                deadline=deadline,
                workspace=msg.workspace,
                task=step,
                cwd=cwd,
            )
            try:
                futures[pos] = self._runners.send(_runs(task))
            except StoreError as exc:
                futures[pos] = exc
        # While the other steps run on the runners, the searches are answered here, together.
        answered = self._searches(msg, together, deadline) if together else {}
        results: list[StepResult] = []
        for pos, step in enumerate(msg.steps):
            i = msg.first_step + pos
            if pos in answered:
                results.append(answered[pos])
                continue
            future = futures[pos]
            left = max(0.0, deadline - time.monotonic())
            try:
                if isinstance(future, StoreError):
                    raise future
                got = future.get(timeout=left)
                if got.outcome is Outcome.TIMEOUT and time.monotonic() >= deadline - SLACK_SEC:
                    # Its own read gave up as the recall's deadline ran out: one timeout, in
                    # the recall's words, whichever of the two waits noticed first.
                    got = _timed_out(msg, i, step)
                results.append(got)
            except (pykka.Timeout, DeadlineExceeded):
                results.append(_timed_out(msg, i, step))
            except Exception as exc:  # a step that crashed must not sink the others
                results.append(_crashed(msg.recall_id, i, step, exc))
        return results

    def _searches(
        self, msg: RecallRequest, together: dict[int, Search | InputError], deadline: float
    ) -> dict[int, StepResult]:
        """A recall's search steps answered together (`search_many`): their reads asked at
        once, their records read in one fetch instead of one per step, and no thread per step
        handing the GIL back and forth. Each step's rows are those of its search alone; each
        step is traced as if a runner had run it, its reads under it."""
        started = time.monotonic()
        asked = {pos: a for pos, a in together.items() if isinstance(a, Search)}
        positions = list(asked)

        def bind(k: int) -> AbstractContextManager[object]:
            return structlog.contextvars.bound_contextvars(step=msg.first_step + positions[k])

        found: dict[int, SearchRows | Exception] = {
            pos: a for pos, a in together.items() if isinstance(a, InputError)
        }
        try:
            with bind_deadline(deadline):  # the recall's one deadline, as a runner binds it
                rows = search_many(self._reads, msg.workspace, list(asked.values()), bind)
            found.update(zip(positions, rows, strict=True))
        except Exception as exc:  # each search reports it; the other steps still answer
            found.update(dict.fromkeys(positions, exc))
        answered: dict[int, StepResult] = {}
        for pos in together:
            step, got = msg.steps[pos], found[pos]
            i = msg.first_step + pos
            if isinstance(got, Exception) and not isinstance(got, ImprintError):
                answered[pos] = _crashed(msg.recall_id, i, step, got)
            else:
                answered[pos] = _result(i, step, got, started)
            with structlog.contextvars.bound_contextvars(step=i):
                log_handled(self.actor_name, "recall.step", started, started, answered[pos].outcome)
        return answered

    def _prime(
        self, workspace: WorkspaceName, together: dict[int, Search | InputError]
    ) -> list[VectorQuery]:
        """Every search step's vector read asked as ONE read before the steps fan out: the
        queries embedded in one inference, the store searched in one call.

        Left to themselves the steps would reach the query embedder and the vector store one
        by one as their runners start, and on a small CPU they would compete for the cores."""
        queries: list[VectorQuery] = []
        try:
            queries = [
                q
                for asked in together.values()
                if isinstance(asked, Search)
                and (q := planned_vector_query(workspace, asked)) is not None
            ]
            self._reads.prime_vectors(queries)
        except Exception as exc:  # the steps read (and report) it themselves
            log.warning("recall.prime.failed", error=f"{type(exc).__name__}: {exc}")
        return queries


class RecallCoordinatorProxy:
    recall = proxy_method(RecallCoordinator.recall)


class RecallPools:
    """The runtime's coordinators and step runners, started together, stopped together."""

    def __init__(self, reads: Reads, coordinators: int, runners: int) -> None:
        self._runners: ActorPool[StepRunnerProxy] = ActorPool(
            "recall.step_runners",
            runners,
            lambda i, load: StepRunner.start(reads, i, load),
        )
        try:
            self._coordinators: ActorPool[RecallCoordinatorProxy] = ActorPool(
                "recall.pool_size",
                coordinators,
                lambda i, load: RecallCoordinator.start(self._runners, reads, i, load),
            )
        except BaseException:
            self._runners.stop()
            raise

    def ask(self, request: RecallRequest, cwd: str) -> pykka.Future[list[StepResult]]:
        return self._coordinators.send(lambda coordinator: coordinator.recall(request, cwd))

    def stop(self) -> list[str]:
        # Coordinators first: they wait on runners, never the other way round.
        return self._coordinators.stop() + self._runners.stop()


def recall_pools(runtime: Runtime, reads: Reads) -> RecallPools:
    """The runtime's recall pools, started with their sizes from config on first use."""
    cfg = runtime.config.recall
    # One set per gateway kind: step runners read through the gateway they were given.
    return runtime.service(
        f"recall.{type(reads).__name__}",
        lambda rt: RecallPools(reads, cfg.pool_size, cfg.step_runners),
    )


class Gathering:
    """One recall's steps, asked of a pooled coordinator and not yet waited for."""

    def __init__(self, future: pykka.Future[list[StepResult]], timeout_sec: float) -> None:
        self._future = future
        self._timeout_sec = timeout_sec

    def wait(self) -> list[StepResult]:
        # The coordinator answers by the deadline; the margin only guards against a hang.
        return self._future.get(timeout=self._timeout_sec + 30)


def start_plan(
    reads: Reads,
    workspace: WorkspaceName,
    steps: list[Step],
    timeout_sec: float,
    *,
    recall_id: str,
    cwd: str = "",
    first_step: int = 1,
    deadline: float | None = None,
) -> Gathering:
    """Ask a pooled coordinator to run one recall's steps under one deadline, fixed now
    (`timeout_sec` from now, or the earlier `deadline`: what the caller's deadline leaves
    once the tail is reserved); return at once."""
    at = time.monotonic() + timeout_sec
    request = RecallRequest(
        recall_id=RecallId(recall_id),
        deadline=at if deadline is None else min(at, deadline),
        workspace=workspace,
        steps=tuple(steps),
        timeout_sec=timeout_sec,
        first_step=first_step,
    )
    return Gathering(recall_pools(reads.runtime, reads).ask(request, cwd), timeout_sec)


def run_plan(
    reads: Reads,
    workspace: WorkspaceName,
    steps: list[Step],
    timeout_sec: float,
    *,
    recall_id: str,
    cwd: str = "",
    deadline: float | None = None,
) -> list[StepResult]:
    """Ask a pooled coordinator to run one recall's steps under one deadline, and wait."""
    return start_plan(
        reads, workspace, steps, timeout_sec, recall_id=recall_id, cwd=cwd, deadline=deadline
    ).wait()
