"""benchmark/load.py: its arguments, and one short run of both transports through a real
`serve --http` owner."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmark import load
from tests.conftest import TOPICS, write_tree


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--seconds", "0"], "--seconds: must be 1 to 3600"),
        (["--stdio", "0", "--http", "0"], "at least one client in all"),
        (["--http", "33"], "--stdio, --http: 0 to 32 each, at least one client in all"),
    ],
)
def test_bad_arguments_are_refused_with_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each bad argument is refused, naming the argument and what is allowed."""
    with pytest.raises(SystemExit) as exc:
        load.parse_args(argv)
    assert exc.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith(message)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_short_run_measures_every_tool_on_both_transports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """2 s with one stdio and one HTTP client: calls on both transports, no errors, a
    table row per tool of the mix, and a published results.json + README.md."""
    corpus = write_tree(tmp_path / "corpus", TOPICS)
    argv = ["--seconds", "2", "--stdio", "1", "--http", "1", "--corpus", str(corpus)]
    code = load.main([*argv, "--data-dir", str(tmp_path / "data"), "--out", str(tmp_path / "out")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "errors 0" in out
    for tool in ("search", "recall"):
        assert f"\n{tool} " in out
    assert "stdio: {'calls': " in out and "http: {'calls': " in out
    published = list((tmp_path / "out").glob("load-*"))
    assert len(published) == 1
    assert {p.name for p in published[0].iterdir()} == {"results.json", "README.md"}
