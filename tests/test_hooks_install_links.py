"""`imprint hooks install` in a folder it cannot trust (issue 43, hook install findings).

A repository, or another user who can write a shared folder, can plant symbolic links where
a client's configuration goes, and where Imprint put its temporary file and its backup. The
review's replays: a project-scope install overwrote `~/.bashrc` with JSON, put a
repository's hooks and permissions into the user's own `~/.claude/settings.json` (0600
became 0644), and copied `~/.claude.json` (API key, e-mail) into the work tree. Here each
is replayed through the real command line with a fake home, whose files must come out
byte-identical with their modes, the install failing with one line that names the file
(or, for the temporary and backup names Imprint no longer writes through, succeeding
without touching them). Also: a user's own dotfiles link is written through, numbers
beyond a double are kept as written, and an install that fails in any part writes nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from imprint.errors import InputError
from imprint.hooklib.settings import HookSettings
from imprint.hooks.install import install_hooks
from tests.support.second_user import OtherUser

IMPRINT = Path(sys.executable).with_name("imprint")
# A real-format key, made at run time (the repository's own files stay within 20 redaction hits).
API_KEY = "sk-ant-" + "api03-" + "Qx7" * 30


def _fake_home(home: Path) -> None:
    """A home with the files the review's links reached: a shell profile, Claude Code's
    user settings (0600) and its account file with a key and an e-mail (0600)."""
    (home / ".claude").mkdir(parents=True)
    (home / ".codex").mkdir()
    (home / ".gemini").mkdir()
    (home / ".bashrc").write_text("export PATH=$HOME/bin:$PATH\n")
    os.chmod(home / ".bashrc", 0o644)
    files = {
        ".claude/settings.json": {"permissions": {"allow": ["Bash(ls)"]}, "model": "opus"},
        ".claude.json": {"primaryApiKey": API_KEY, "oauthAccount": {"emailAddress": "me@x.org"}},
        ".gemini/settings.json": {"theme": "dark"},
    }
    for name, data in files.items():
        (home / name).write_text(json.dumps(data, indent=1))
        os.chmod(home / name, 0o600)
    (home / ".codex" / "config.toml").write_text('model = "o4"\n')
    os.chmod(home / ".codex" / "config.toml", 0o600)


def _snapshot(folder: Path) -> dict[str, tuple[int, bytes | str]]:
    """Every entry under `folder`: its mode, and its bytes (a link: where it points)."""
    out: dict[str, tuple[int, bytes | str]] = {}
    for path in sorted(folder.rglob("*")):
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            out[str(path.relative_to(folder))] = (info.st_mode, os.readlink(path))
        elif stat.S_ISREG(info.st_mode):
            out[str(path.relative_to(folder))] = (info.st_mode, path.read_bytes())
        else:
            out[str(path.relative_to(folder))] = (info.st_mode, b"")
    return out


def _cli(
    *args: str, home: Path, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`imprint hooks install ARGS` as the user runs it, with `home` as HOME and no codex."""
    empty = home.parent / "empty-bin"
    empty.mkdir(exist_ok=True)
    environ = {
        **os.environ,
        "HOME": str(home),
        "IMPRINT_DATA_DIR": str(home.parent / "data"),
        "PATH": str(empty),
        **(env or {}),
    }
    environ.pop("CODEX_HOME", None)
    return subprocess.run(
        [str(IMPRINT), "hooks", "install", *args],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _error_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = result.stderr.strip().splitlines()
    assert result.returncode != 0, result.stdout
    assert len(lines) == 1, result.stderr
    return lines[0]


# Each planted link of the review: (client, the link in the repository, where it points in
# the home). The hooks file and the MCP file of each client that keeps them apart, a whole
# folder, and Codex's config.toml.
PLANTED = [
    ("claude-code", ".claude/settings.json", ".claude/settings.json"),
    ("claude-code", ".mcp.json", ".claude.json"),
    ("claude-code", ".mcp.json", ".bashrc"),
    ("claude-code", ".claude", ".claude"),
    ("gemini", ".gemini/settings.json", ".gemini/settings.json"),
    ("codex", ".codex/config.toml", ".codex/config.toml"),
    ("codex", ".codex/hooks.json", ".bashrc"),
]


@pytest.mark.parametrize(("client", "link", "target"), PLANTED)
def test_a_planted_link_out_of_the_project_is_refused_and_nothing_is_written(
    tmp_path: Path, client: str, link: str, target: str
) -> None:
    """A project-scope install in a repository whose client configuration is a symbolic
    link into the home exits non-zero with one line naming the link, and writes nothing:
    the home's files keep their bytes and modes, the repository gains no file (no copy of
    ~/.claude.json, no backup), whatever part of the install the link is in."""
    home, repo = tmp_path / "home", tmp_path / "repo"
    _fake_home(home)
    (repo / Path(link).parent).mkdir(parents=True, exist_ok=True)
    (repo / link).symlink_to(home / target)
    before_home, before_repo = _snapshot(home), _snapshot(repo)
    result = _cli("--client", client, "--scope", "project", home=home, cwd=repo)
    line = _error_line(result)
    assert str(repo / link) in line and "symbolic link" in line and "nothing was written" in line
    assert _snapshot(home) == before_home
    assert _snapshot(repo) == before_repo
    assert API_KEY not in result.stdout + result.stderr


def test_a_planted_temporary_file_link_is_never_written_through(tmp_path: Path) -> None:
    """The fixed temporary name the install wrote to (`.settings.json.imprint-tmp`),
    planted as a link to ~/.bashrc: the install no longer writes any name it did not make
    itself, so the profile keeps its bytes and mode, the planted link stays as it was, and
    the repository's own settings get the hooks."""
    home, repo = tmp_path / "home", tmp_path / "repo"
    _fake_home(home)
    (repo / ".claude").mkdir(parents=True)
    (repo / ".claude" / "settings.json").write_text('{"env": {"A": "1"}}')
    planted = repo / ".claude" / ".settings.json.imprint-tmp"
    planted.symlink_to(home / ".bashrc")
    (repo / ".mcp.json.imprint-tmp").symlink_to(home / ".claude.json")
    before_home = _snapshot(home)
    result = _cli("--client", "claude-code", "--scope", "project", home=home, cwd=repo)
    assert result.returncode == 0, result.stderr
    assert _snapshot(home) == before_home
    assert os.readlink(planted) == str(home / ".bashrc")
    data = json.loads((repo / ".claude" / "settings.json").read_text())
    assert data["env"] == {"A": "1"} and "SessionStart" in data["hooks"]
    assert API_KEY not in (repo / ".mcp.json").read_text()


def test_a_planted_backup_name_link_is_never_written_through(tmp_path: Path) -> None:
    """The backup's name is a timestamp anyone can foresee: links planted at every name the
    next minutes would give, pointing at ~/.bashrc, are left alone (the backup is made
    under a name of its own, exclusively), and the profile keeps its bytes and mode."""
    home, repo = tmp_path / "home", tmp_path / "repo"
    _fake_home(home)
    (repo / ".claude").mkdir(parents=True)
    settings = repo / ".claude" / "settings.json"
    settings.write_text('{"env": {"A": "1"}}')
    os.chmod(settings, 0o640)
    now = time.time()
    for second in range(-5, 300):
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now + second))
        (repo / ".claude" / f"settings.json.imprint-{stamp}.bak").symlink_to(home / ".bashrc")
    before_home = _snapshot(home)
    result = _cli("--client", "claude-code", "--scope", "project", home=home, cwd=repo)
    assert result.returncode == 0, result.stderr
    assert _snapshot(home) == before_home
    backups = [
        p for p in (repo / ".claude").glob("settings.json.imprint-*.bak") if not p.is_symlink()
    ]
    assert len(backups) == 1
    assert backups[0].read_text() == '{"env": {"A": "1"}}'
    assert stat.S_IMODE(backups[0].stat().st_mode) == 0o640
    assert stat.S_IMODE(settings.stat().st_mode) == 0o640


