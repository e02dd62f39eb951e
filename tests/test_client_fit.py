"""What real sessions in Claude Code, Codex and Gemini CLI tripped over in their first
minute (issue 45): usage errors, disconnects, the data dir each client entry names, status
in words, and the smaller things."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _imprint(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`imprint ARGS...` through the real entry point (the console script's `main`)."""
    env = {**os.environ, "IMPRINT_DATA_DIR": str(tmp_path / "data")}
    return subprocess.run(
        [sys.executable, "-c", "from imprint.launch import main; main()", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )


# -- 5: a typo gets click's short usage error, exit 2 ------------------------------------------


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("nosuchcommand",), "No such command 'nosuchcommand'."),
        (("search",), "Missing argument 'query'."),
        (("search", "x", "--limit", "many"), "Invalid value for '--limit'"),
        (("hooks", "nosuch"), "No such command 'nosuch'."),
    ],
    ids=["unknown-command", "missing-query", "bad-option-value", "unknown-subcommand"],
)
def test_a_usage_error_is_clicks_short_message_and_exit_2(
    tmp_path: Path, args: tuple[str, ...], said: str
) -> None:
    """`imprint nosuchcommand`, `imprint search` without its query, a bad option value and
    an unknown subcommand: click's usage message on stderr, at most 5 lines, no traceback,
    exit 2 (before: a 34-37 line traceback and exit 1, since typer's vendored click
    exception is not `click.ClickException`)."""
    done = _imprint(tmp_path, *args)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) <= 5, done.stderr
    assert "Traceback" not in done.stderr
    assert said in done.stderr, done.stderr
    assert lines[0].startswith("Usage: imprint "), done.stderr


def test_help_is_unchanged_by_the_usage_error_handling(tmp_path: Path) -> None:
    """`imprint --help` and a command's `--help` still print their help and exit 0."""
    for args in (("--help",), ("search", "--help"), ("hooks", "install", "--help")):
        done = _imprint(tmp_path, *args)
        assert done.returncode == 0, done.stderr
        assert f"Usage: imprint {' '.join(args[:-1])}".rstrip() in done.stdout, done.stdout
        assert "Traceback" not in done.stderr
