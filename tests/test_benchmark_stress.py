"""benchmark/stress.py: its arguments, one small burst through the real runtime, its plot."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmark import stress
from imprint.actors.lifecycle import Runtime
from imprint.config import Config
from imprint.ingest.pipeline import ingest_path
from imprint.store.embedder import Embedder
from tests.conftest import TOPICS, write_tree

pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--recalls", "16,x"], "--recalls: '16,x' is not a comma-separated list of counts"),
        (["--recalls", "0"], "--recalls: each count must be 1 to 256"),
        (["--conditions", "a,z"], "--conditions: ['z'] not allowed; of a, b, c, d, e"),
        (["--deadline", "0"], "--deadline: must be 0.1 to 60 seconds"),
    ],
)
def test_bad_arguments_are_refused_with_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each bad argument is refused, naming the argument and what is allowed."""
    with pytest.raises(SystemExit) as exc:
        stress.parse_args(argv)
    assert exc.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith(message)


def test_a_burst_behind_the_held_fake_model_is_measured(tmp_path: Path, embedder: Embedder) -> None:
    """Condition (a), 3 recalls: each recall's lateness and evidence, no model start after a
    deadline, the busy request finished, and each recall's queue wait from the JSON log."""
    data = tmp_path / "data"
    rt = Runtime(data, Config(), embedder=embedder).start()
    try:
        ingest_path(rt, write_tree(tmp_path / "p", TOPICS), project="proj")
    finally:
        rt.stop()
    args = stress.parse_args(["--recalls", "3", "--conditions", "a", "--deadline", "0.5"])
    out = stress.run_condition(args, data, tmp_path / "logs", "a", 3, embedder=embedder)
    assert len(out.lateness_ms) == 3 and out.evidence == 3
    assert out.notes == {"note: planning timed out": 3}
    # The busy request and the follow-up reached the model; the 3 plannings were skipped.
    assert out.model_calls == 2 and out.late_model_starts == 0
    assert out.busy_finished and out.busy_outcome == "ok"
    assert out.queue_outcomes == {"skipped_late": 3} and len(out.queue_ms) == 3
    assert out.searched_during_planning == 3  # the evidence was ready when planning gave up

    res = stress.Stress(
        started_at="2026-01-01T00:00:00Z",
        command=["stress"],
        machine={"cpus": 2, "platform": "p", "python": "3", "loadavg_start": (1.0, 1.0, 1.0)},
        config={"deadline_s": 0.5},
        label="after",
        outcomes=[out],
        before_label="before",
        before=[out],
    )
    row = "| (a) fake model held busy | 3 |"
    assert row in stress.table(res)
    assert any(line.startswith(row) for line in stress.comparison(res))
    stress.plot(res, tmp_path / "lateness.png")
    assert (tmp_path / "lateness.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
