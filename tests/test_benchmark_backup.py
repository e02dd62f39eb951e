"""benchmark/backup.py: its arguments, and one short run that builds a store, backs it up
while searching and publishes its figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmark import backup


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--records", "10"], "--records: must be 100 to 10,000,000"),
        (["--idle", "0"], "--idle: must be 10 to 10,000"),
    ],
)
def test_bad_arguments_are_refused_with_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each bad argument is refused, naming the argument and what is allowed."""
    with pytest.raises(SystemExit) as exc:
        backup.main(argv)
    assert exc.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith(message)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_short_run_backs_up_verified_and_publishes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """600 records: the store holds them all, the backup verifies and is about the store's
    size, idle searches are timed, and results.json + README.md are published."""
    out = tmp_path / "published"
    argv = ["--records", "600", "--idle", "10", "--data-dir", str(tmp_path / "data")]
    assert backup.main([*argv, "--publish", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "verified: True" in printed and "| idle | 10 |" in printed, printed
    (run,) = list(out.iterdir())
    res = json.loads((run / "results.json").read_text())
    assert res["records"] == 600 and res["backup"]["verified"] is True
    assert 0 < res["backup"]["mb"] <= res["store_mb"]
    assert "generated text and vectors" in (run / "README.md").read_text()
