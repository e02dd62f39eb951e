"""A session start with no daemon running: the hook briefs from the store's SQLite file
itself (read-only, beside a writer), the same text the daemon gives, without Chroma, the
embedder or the actors; starts a daemon in the background; and fails open, named, on a
store it cannot read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from imprint.actors.lifecycle import Runtime
from imprint.hooklib.state import read_state
from imprint.hooks.cold import cold_briefing, store_file
from imprint.reads.briefing import HookRequest, hook_context
from imprint.writes.facts import edit_facts
from imprint.writes.gateway import Writes
from imprint.writes.memories import store_memory
from tests.support.process_support import hooks_status, wait_exit

IMPRINT = str(Path(sys.executable).with_name("imprint"))


def _fill(rt: Runtime) -> None:
    writes = Writes(rt)
    old = store_memory(writes, "The queue polls PostgreSQL.", project="shop", type="decision")
    store_memory(
        writes, "The queue moved to Redis.", project="shop", type="decision", supersedes=[old]
    )
    store_memory(writes, "Checkout crashed; fixed by a guard.", project="shop", type="bug")
    store_memory(writes, "Tests use pytest.", project="shop", type="preference")
    store_memory(writes, "Another project's decision.", project="other", type="decision")
    edit_facts(writes, "add", "shop", "deploys to", "fly.io")


def _session_start(data: Path, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    event = {"session_id": "s1", "cwd": str(cwd), "hook_event_name": "SessionStart"}
    env = {
        **os.environ,
        "IMPRINT_DATA_DIR": str(data),
        # The daemon it starts leaves on its own once idle: nothing outlives the test.
        "IMPRINT_SERVER_IDLE_EXIT_SEC": "1",
        # A bound for a loaded test machine: what it printed is what is checked here.
        "IMPRINT_HOOKS_TIMEOUT_MS_SESSION_START": "30000",
    }
    return subprocess.run(
        [IMPRINT, "hook", "SessionStart", "--client", "claude-code"],
        input=json.dumps(event).encode(),
        capture_output=True,
        timeout=120,
        env=env,
    )


def test_the_cold_briefing_is_the_daemons_briefing(rt: Runtime, tmp_path: Path) -> None:
    """Read from SQLite while the runtime (its writer) holds the store: the same text as
    the daemon's briefing for a folder of the project, superseded decision left out; and
    nothing for a folder of no project or an excluded project."""
    _fill(rt)
    shop = tmp_path / "shop"
    shop.mkdir()
    warm = hook_context(rt, HookRequest(event="session-start", cwd=str(shop)))
    assert "Redis" in warm and "PostgreSQL" not in warm and "fly.io" in warm
    assert cold_briefing(rt.data_dir, shop, 2000, ()) == warm
    assert cold_briefing(rt.data_dir, shop, 600, ()) == hook_context(
        rt, HookRequest(event="session-start", cwd=str(shop), context_chars=600)
    )
    assert cold_briefing(rt.data_dir, tmp_path / "nowhere", 2000, ()) == ""
    assert cold_briefing(rt.data_dir, shop, 2000, ("shop",)) == ""


def test_the_cold_briefing_imports_no_chroma_embedder_actors_or_schema(
    rt: Runtime, tmp_path: Path
) -> None:
    """The hook's own briefing (a fresh process) loads no chromadb, numpy, onnxruntime,
    pykka, structlog, MCP or config schema."""
    _fill(rt)
    (tmp_path / "shop").mkdir()
    script = (
        "import sys; from pathlib import Path; from imprint.hooks.cold import cold_briefing; "
        f"text = cold_briefing(Path({str(rt.data_dir)!r}), Path({str(tmp_path / 'shop')!r}), "
        "2000, ()); assert 'Redis' in text, text; "
        "heavy = {'chromadb', 'numpy', 'onnxruntime', 'pykka', 'structlog', 'mcp', 'typer'}; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & heavy), "
        "'imprint.config' in sys.modules, 'imprint.actors.lifecycle' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.split() == ["[]", "False", "False"], out.stdout + out.stderr


def test_a_session_start_without_a_daemon_briefs_and_starts_one(
    rt: Runtime, tmp_path: Path
) -> None:
    """No daemon runs: `imprint hook SessionStart` prints Claude Code's JSON with the
    briefing read from the store, counts the run ok, and has started a daemon in the
    background (it did not wait for it)."""
    _fill(rt)
    data = rt.data_dir
    rt.stop()
    shop = tmp_path / "shop"
    shop.mkdir()
    done = _session_start(data, shop)
    assert done.returncode == 0, done.stderr
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "The queue moved to Redis." in context and "Tests use pytest." in context
    row = read_state(data)["claude-code"]["session-start"]
    assert row["runs"] == 1 and "failures" not in row
    spawned = json.loads((data / "run" / "spawned.json").read_text())
    wait_exit(int(spawned["pid"]))


def test_a_broken_store_makes_the_session_start_quiet_and_is_named(tmp_path: Path) -> None:
    """The store's SQLite file is not a database: the hook exits 0 with nothing printed,
    and its failure (counted, with when) names the store file and what is wrong with it,
    in `imprint hooks status` too."""
    data = tmp_path / "data"
    path = store_file(data)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"this is not a database\n" * 200)
    shop = tmp_path / "shop"
    shop.mkdir()
    for _ in range(2):
        done = _session_start(data, shop)
        assert (done.returncode, done.stdout) == (0, b"")
        spawned = json.loads((data / "run" / "spawned.json").read_text())
        wait_exit(int(spawned["pid"]))
    row = read_state(data)["claude-code"]["session-start"]
    assert row["failures"] == 2 and isinstance(row["last_failure"], float)
    assert str(path) in row["last_error"] and "not a database" in row["last_error"]
    status = hooks_status(data)
    shown = next(ln for ln in status.splitlines() if "session-start:" in ln)
    assert "2 runs, 2 failed" in shown and "last failure " in shown, status
    assert "not a database" in shown
