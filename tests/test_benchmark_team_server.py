"""benchmark/team_server.py: its arguments, and one short run (local and team servers over
HTTP, writes through 1 and 2 team servers) that publishes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("psycopg")

from benchmark import team_server


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--servers", "9"], "--servers: must be 1 to 8"),
        (["--writes", "x"], "--writes: must be 16 to 100,000"),
    ],
)
def test_bad_arguments_are_refused_with_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each bad argument is refused, naming the argument and what is allowed."""
    with pytest.raises(SystemExit) as exc:
        team_server.main(argv)
    assert exc.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith(message)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_short_run_searches_both_servers_writes_through_two_and_publishes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """300 records: search p50 through HTTP from the local and the team server, writes per
    second through 1 and 2 team servers, results.json + README.md published."""
    out = tmp_path / "published"
    argv = ["--records", "300", "--queries", "20", "--writes", "32", "--servers", "2"]
    assert team_server.main([*argv, "--publish", "--out", str(out)]) == 0
    (folder,) = out.iterdir()
    results = json.loads((folder / "results.json").read_text())
    assert set(results["search"]) == {"local", "postgres (team)"}
    assert all(s["queries"] == 20 and s["p50_ms"] > 0 for s in results["search"].values())
    assert set(results["writes"]) == {"1", "2"}
    assert all(w["writes"] == 32 and w["writes_per_s"] > 0 for w in results["writes"].values())
    assert "team_server benchmark" in (folder / "README.md").read_text()
    assert "evidence:" in capsys.readouterr().out
