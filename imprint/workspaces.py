"""Workspaces: one folder each under `{data_dir}/workspaces/`, one of them active."""

from __future__ import annotations

import re
from pathlib import Path

from imprint._fs import atomic_write_text, private_dir
from imprint.errors import WorkspaceError
from imprint.types import WorkspaceName

__all__ = [
    "DEFAULT_WORKSPACE",
    "active_workspace",
    "create_workspace",
    "list_workspaces",
    "resolve_workspace",
    "switch_workspace",
    "validate_name",
    "workspace_dir",
]

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")
NAME_RULE = "1-40 characters of a-z, 0-9 and '-', not starting with '-'"
DEFAULT_WORKSPACE = WorkspaceName("default")


def validate_name(name: str, argument: str = "workspace") -> WorkspaceName:
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise WorkspaceError(f"{argument}: {name!r} is not a workspace name; allowed: {NAME_RULE}")
    return WorkspaceName(name)


def _root(data_dir: Path) -> Path:
    return data_dir / "workspaces"


def workspace_dir(data_dir: Path, name: WorkspaceName) -> Path:
    return _root(data_dir) / name


def list_workspaces(data_dir: Path) -> list[WorkspaceName]:
    root = _root(data_dir)
    if not root.is_dir():
        return []
    return sorted(
        WorkspaceName(p.name) for p in root.iterdir() if p.is_dir() and NAME_RE.fullmatch(p.name)
    )


def create_workspace(data_dir: Path, name: str) -> WorkspaceName:
    ws = validate_name(name)
    private_dir(workspace_dir(data_dir, ws))
    return ws


def _active_file(data_dir: Path) -> Path:
    return data_dir / "active_workspace"


def active_workspace(data_dir: Path) -> WorkspaceName:
    path = _active_file(data_dir)
    if path.exists():
        name = path.read_text(encoding="utf-8").strip()
        if NAME_RE.fullmatch(name):
            return WorkspaceName(name)
    return DEFAULT_WORKSPACE


def switch_workspace(data_dir: Path, name: str) -> WorkspaceName:
    ws = validate_name(name)
    if ws not in list_workspaces(data_dir):
        known = ", ".join(list_workspaces(data_dir)) or "none yet"
        raise WorkspaceError(
            f"workspace: {ws!r} does not exist (existing: {known}); "
            f"create it with 'imprint workspace create {ws}'"
        )
    atomic_write_text(_active_file(data_dir), ws + "\n")
    return ws


def resolve_workspace(data_dir: Path, name: str = "", *, must_exist: bool = False) -> WorkspaceName:
    """Empty means the active workspace. Reads of a workspace that was never created fail."""
    ws = active_workspace(data_dir) if name == "" else validate_name(name)
    if must_exist and ws != DEFAULT_WORKSPACE and ws not in list_workspaces(data_dir):
        known = ", ".join(list_workspaces(data_dir)) or "none yet"
        raise WorkspaceError(f"workspace: {ws!r} does not exist; existing: {known}")
    return ws
