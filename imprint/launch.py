"""The `imprint` entry point: the commands a client waits on skip the command line.

An assistant starts `imprint serve` at every session and waits for its `initialize` reply;
the bridge only copies bytes between stdio and the daemon's socket, so it imports the standard
library and `imprint.daemon.client`, not typer, rich, pydantic, structlog, MCP or the
store. The daemon it starts (`python -m imprint.daemon`) likewise binds its socket before it
imports the store. A client's hooks (`imprint hook EVENT [--client NAME]`) go the same light
way (`imprint.hooks.entry`). Every other command (and `serve` with any option but
`--allow`) goes to `imprint.cli`.
"""

from __future__ import annotations

import os
import sys

__all__ = ["main", "plain_serve_allow"]


def plain_serve_allow(argv: list[str]) -> list[str] | None:
    """The `--allow` paths of `serve [--allow PATH]...`; None for any other command line."""
    if not argv or argv[0] != "serve":
        return None
    allow: list[str] = []
    rest = argv[1:]
    while rest:
        arg = rest.pop(0)
        if arg == "--allow" and rest and not rest[0].startswith("-"):
            allow.append(rest.pop(0))
        elif arg.startswith("--allow=") and len(arg) > len("--allow="):
            allow.append(arg.removeprefix("--allow="))
        else:
            return None  # --http, --help, a typo: the full command line answers
    return allow


def _serve(allow: list[str]) -> int:
    from imprint._fs import data_dir
    from imprint.daemon.client import bridge_stdio
    from imprint.errors import ImprintError

    try:
        return bridge_stdio(data_dir(), allow)
    except ImprintError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def main() -> None:
    from imprint._fs import PRIVATE_UMASK

    # Whatever this process creates in the data dir (SQLite, Chroma, logs) is the user's alone.
    os.umask(PRIVATE_UMASK)
    argv = sys.argv[1:]
    allow = plain_serve_allow(argv)
    if allow is not None:
        sys.exit(_serve(allow))
    if argv[:1] == ["hook"]:
        from imprint.hooks.entry import exit_now, hook_args, run_hook

        asked = hook_args(argv[1:])
        if asked is not None:
            exit_now(run_hook(*asked))
    from imprint.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
