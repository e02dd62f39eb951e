"""Workspaces and settings: `imprint workspace ...` and `imprint config ...`."""

from __future__ import annotations

from typing import Annotated

import typer

from imprint import config as cfg
from imprint.workspaces import (
    active_workspace,
    create_workspace,
    list_workspaces,
    switch_workspace,
)

__all__ = [
    "config_get",
    "config_list",
    "config_set",
    "workspace_create",
    "workspace_list",
    "workspace_switch",
]


def workspace_list() -> None:
    """List workspaces; the active one is marked with *."""
    root = cfg.data_dir()
    active = active_workspace(root)
    names = list_workspaces(root)
    if active not in names:
        names = sorted([*names, active])
    for name in names:
        typer.echo(f"{'*' if name == active else ' '} {name}")


def workspace_create(name: str) -> None:
    """Create a workspace (its folder); it stays empty until something is stored."""
    ws = create_workspace(cfg.data_dir(), name)
    typer.echo(f"created workspace {ws}")


def workspace_switch(name: str) -> None:
    """Make an existing workspace the active one."""
    ws = switch_workspace(cfg.data_dir(), name)
    typer.echo(f"active workspace: {ws}")


def config_list() -> None:
    """Every key with its value and what it accepts."""
    config = cfg.load_config()
    for key in cfg.all_keys():
        value = cfg.shown_value(config, key)
        shown = value if cfg.is_secret(key) else repr(value)
        typer.echo(f"{key} = {shown}  # {cfg.describe_allowed(key)}")


def config_get(
    key: str,
    reveal: Annotated[bool, typer.Option("--reveal", help="print a secret's value")] = False,
) -> None:
    """Print one key's value (file and environment applied); secrets as set / not set."""
    typer.echo(cfg.shown_value(cfg.load_config(), key, reveal=reveal))


def config_set(
    key: str,
    value: str,
    restart: Annotated[
        bool,
        typer.Option(
            "--restart",
            help="then restart the running daemon so it uses the value (connected clients "
            "reconnect; every acknowledged write is kept)",
        ),
    ] = False,
) -> None:
    """Validate and store a value in {data_dir}/config.toml (written atomically), and say
    when the running daemon or `serve --http` uses it."""
    from imprint.daemon import connect, running_daemon, stop_daemon

    root = cfg.data_dir()
    stored = cfg.set_value(root, key, value)
    if cfg.is_secret(key):
        typer.echo(f"{key} = {'set' if stored else 'not set'}")
    else:
        typer.echo(f"{key} = {stored!r}")
    info = running_daemon(root)
    if info is None:
        return  # nothing runs: the next start reads the file
    pid, kind = info["pid"], info.get("kind", "daemon")
    if kind != "daemon":
        # Started by hand in some terminal: stopping it here would not bring it back.
        typer.echo(
            f"imprint: {key} takes effect after a restart: {kind} (process {pid}) keeps the "
            "old value until you stop it (imprint stop) and start it again",
            err=True,
        )
        if restart:
            raise typer.Exit(1)
        return
    if restart:
        # SIGTERM: the daemon closes its stores in order (every acknowledged write is
        # journaled); then one is started, as a client's `serve` would.
        stop_daemon(root)
        connect(root).close()
        now = running_daemon(root)
        typer.echo(
            f"imprint: restarted the daemon (process {pid} -> "
            f"{now['pid'] if now else '?'}); it uses the new value. "
            "Clients that were connected reconnect (/mcp in Claude Code)",
            err=True,
        )
    elif cfg.needs_restart(key):
        typer.echo(
            f"imprint: {key} takes effect after a restart: imprint stop (the next client "
            "starts the daemon again), or imprint config set --restart",
            err=True,
        )
    else:
        typer.echo(
            f"imprint: the running daemon (process {pid}) keeps its {key} until a restart "
            "(imprint stop, or imprint config set --restart); the dashboard's Settings page "
            "applies it at once",
            err=True,
        )
