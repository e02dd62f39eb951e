"""Client hooks: `imprint hook EVENT` (what the clients run) and `imprint hooks install`,
`uninstall` and `status`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from imprint import config as cfg

__all__ = ["hook", "hooks_install", "hooks_status", "hooks_uninstall"]

ClientOpt = Annotated[str, typer.Option("--client", help="claude-code, codex, cursor or gemini")]
ScopeOpt = Annotated[
    str,
    typer.Option("--scope", help="user (your home folder) or project (this folder); default user"),
]


def _checked(client: str, scope: str) -> tuple[str, Literal["user", "project"]]:
    from imprint.errors import InputError
    from imprint.hooklib.events import CLIENTS

    if client not in CLIENTS:
        raise InputError(f"--client: {client!r} is not one of {', '.join(CLIENTS)}")
    if scope not in ("user", "project"):
        raise InputError(f"--scope: {scope!r} is not one of user, project")
    return client, "user" if scope == "user" else "project"


def hook(
    event: Annotated[
        str, typer.Argument(help="session-start, prompt-submit, stop, pre-compact, session-end")
    ],
    client: Annotated[str, typer.Option("--client", help="the client running the hook")] = "",
) -> None:
    """Run one client hook: the event's JSON on stdin, added context on stdout; always
    exits 0, printing nothing when it fails or runs past hooks.timeout_ms."""
    from imprint.hooks.entry import run_hook

    raise typer.Exit(run_hook(event, client))


def hooks_install(
    client: ClientOpt,
    scope: ScopeOpt = "user",
    trust: Annotated[
        bool,
        typer.Option(
            "--trust",
            help="codex only: trust Imprint's own hooks in Codex, which skips a hook until "
            "it is trusted (the record its /hooks review writes; no other hook is touched)",
        ),
    ] = False,
) -> None:
    """Install the client's hooks (and its MCP server entry if it has none): a briefing at
    session start, and capture of each session. Idempotent; other settings stay."""
    from imprint.errors import InputError
    from imprint.hooklib.settings import hook_settings
    from imprint.hooks.install import install_hooks

    name, where = _checked(client, scope)
    if trust and name != "codex":
        raise InputError(
            "--trust: only with --client codex (the other clients run hooks unreviewed)"
        )
    settings = hook_settings(cfg.data_dir())
    lines = install_hooks(name, where, settings, home=Path.home(), project=Path.cwd(), trust=trust)
    for line in lines:
        typer.echo(line)


def hooks_uninstall(client: ClientOpt, scope: ScopeOpt = "user") -> None:
    """Take Imprint's hooks out of the client's configuration (its MCP entry stays)."""
    from imprint.hooks.install import uninstall_hooks

    name, where = _checked(client, scope)
    for line in uninstall_hooks(name, where, home=Path.home(), project=Path.cwd()):
        typer.echo(line)


def hooks_status() -> None:
    """Per client: the hooks installed (user and this project), and per hook its runs,
    when it last ran and when and why it last failed."""
    from imprint.hooks.status import status_lines

    for line in status_lines(cfg.data_dir(), home=Path.home(), project=Path.cwd()):
        typer.echo(line)
