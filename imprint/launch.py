"""The `imprint` entry point: the commands a client waits on skip the command line.

An assistant starts `imprint serve` at every session and waits for its `initialize` reply;
the bridge only copies bytes between stdio and the daemon's socket, so it imports the standard
library and `imprint.daemon.client`, not typer, rich, pydantic, structlog, MCP or the
store. The daemon it starts (`python -m imprint.daemon`) likewise binds its socket before it
imports the store. A client's hooks (`imprint hook EVENT [--client NAME]`) go the same light
way (`imprint.hooks.entry`). So does `imprint search` beside a running daemon: it asks the
daemon's search tool over the socket (`imprint.daemon.asks.call_tool`), importing none of
typer, the store or MCP (about 3 s of imports before), and so does `imprint recall`, asking
its recall tool, and `imprint status`, whose whole text the daemon composes
(`imprint.daemon.asks.ask_status_text`; about 1 s of imports before). Every other command
(and `serve` with any option but `--allow`, a search, recall or status with an option this
module does not read, or one with no daemon running) goes to `imprint.cli`.
"""

from __future__ import annotations

import os
import re
import sys

__all__ = ["main", "plain_recall", "plain_search", "plain_serve_allow", "plain_status"]

# `imprint search`'s options (imprint.cli.reads.search) by flag: the tool argument each sets
# and whether it is a number. Anything else (--help, a typo) goes to the full command line.
_SEARCH_OPTIONS: dict[str, tuple[str, bool]] = {
    "--project": ("project", False),
    "--type": ("type", False),
    "--lang": ("lang", False),
    "--layer": ("layer", False),
    "--limit": ("limit", True),
    "--mode": ("mode", False),
    "--max-chars": ("max_chars", True),
    "--since": ("since", False),
    "--workspace": ("workspace", False),
    "-w": ("workspace", False),
}
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_INT = re.compile(r"-?\d{1,9}")


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


def plain_search(argv: list[str]) -> dict[str, object] | None:
    """The search tool's arguments for `search QUERY [OPTION VALUE]...`, exactly as the full
    command line sends them to a daemon; None for anything it would answer otherwise (a
    usage error, --help, a --since that is not a plain date: its own message names it)."""
    if argv[:1] != ["search"]:
        return None
    args: dict[str, object] = {
        "query": None, "project": "", "type": "", "lang": "", "layer": "", "limit": None,
        "mode": None, "max_chars": None, "since": "", "workspace": "",
    }  # fmt: skip
    rest = argv[1:]
    while rest:
        word = rest.pop(0)
        if not word.startswith("-") or word == "-":
            if args["query"] is not None:
                return None  # a second argument: a usage error
            args["query"] = word
            continue
        flag, eq, value = word.partition("=")
        if flag not in _SEARCH_OPTIONS or (not eq and not rest):
            return None
        if not eq:
            value = rest.pop(0)
        name, number = _SEARCH_OPTIONS[flag]
        if number and not _INT.fullmatch(value):
            return None
        args[name] = int(value) if number else value
    if args["query"] is None or (args["since"] and not _plain_date(str(args["since"]))):
        return None
    return args


def plain_recall(argv: list[str]) -> dict[str, object] | None:
    """The recall tool's arguments for `recall QUESTION [--plan JSON] [--max-chars N]
    [--no-condense] [--workspace W]`, exactly as the full command line sends them to a
    daemon (imprint.cli.reads.recall); None for anything it would answer otherwise."""
    if argv[:1] != ["recall"]:
        return None
    question: str | None = None
    args: dict[str, object] = {"max_chars": None, "condense": True, "workspace": ""}
    plan = ""
    rest = argv[1:]
    while rest:
        word = rest.pop(0)
        if not word.startswith("-") or word == "-":
            if question is not None:
                return None  # a second argument: a usage error
            question = word
            continue
        if word == "--no-condense":
            args["condense"] = False
            continue
        flag, eq, value = word.partition("=")
        if flag not in ("--plan", "--max-chars", "--workspace", "-w") or (not eq and not rest):
            return None
        if not eq:
            value = rest.pop(0)
        if flag == "--max-chars":
            if not _INT.fullmatch(value):
                return None
            args["max_chars"] = int(value)
        elif flag == "--plan":
            plan = value
        else:
            args["workspace"] = value
    if question is None:
        return None
    return {"question": question, **args, **({"plan": plan} if plan else {})}


def plain_status(argv: list[str]) -> tuple[str, bool] | None:
    """(workspace, check) of `status [--workspace W] [--check]`, as imprint.cli.reads.status
    reads them; None for anything it would answer otherwise."""
    if argv[:1] != ["status"]:
        return None
    workspace, check = "", False
    rest = argv[1:]
    while rest:
        word = rest.pop(0)
        flag, eq, value = word.partition("=")
        if word == "--check":
            check = True
        elif flag in ("--workspace", "-w") and (eq or rest):
            workspace = value if eq else rest.pop(0)
        else:
            return None  # --help, a typo, an argument: the full command line answers
    return workspace, check


def _plain_date(text: str) -> bool:
    import datetime

    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return bool(_DATE.fullmatch(text))


def _ask(tool: str, args: dict[str, object]) -> int | None:
    """Print what the running daemon's `tool` answers; None when no daemon runs."""
    from imprint._fs import data_dir
    from imprint.daemon.asks import call_tool
    from imprint.daemon.client import daemon_alive
    from imprint.errors import ImprintError

    root = data_dir()
    if not daemon_alive(root):
        return None
    try:
        is_error, text = call_tool(root, tool, args)
    except ImprintError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if is_error:
        print(f"error: {text}", file=sys.stderr)
        return 2
    print(text)
    return 0


def _status(workspace: str, check: bool) -> int | None:
    """Print `imprint status` as the running daemon composes it (exit 1 when the indexes
    disagree, as the full command line does); None when no daemon runs, or one that sends
    no text."""
    from imprint._fs import data_dir
    from imprint.daemon.asks import ask_status_text
    from imprint.daemon.client import daemon_alive
    from imprint.errors import ImprintError

    root = data_dir()
    if not daemon_alive(root):
        return None
    try:
        asked = ask_status_text(root, workspace, check)
    except ImprintError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if asked is None:
        return None
    text, consistent = asked
    print(text)
    return 0 if consistent else 1


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
    for tool, arguments in (("search", plain_search(argv)), ("recall", plain_recall(argv))):
        if arguments is not None:
            code = _ask(tool, arguments)
            if code is not None:
                sys.exit(code)
    status = plain_status(argv)
    if status is not None:
        code = _status(*status)
        if code is not None:
            sys.exit(code)
    if argv[:1] == ["hook"]:
        from imprint.hooks.entry import exit_now, hook_args, run_hook

        asked = hook_args(argv[1:])
        if asked is not None:
            exit_now(run_hook(*asked))
    from imprint.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