def test_a_hard_link_into_the_home_is_refused(tmp_path: Path) -> None:
    """A project's `.mcp.json` that is another name of ~/.claude.json (a hard link: the
    user's own file under a second name) is refused with one line: the key is not copied
    into the work tree, and the file keeps its bytes and mode."""
    home, repo = tmp_path / "home", tmp_path / "repo"
    _fake_home(home)
    repo.mkdir()
    os.link(home / ".claude.json", repo / ".mcp.json")
    before_home = _snapshot(home)
    result = _cli("--client", "claude-code", "--scope", "project", home=home, cwd=repo)
    line = _error_line(result)
    assert str(repo / ".mcp.json") in line and "hard link" in line
    assert _snapshot(home) == before_home
    assert sorted(p.name for p in repo.iterdir()) == [".mcp.json"]


def test_links_inside_the_project_that_are_yours_are_written_through(tmp_path: Path) -> None:
    """A link that stays inside the project (`.mcp.json -> config/mcp.json`) is the
    project's own layout: its target gets the server entry, the link stays."""
    home, repo = tmp_path / "home", tmp_path / "repo"
    _fake_home(home)
    (repo / "config").mkdir(parents=True)
    (repo / "config" / "mcp.json").write_text('{"mcpServers": {}}')
    (repo / ".mcp.json").symlink_to("config/mcp.json")
    result = _cli("--client", "claude-code", "--scope", "project", home=home, cwd=repo)
    assert result.returncode == 0, result.stderr
    assert os.readlink(repo / ".mcp.json") == "config/mcp.json"
    assert "imprint" in json.loads((repo / "config" / "mcp.json").read_text())["mcpServers"]


