"""Helpers shared by tests (moved unchanged from the test module of the same name)."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from tests.integration.conftest import daemon_pid, wait_gone
from tests.support.node_clients import run_client

DECISION = "I decided to keep the sightings in SQLite instead of CSV files."


FAILING = "cat birds.toml"


FIX = "printf 'region = \"north\"\\n' > birds.toml && cat birds.toml"


def _ok(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    proc = run_client(args, cwd, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def _imprint(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    return _ok([sys.executable, "-m", "imprint.cli", *args], cwd, env)


def _listing(data_dir: Path) -> str:
    state = data_dir / "hooks" / "state.json"
    log = data_dir / "logs" / "imprint.jsonl"
    return "\n".join(
        p.read_text("utf-8")[-4000:] if p.exists() else f"{p}: none" for p in (state, log)
    )


def stop_daemon(data_dir: Path) -> None:
    """SIGTERM for the daemon the hooks started (if one runs), waited until it is gone."""
    pid = daemon_pid(data_dir)
    if pid is not None:
        os.kill(pid, signal.SIGTERM)
        assert wait_gone(pid), "the daemon the hooks started did not stop on SIGTERM"


def assert_secret_nowhere(data_dir: Path, secret: str, briefed: str, notes: dict[str, Any]) -> None:
    """`secret` is in no file of the data dir (stores, capture queue and state, hook state,
    logs: the logs are among the files looked at) and not in what the second session was
    told, while the capture's notes hold the prompt it was in, redacted."""
    assert secret not in briefed
    assert "[redacted:" in json.dumps(notes["asked"])
    files = [p for p in sorted(data_dir.rglob("*")) if p.is_file()]
    assert any(p.suffix == ".jsonl" and p.parent.name == "logs" for p in files), files
    found = [str(p.relative_to(data_dir)) for p in files if secret.encode() in p.read_bytes()]
    assert found == [], f"the secret is stored in {found}"
