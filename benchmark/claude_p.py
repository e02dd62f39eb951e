"""What Imprint adds to a headless Claude Code run (issue 45): `claude -p hi` in three
project folders, taking turns in one run, against a scripted model on 127.0.0.1:

- none: no Imprint;
- mcp: Imprint's MCP entry only (`.mcp.json` as `hooks install --scope project` wrote it);
- hooks+mcp: what `imprint hooks install --client claude-code --scope project` wrote
  (session-start, stop and session-end fire in a one-prompt `-p` run; prompt submit is off);
- noop-hooks+mcp: the same hooks with each command `true`: what Claude Code itself spends
  on running three hooks, the floor under Imprint's own.

The daemon is warm: warm-up runs start it and it stays (idle exit 600 s). Each run's wall
time is spawn to exit; the figures are the medians of each condition and of the paired
differences (hooks+mcp minus none, mcp minus none, round by round), with the load average
(1 min) before and after, as the machine is shared. The real Claude Code comes from
`.ci/node` (scripts/test.sh runs `npm ci`), the scripted model from the integration tests.

With `--a CHECKOUT` a fifth condition, hooks+mcp@A, is what that checkout's `hooks install`
wrote (its hooks' launcher, its code first on the server's PYTHONPATH), against the same
daemon: Imprint's client side of today and of this checkout, paired round by round (the
order of the conditions alternates round by round).

    python -m benchmark.claude_p [--rounds 8] [--a CHECKOUT] [--publish [--out FOLDER]]

`--publish` writes `benchmark/published/claude-p-<UTC stamp>/` (README.md, results.json).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmark._common import (
    PUBLISHED,
    REPO,
    Run,
    conclude,
    imprint_revision,
    machine,
    run_readme,
    title,
    utc_now,
)

__all__ = ["measure"]

CONDITIONS = ("none", "mcp", "noop-hooks+mcp", "hooks+mcp")
OTHER = "hooks+mcp@A"  # with --a: the same as hooks+mcp, from checkout A (today's)


def _install(folder: Path, env: dict[str, str], checkout: Path) -> None:
    """`hooks install --client claude-code --scope project` of `checkout`, in `folder`; its
    MCP entry's env puts that checkout first on PYTHONPATH too (its hooks' launcher is the
    checkout's own file), so the server and the hooks run the checkout's code."""
    subprocess.run(
        [sys.executable, "-m", "imprint.cli", "hooks", "install", "--client", "claude-code",
         "--scope", "project"],
        cwd=folder, env={**env, "PYTHONPATH": str(checkout)}, check=True, capture_output=True,
    )  # fmt: skip
    entry = json.loads((folder / ".mcp.json").read_text("utf-8"))
    entry["mcpServers"]["imprint"]["env"]["PYTHONPATH"] = str(checkout)
    (folder / ".mcp.json").write_text(json.dumps(entry, indent=2), "utf-8")


def _setup(base: Path, env: dict[str, str], other: Path | None) -> dict[str, Path]:
    names = (*CONDITIONS, *((OTHER,) if other else ()))
    folders = {name: base / name.replace("+", "-").replace("@", "-") for name in names}
    for folder in folders.values():
        folder.mkdir()
    full, mcp = folders["hooks+mcp"], folders["mcp"]
    _install(full, env, REPO)
    if other is not None:
        _install(folders[OTHER], env, other)
    shutil.copy(full / ".mcp.json", mcp / ".mcp.json")
    settings = json.loads((full / ".claude" / "settings.json").read_text("utf-8"))
    (mcp / ".claude").mkdir()
    rest = {k: v for k, v in settings.items() if k != "hooks"}
    (mcp / ".claude" / "settings.json").write_text(json.dumps(rest), "utf-8")
    noop = folders["noop-hooks+mcp"]
    shutil.copy(full / ".mcp.json", noop / ".mcp.json")
    for groups in settings["hooks"].values():
        for group in groups:
            for hook in group["hooks"]:
                hook["command"] = "true"
    (noop / ".claude").mkdir()
    (noop / ".claude" / "settings.json").write_text(json.dumps(settings), "utf-8")
    return folders


def measure(rounds: int, other: Path | None = None) -> dict[str, Any]:
    from imprint.hooklib.state import read_state
    from tests.support.model_server import scripted_model, text
    from tests.support.node_clients import client, client_env

    claude = client("@anthropic-ai/claude-code")
    with (
        tempfile.TemporaryDirectory(prefix="claude-p-") as tmp,
        scripted_model([[text("ok")]]) as model,
    ):
        base = Path(tmp)
        (base / "home").mkdir()
        env = client_env(
            base / "home",
            IMPRINT_DATA_DIR=str(base / "data"),
            IMPRINT_SERVER_IDLE_EXIT_SEC="600",
            ANTHROPIC_BASE_URL=model.url,
            # Built here, not written out: the repository's own files stay nearly free of
            # anything a secret scanner flags (tests/test_redact.py counts them).
            ANTHROPIC_API_KEY="-".join(("sk", "ant", "dummy", "loopback")),
        )
        folders = _setup(base, env, other)
        names = list(folders)

        def run(name: str) -> float:
            start = time.monotonic()
            done = subprocess.run(
                [claude, "-p", "hi", "--output-format", "json"],
                cwd=folders[name], env=env, capture_output=True, text=True, timeout=120,
            )  # fmt: skip
            took = time.monotonic() - start
            if done.returncode != 0:
                raise RuntimeError(f"{name}: claude exited {done.returncode}: {done.stderr}")
            return took

        try:
            warm_up = ("hooks+mcp", "mcp", "none", *names[len(CONDITIONS) :], "hooks+mcp")
            for name in warm_up:  # warm-up: the daemon
                run(name)
            loads = [os.getloadavg()[0]]
            times: dict[str, list[float]] = {name: [] for name in names}
            for n in range(rounds):
                for name in names if n % 2 == 0 else names[::-1]:
                    times[name].append(run(name))
            loads.append(os.getloadavg()[0])
            hooks = read_state(base / "data").get("claude-code", {})
        finally:
            subprocess.run(
                [sys.executable, "-m", "imprint.cli", "stop"], env=env, capture_output=True
            )
    none = times["none"]
    return {
        "rounds": rounds,
        "load_1min": [round(x, 1) for x in loads],
        "median_s": {name: round(statistics.median(v), 3) for name, v in times.items()},
        "added_median_s": {
            name: round(statistics.median(a - b for a, b in zip(times[name], none, strict=True)), 3)
            for name in names[1:]
        },
        **(
            {
                "b_minus_a_median_s": round(
                    statistics.median(
                        b - a for a, b in zip(times[OTHER], times["hooks+mcp"], strict=True)
                    ),
                    3,
                ),
                "a": str(other),
            }
            if other
            else {}
        ),
        # Each hook's runs and failures: a failing hook is quick, not what a user gets.
        "hooks": {
            event: {
                "runs": row.get("runs"),
                "failures": row.get("failures", 0),
                "last_error": row.get("last_error", ""),
            }
            for event, row in hooks.items()
        },
        "runs_s": {name: [round(x, 3) for x in v] for name, v in times.items()},
    }


@dataclass
class ClaudeP(Run):
    revision: dict[str, Any] = field(default_factory=dict)
    result: dict[str, Any] = field(default_factory=dict)  # what `measure` returns


def table(res: ClaudeP) -> str:
    r = res.result
    loads = " -> ".join(f"{x:.1f}" for x in r["load_1min"])
    lines = [
        title(res, "claude_p", f", {r['rounds']} rounds, load average {loads}"),
        "",
        "condition          median s   added (paired median) s",
    ]
    for name in r["median_s"]:
        added = r["added_median_s"].get(name)
        shown = f"{added:+.3f}" if added is not None else ""
        lines.append(f"{name:<18} {r['median_s'][name]:>8.3f}   {shown}".rstrip())
    if "b_minus_a_median_s" in r:
        lines.append(
            f"hooks+mcp minus hooks+mcp@A (paired median): {r['b_minus_a_median_s']:+.3f} s"
        )
        lines.append(f"A: {r['a']}")
    lines.append("")
    for event, row in r["hooks"].items():
        lines.append(
            f"hook {event}: {row['runs']} runs, {row['failures']} failed "
            f"{row['last_error']}".rstrip()
        )
    return "\n".join(lines)


def readme(res: ClaudeP, command: str) -> str:
    doc = (__doc__ or "").split("\n\n")[:4]
    return run_readme(
        "claude -p: what Imprint adds to a headless Claude Code run, daemon warm",
        res,
        command,
        [part.strip() + "\n" for part in doc],
        table(res),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--a", type=Path, default=None, help="checkout A (today's), paired")
    parser.add_argument("--out", type=Path, default=PUBLISHED)
    parser.add_argument("--publish", action="store_true", help="publish the run under --out")
    args = parser.parse_args()
    res = ClaudeP(
        started_at=utc_now(),
        command=list(sys.argv),
        machine=machine([]),
        config={"rounds": args.rounds},
        revision=imprint_revision(),
    )
    res.result = measure(args.rounds, args.a.resolve() if args.a else None)
    print(json.dumps(res.result, indent=1), file=sys.stderr)
    conclude(res, table, readme if args.publish else None, args.out, "claude-p")


if __name__ == "__main__":
    main()
