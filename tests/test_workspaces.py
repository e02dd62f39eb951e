"""Workspaces: name rules, create/list/switch, the active one, and the workspace CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from imprint.errors import WorkspaceError
from imprint.workspaces import (
    DEFAULT_WORKSPACE,
    active_workspace,
    create_workspace,
    list_workspaces,
    resolve_workspace,
    switch_workspace,
    validate_name,
    workspace_dir,
)

IMPRINT = Path(sys.executable).with_name("imprint")


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty data dir that IMPRINT_DATA_DIR points at; no other IMPRINT_* variables set."""
    for name in list(os.environ):
        if name.startswith("IMPRINT_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("IMPRINT_DATA_DIR", str(tmp_path))
    return tmp_path


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every path under `folder`, files with their bytes, folders as None."""
    return {
        str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None)
        for p in folder.rglob("*")
    }


# --- validate_name --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["a", "0", "default", "my-project", "a-", "9lives", "a" * 40, "x" + "-" * 39]
)
def test_valid_names(name: str) -> None:
    """Names of 1-40 characters from a-z, 0-9 and '-', not starting with '-', are accepted."""
    assert validate_name(name) == name


@pytest.mark.parametrize(
    "name",
    [
        "",
        "a" * 41,
        "Abc",
        "abC",
        "-abc",
        "-",
        "a_b",
        "a b",
        "a.b",
        "a/b",
        "../etc",
        "é",
        " abc",
        "abc ",
        "abc\n",
        "a" * 40 + "\n",
    ],
)
def test_invalid_names_raise_workspace_error(name: str) -> None:
    """Empty, 41+ chars, upper case, a leading '-', other characters, or a newline are refused."""
    with pytest.raises(WorkspaceError) as info:
        validate_name(name)
    message = str(info.value)
    assert repr(name) in message
    assert "1-40 characters" in message


def test_invalid_name_error_names_the_argument() -> None:
    """The error message starts with the argument name it was given."""
    with pytest.raises(WorkspaceError, match=r"^target: 'BAD' is not a workspace name"):
        validate_name("BAD", argument="target")


def test_non_string_name_is_refused() -> None:
    """A non-string name raises WorkspaceError rather than TypeError."""
    with pytest.raises(WorkspaceError):
        validate_name(None)  # type: ignore[arg-type]


# --- create / list / switch ------------------------------------------------------------------


def test_fresh_data_dir_has_no_workspaces_and_default_is_active(root: Path) -> None:
    """Before anything is created, the list is empty and 'default' is active."""
    assert list_workspaces(root) == []
    assert active_workspace(root) == DEFAULT_WORKSPACE == "default"


def test_create_makes_a_folder_and_lists_it(root: Path) -> None:
    """create_workspace makes {data_dir}/workspaces/<name>; list_workspaces returns names sorted."""
    for name in ("zeta", "alpha", "mid-1"):
        assert create_workspace(root, name) == name
    assert (root / "workspaces" / "alpha").is_dir()
    assert workspace_dir(root, validate_name("alpha")) == root / "workspaces" / "alpha"
    assert list_workspaces(root) == ["alpha", "mid-1", "zeta"]


def test_create_is_idempotent_and_keeps_contents(root: Path) -> None:
    """Creating an existing workspace again succeeds and leaves its contents in place."""
    create_workspace(root, "proj")
    marker = root / "workspaces" / "proj" / "data.sqlite"
    marker.write_bytes(b"keep me")
    create_workspace(root, "proj")
    assert marker.read_bytes() == b"keep me"
    assert list_workspaces(root) == ["proj"]


def test_create_with_a_bad_name_creates_nothing(root: Path) -> None:
    """A refused name leaves the data dir untouched."""
    with pytest.raises(WorkspaceError):
        create_workspace(root, "Bad Name")
    assert snapshot(root) == {}


def test_list_ignores_files_and_badly_named_folders(root: Path) -> None:
    """Only folders with valid names count as workspaces."""
    create_workspace(root, "good")
    (root / "workspaces" / "Bad_Name").mkdir()
    (root / "workspaces" / ".hidden").mkdir()
    (root / "workspaces" / "file").write_text("x")
    assert list_workspaces(root) == ["good"]


def test_switch_makes_a_workspace_active(root: Path) -> None:
    """switch_workspace to an existing workspace makes it the active one, persistently."""
    create_workspace(root, "one")
    create_workspace(root, "two")
    assert switch_workspace(root, "two") == "two"
    assert active_workspace(root) == "two"
    assert switch_workspace(root, "one") == "one"
    assert active_workspace(root) == "one"
    assert (root / "active_workspace").read_text(encoding="utf-8") == "one\n"


def test_switch_to_a_missing_workspace_fails_and_keeps_the_active_file(root: Path) -> None:
    """Switching to a workspace that does not exist raises and leaves the active file as it was."""
    create_workspace(root, "one")
    switch_workspace(root, "one")
    before = snapshot(root)
    with pytest.raises(WorkspaceError) as info:
        switch_workspace(root, "nope")
    message = str(info.value)
    assert "'nope' does not exist" in message
    assert "one" in message  # lists the existing ones
    assert "imprint workspace create nope" in message
    assert snapshot(root) == before
    assert active_workspace(root) == "one"


def test_switch_to_a_missing_workspace_on_a_fresh_dir_writes_nothing(root: Path) -> None:
    """With no workspaces at all, a failed switch creates no active file."""
    with pytest.raises(WorkspaceError, match="none yet"):
        switch_workspace(root, "default")
    assert snapshot(root) == {}


def test_switch_with_a_bad_name_fails_and_writes_nothing(root: Path) -> None:
    """A malformed name is refused by switch before anything is written."""
    create_workspace(root, "one")
    before = snapshot(root)
    with pytest.raises(WorkspaceError, match="is not a workspace name"):
        switch_workspace(root, "-one")
    assert snapshot(root) == before


@pytest.mark.parametrize("content", ["", "Not Valid\n", "../etc\n", "-x"])
def test_garbled_active_file_falls_back_to_default(root: Path, content: str) -> None:
    """An active file that does not hold a valid name means 'default'."""
    (root / "active_workspace").write_text(content, encoding="utf-8")
    assert active_workspace(root) == DEFAULT_WORKSPACE


def test_resolve_workspace(root: Path) -> None:
    """'' resolves to the active workspace; must_exist refuses names never created, not default."""
    create_workspace(root, "one")
    switch_workspace(root, "one")
    assert resolve_workspace(root) == "one"
    assert resolve_workspace(root, "other") == "other"
    assert resolve_workspace(root, "default", must_exist=True) == "default"
    with pytest.raises(WorkspaceError, match="'other' does not exist"):
        resolve_workspace(root, "other", must_exist=True)
    with pytest.raises(WorkspaceError):
        resolve_workspace(root, "Bad")


# --- CLI ----------------------------------------------------------------------------------


def run_cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("IMPRINT_")}
    env["IMPRINT_DATA_DIR"] = str(root)
    return subprocess.run(
        [str(IMPRINT), *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_cli_create_list_switch(root: Path) -> None:
    """`workspace create`, `list` (active marked with *) and `switch` work together."""
    created = run_cli(root, "workspace", "create", "proj")
    assert (created.returncode, created.stdout) == (0, "created workspace proj\n")
    assert (root / "workspaces" / "proj").is_dir()

    listed = run_cli(root, "workspace", "list")
    assert (listed.returncode, listed.stdout) == (0, "* default\n  proj\n")

    switched = run_cli(root, "workspace", "switch", "proj")
    assert (switched.returncode, switched.stdout) == (0, "active workspace: proj\n")
    assert active_workspace(root) == "proj"

    listed = run_cli(root, "workspace", "list")
    assert listed.stdout == "* proj\n"


def test_cli_list_shows_default_alongside_created_ones(root: Path) -> None:
    """`workspace list` includes the active 'default' even before it has a folder."""
    run_cli(root, "workspace", "create", "zeta")
    run_cli(root, "workspace", "create", "alpha")
    assert run_cli(root, "workspace", "list").stdout == "  alpha\n* default\n  zeta\n"


@pytest.mark.parametrize("name", ["Bad", "a" * 41, "bad_name", "with space", "-dash", "", "abc\n"])
def test_cli_create_bad_name_exits_2_and_creates_nothing(root: Path, name: str) -> None:
    """A bad name: exit 2, one 'error:' line naming the rule, and no folder created."""
    result = run_cli(root, "workspace", "create", "--", name)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: workspace:")
    assert repr(name) in lines[0]
    assert "1-40 characters" in lines[0]
    assert snapshot(root) == {}


def test_cli_switch_to_missing_workspace_exits_2_and_keeps_active(root: Path) -> None:
    """`workspace switch` to a missing workspace: exit 2, one error line, active file unchanged."""
    run_cli(root, "workspace", "create", "proj")
    run_cli(root, "workspace", "switch", "proj")
    before = snapshot(root)
    result = run_cli(root, "workspace", "switch", "nope")
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: workspace: 'nope' does not exist")
    assert snapshot(root) == before


def test_cli_switch_bad_name_exits_2(root: Path) -> None:
    """`workspace switch` with a malformed name exits 2 and writes nothing."""
    result = run_cli(root, "workspace", "switch", "UPPER")
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith("error: workspace: 'UPPER' is not a workspace name")
    assert snapshot(root) == {}
