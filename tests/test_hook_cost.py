"""What a Claude Code session pays for Imprint's hooks (issue 45, "added wall time per
`claude -p` run"): each hook starts as `hooks install` wrote it, `python -I -S launcher.py`
(no site-packages on its path), and answers from the standard library and the daemon's
light client alone."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

from imprint.hooks.install import hook_command, hook_launcher
from imprint.hooks.state import read_state
from tests.test_daemon import StartDaemon, private_env, serve, shared_tmp  # noqa: F401


def _run_installed(event: str, data: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    words = shlex.split(hook_command(hook_launcher(), event, "claude-code", data))
    payload = {"session_id": "s1", "transcript_path": str(cwd / "none.jsonl"), "cwd": str(cwd)}
    return subprocess.run(
        words, input=json.dumps(payload), capture_output=True, text=True, timeout=120
    )


def test_installed_hooks_beside_a_warm_daemon_run_without_site_packages(
    serve: StartDaemon,  # noqa: F811  (the fixture imported above)
    tmp_path: Path,
) -> None:
    """The session-start and stop hooks, run exactly as installed (`-I -S`) beside a running
    daemon, each end in an answer, not a failure: the daemon package's own `__init__` no
    longer pulls the owner's logging stack (structlog, from site-packages) into the hook
    (before: every run failed with "No module named 'structlog'", the stop hook after
    queueing and before poking the daemon, and Claude Code still waited for each)."""
    d, _ = serve(warm_embedder=False)
    for event in ("session-start", "stop"):
        done = _run_installed(event, d.data_dir, tmp_path)
        assert done.returncode == 0, done.stderr
        row = read_state(d.data_dir)["claude-code"][event]
        assert row["runs"] == 1 and "last_error" not in row, row


def test_the_daemon_package_names_its_owner_lazily() -> None:
    """`imprint.daemon.Daemon` and `run_daemon` still resolve (the command line's
    `serve`), and importing the client half leaves the owner unloaded."""
    script = (
        "import sys, imprint.daemon.client; "
        "print('imprint.daemon.owner' in sys.modules); "
        "from imprint.daemon import Daemon, run_daemon; "
        "print(Daemon.__name__, callable(run_daemon))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.split() == ["False", "Daemon", "True"], out.stdout + out.stderr
