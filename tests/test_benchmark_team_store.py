"""benchmark/team_store.py: its arguments, and one short run over both stores that publishes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("psycopg")

from benchmark import team_store


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--records", "10"], "--records: must be 100 to 1,000,000"),
        (["--queries", "x"], "--queries: must be 20 to 10,000"),
    ],
)
def test_bad_arguments_are_refused_with_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each bad argument is refused, naming the argument and what is allowed."""
    with pytest.raises(SystemExit) as exc:
        team_store.main(argv)
    assert exc.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith(message)


def test_a_short_run_measures_both_stores_and_publishes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """300 records: both stores written and searched, every vector probe finds its record in
    both, and results.json + README.md are published."""
    out = tmp_path / "published"
    assert (
        team_store.main(["--records", "300", "--queries", "20", "--publish", "--out", str(out)])
        == 0
    )
    (folder,) = out.iterdir()
    results = json.loads((folder / "results.json").read_text())
    assert set(results["stores"]) == {"local", "postgres"}
    for figures in results["stores"].values():
        assert figures["vector_top1_is_probed_record"] == 20
        assert figures["write_records_per_s"] > 0
    assert results["agreement"]["vector"] == 1.0
    assert "team_store benchmark" in (folder / "README.md").read_text()
    assert "evidence:" in capsys.readouterr().out