def test_uninstall_and_status_do_not_follow_a_planted_link_either(tmp_path: Path) -> None:
    """The user's own hooks installed in ~/.claude/settings.json, and a repository whose
    `.claude/settings.json` links there: `hooks uninstall --scope project` refuses with one
    line and leaves both as they were (no copy of the user's settings in the repository),
    and `hooks status` in the repository reports no project hooks, the user's only."""
    home, repo = tmp_path / "home", tmp_path / "repo"
    _fake_home(home)
    assert _cli("--client", "claude-code", home=home, cwd=tmp_path).returncode == 0
    (repo / ".claude").mkdir(parents=True)
    (repo / ".claude" / "settings.json").symlink_to(home / ".claude" / "settings.json")
    before_home, before_repo = _snapshot(home), _snapshot(repo)
    environ = {**os.environ, "HOME": str(home), "IMPRINT_DATA_DIR": str(tmp_path / "data")}
    environ["PATH"] = str(tmp_path / "empty-bin")
    uninstall = subprocess.run(
        [str(IMPRINT), "hooks", "uninstall", "--client", "claude-code", "--scope", "project"],
        cwd=repo,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    line = _error_line(uninstall)
    assert str(repo / ".claude" / "settings.json") in line and "symbolic link" in line
    assert _snapshot(home) == before_home and _snapshot(repo) == before_repo
    status = subprocess.run(
        [str(IMPRINT), "hooks", "status"],
        cwd=repo,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert status.returncode == 0, status.stderr
    shown = status.stdout.splitlines()
    at = shown.index("claude-code: user: session-start, stop, pre-compact, session-end")
    assert shown[at + 1].startswith(f"  not read: {repo / '.claude' / 'settings.json'}: a symbolic")


def test_a_folder_swapped_for_a_link_after_the_checks_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race: the repository's `.claude/` is a plain folder when the install checks and
    reads it, and a link to ~/.claude by the time it writes. The write opens each folder
    without following a link, so it fails with one line naming the file and writes
    nothing: ~/.claude keeps its files, bytes and modes."""
    import imprint.hooks.install as install

    home, repo = tmp_path / "home", tmp_path / "repo"
    _fake_home(home)
    (repo / ".claude").mkdir(parents=True)
    (repo / ".claude" / "settings.json").write_text("{}")
    real_write_all = install.write_all

    def swapped_then_written(pending: list[object]) -> None:
        (repo / ".claude").rename(repo / "moved")
        (repo / ".claude").symlink_to(home / ".claude")
        real_write_all(pending)  # type: ignore[arg-type]

    monkeypatch.setattr(install, "write_all", swapped_then_written)
    before_home = _snapshot(home)
    with pytest.raises(InputError, match="not a plain folder") as raised:
        install_hooks("claude-code", "project", HookSettings(), home=home, project=repo)
    assert str(repo / ".claude" / "settings.json") in str(raised.value)
    assert _snapshot(home) == before_home
    assert not (repo / ".mcp.json").exists()


# --- the user's own links in the user scope --------------------------------------------------


def test_a_dotfiles_link_in_the_home_is_written_through(tmp_path: Path) -> None:
    """~/.claude/settings.json as a link into the user's dotfiles folder (in the home): the
    link stays a link, its target gets the hooks and keeps its mode (0600), the backup sits
    beside the target with the old bytes and mode, and the install says it wrote through."""
    home = tmp_path / "home"
    _fake_home(home)
    dotfiles = home / "dotfiles" / "claude"
    dotfiles.mkdir(parents=True)
    target = dotfiles / "settings.json"
    (home / ".claude" / "settings.json").rename(target)
    (home / ".claude" / "settings.json").symlink_to("../dotfiles/claude/settings.json")
    old = target.read_bytes()
    result = _cli("--client", "claude-code", home=home, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    link = home / ".claude" / "settings.json"
    assert link.is_symlink() and os.readlink(link) == "../dotfiles/claude/settings.json"
    data = json.loads(target.read_text())
    assert data["permissions"] == {"allow": ["Bash(ls)"]} and "SessionStart" in data["hooks"]
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    (backup,) = dotfiles.glob("settings.json.imprint-*.bak")
    assert backup.read_bytes() == old and stat.S_IMODE(backup.stat().st_mode) == 0o600
    assert f"wrote: {link} (through the link, to {target})" in result.stdout


def test_a_user_link_out_of_the_home_is_refused(tmp_path: Path) -> None:
    """~/.claude/settings.json as a link to a file outside the home (a shared or read-only
    tree): refused with one line naming it, both files unchanged."""
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    _fake_home(home)
    elsewhere.mkdir()
    outside = elsewhere / "settings.json"
    outside.write_text("{}")
    (home / ".claude" / "settings.json").unlink()
    (home / ".claude" / "settings.json").symlink_to(outside)
    before_home, before_out = _snapshot(home), _snapshot(elsewhere)
    line = _error_line(_cli("--client", "claude-code", home=home, cwd=tmp_path))
    assert str(home / ".claude" / "settings.json") in line and str(home) in line
    assert _snapshot(home) == before_home and _snapshot(elsewhere) == before_out


# --- another user who can write a shared folder ---------------------------------------------


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A world-writable sticky folder outside the test's private tmp_path: both users reach it."""
    folder = Path(tempfile.mkdtemp(prefix="imp-", dir="/tmp"))
    os.chmod(folder, 0o1777)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_links_another_user_plants_in_a_shared_project_are_refused(
    tmp_path: Path, other_user: OtherUser, shared_tmp: Path
) -> None:
    """A project in a folder a second user can write: that user plants `.claude/` with a
    temporary-name link to the installer's ~/.bashrc and `settings.json` linking to a file
    inside the project that only the installer may write, and `.mcp.json` linking to the
    installer's ~/.claude.json. The install refuses the links that are not the installer's
    own (with one line naming one), and every file keeps its bytes and mode."""
    home = tmp_path / "home"
    _fake_home(home)
    project = shared_tmp / "team"
    project.mkdir()
    os.chmod(project, 0o777)
    mine = project / "notes.json"
    mine.write_text('{"mine": true}')
    os.chmod(mine, 0o600)
    attacker = textwrap.dedent(
        """
        import os, sys
        project, home = sys.argv[1], sys.argv[2]
        os.mkdir(os.path.join(project, ".claude"))
        os.symlink(os.path.join(home, ".bashrc"),
                   os.path.join(project, ".claude", ".settings.json.imprint-tmp"))
        os.symlink("../notes.json", os.path.join(project, ".claude", "settings.json"))
        os.symlink(os.path.join(home, ".claude.json"), os.path.join(project, ".mcp.json"))
        """
    )
    planted = subprocess.run(
        other_user.command("-c", attacker, str(project), str(home)),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert planted.returncode == 0, planted.stderr
    before_home, before_project = _snapshot(home), _snapshot(project)
    result = _cli("--client", "claude-code", "--scope", "project", home=home, cwd=project)
    line = _error_line(result)
    assert str(project / ".claude" / "settings.json") in line
    assert f"owned by uid {other_user.uid}" in line
    assert _snapshot(home) == before_home and _snapshot(project) == before_project


# --- what is written, and all of it or nothing ------------------------------------------------


def test_numbers_past_a_double_are_written_back_as_they_were(tmp_path: Path) -> None:
    """`1e400` in a client's settings (valid JSON, past a double) comes back as `1e400`, not
    as `Infinity` (which is not JSON): the file stays strict JSON that keeps its values."""
    home, project = tmp_path / "home", tmp_path / "proj"
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text('{"big": 1e400, "small": -1E+400, "n": [2.5, 1e400]}')
    install_hooks("claude-code", "user", HookSettings(), home=home, project=project)
    text = settings.read_text()

    def no_constants(word: str) -> object:
        raise AssertionError(f"{word} is not JSON")

    data = json.loads(text, parse_constant=no_constants, parse_float=str)
    assert (data["big"], data["small"], data["n"]) == ("1e400", "-1E+400", ["2.5", "1e400"])
    assert "SessionStart" in data["hooks"]


def test_a_failing_codex_config_edit_writes_no_hooks_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Codex's config.toml that does not parse: the install fails naming it, and writes
    nothing, hooks.json included (it was written before config.toml was read)."""
    codex_home = tmp_path / "codex"
    codex_home.mkdir()
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    monkeypatch.setenv("PATH", str(tmp_path))
    (codex_home / "config.toml").write_text("[features\nhooks = true\n")
    before = _snapshot(codex_home)
    with pytest.raises(InputError, match=r"config\.toml: not valid TOML"):
        install_hooks("codex", "user", HookSettings(), home=tmp_path, project=tmp_path)
    assert _snapshot(codex_home) == before
    (codex_home / "config.toml").write_text("features = 1\n")
    before = _snapshot(codex_home)
    with pytest.raises(InputError, match="set hooks = true in its features yourself"):
        install_hooks("codex", "user", HookSettings(), home=tmp_path, project=tmp_path)
    assert _snapshot(codex_home) == before


def test_a_write_that_fails_midway_puts_back_what_was_written(tmp_path: Path) -> None:
    """The disk fills at the install's second file (~/.claude.json): the first,
    ~/.claude/settings.json, is put back byte for byte with its mode and no backup is left;
    the install fails with one line naming the file it could not write."""
    home = tmp_path / "home"
    _fake_home(home)
    before = _snapshot(home)
    result = _cli(
        "--client",
        "claude-code",
        home=home,
        cwd=tmp_path,
        env={"IMPRINT_FAIL": "hooks.config.write:2"},
    )
    line = _error_line(result)
    assert str(home / ".claude.json") in line and "nothing was written" in line
    assert _snapshot(home) == before


def test_codex_project_install_writes_both_files_inside_the_project(tmp_path: Path) -> None:
    """The plain case still works: a Codex project install writes hooks.json and
    config.toml under the project's .codex/, hooks turned on."""
    home, repo = tmp_path / "home", tmp_path / "repo"
    _fake_home(home)
    repo.mkdir()
    result = _cli("--client", "codex", "--scope", "project", home=home, cwd=repo)
    assert result.returncode == 0, result.stderr
    assert tomllib.loads((repo / ".codex" / "config.toml").read_text())["features"]["hooks"]
    assert "hooks" in json.loads((repo / ".codex" / "hooks.json").read_text())
