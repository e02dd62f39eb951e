"""Folders and file names from elsewhere (issue 26, findings 2 and 10) replayed.

A foreign checkout or an unpacked archive can carry a `.git/` whose configuration names
programs, and file names holding terminal escapes, bidi overrides and zero-width characters.
Ingesting such a folder runs nothing of it, and every line that shows a name shows those
characters as visible escapes.
"""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest

from imprint.actors.lifecycle import Runtime
from imprint.reads.layout import escape_field
from imprint.writes.files import ingest_path
from tests.conftest import TOPICS, write_tree
from tests.support.dashboard import Dash
from tests.support.hardening import call, lexical

IMPRINT = Path(sys.executable).with_name("imprint")
# What the review's file names held: a clear-screen, a set-title, bidi overrides and
# isolates, zero-width characters. It sorts last, so a progress line ends on it.
HOSTILE = "z\x1b[2J\x1b]0;pwned\x07\u202ecod\u2066x\u2069\u200b\ufeff\u200f.md"
RAW = ("\x1b", "\x07", "\u202e", "\u2066", "\u2069", "\u200b", "\ufeff", "\u200f")


def _git(tree: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(tree), *args], check=True, capture_output=True)


@pytest.fixture
def hostile_repo(tmp_path: Path) -> tuple[Path, Path]:
    """A git checkout whose repository configuration runs programs that leave markers:
    `core.fsmonitor` (run by `git ls-files` and `git status`), the same key through an
    `include.path`, a `core.hooksPath` of hooks, a clean/smudge filter for every file, and
    its ignore rules: `.gitignore` at two levels (one re-including) and `.git/info/exclude`."""
    markers = tmp_path / "markers"
    markers.mkdir()
    tree = tmp_path / "allowed" / "proj"
    tree.mkdir(parents=True)
    _git(tree, "init", "-q")
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for hook in ("post-checkout", "post-index-change", "pre-commit", "reference-transaction"):
        script = hooks / hook
        script.write_text(f"#!/bin/sh\ntouch {markers}/hook-{hook}\n")
        script.chmod(0o755)
    (tmp_path / "extra.cfg").write_text(f"[core]\n\tfsmonitor = touch {markers}/included; echo\n")
    with (tree / ".git" / "config").open("a") as config:
        config.write(
            f"[core]\n\tfsmonitor = touch {markers}/fsmonitor; echo\n"
            f"\thooksPath = {hooks}\n\tuntrackedCache = true\n"
            f"[include]\n\tpath = {tmp_path / 'extra.cfg'}\n"
            f'[filter "evil"]\n\tclean = touch {markers}/clean; cat\n'
            f"\tsmudge = touch {markers}/smudge; cat\n\tprocess = touch {markers}/process\n"
        )
    (tree / ".gitattributes").write_text("* filter=evil\n")
    (tree / ".gitignore").write_text("secret/\n*.log.md\n")
    (tree / ".git" / "info").mkdir(exist_ok=True)
    (tree / ".git" / "info" / "exclude").write_text("private.md\n")
    (tree / "kept.md").write_text("# Kept\n\nvisiblemagnolia text\n")
    (tree / "private.md").write_text("# Private\n\nhiddenquartz one\n")
    (tree / "debug.log.md").write_text("# Log\n\nhiddenquartz two\n")
    (tree / "secret").mkdir()
    (tree / "secret" / "keys.md").write_text("# Keys\n\nhiddenquartz three\n")
    (tree / "sub").mkdir()
    (tree / "sub" / ".gitignore").write_text("local.md\n!keep.log.md\n")
    (tree / "sub" / "local.md").write_text("# Local\n\nhiddenquartz four\n")
    (tree / "sub" / "keep.log.md").write_text("# Keep\n\nvisiblemagnolia again\n")
    return tree, markers


def _assert_honoured(rt: Runtime, markers: Path) -> None:
    assert sorted(p.name for p in markers.iterdir()) == []
    assert lexical(rt, "hiddenquartz") == []
    assert sorted(lexical(rt, "visiblemagnolia")) == ["kept.md", "sub/keep.log.md"]


def test_ingest_path_runs_nothing_a_folders_git_configuration_names(
    rt: Runtime, hostile_repo: tuple[Path, Path]
) -> None:
    """The MCP ingest_path tool on a checkout whose .git/config names programs (fsmonitor,
    an included fsmonitor, hooks, filters) runs none of them; its ignore rules still hold
    (.gitignore at two levels with a re-include, .git/info/exclude)."""
    tree, markers = hostile_repo
    is_error, text = call(rt, tree.parent, "ingest_path", {"path": "proj"})
    assert not is_error, text
    _assert_honoured(rt, markers)


def _run_on_a_terminal(args: list[str], env: dict[str, str]) -> tuple[int, bytes, bytes]:
    """Run `args` with stderr on a pseudo-terminal (so rich draws its progress line):
    exit status, stdout, and every byte written to the terminal."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        args, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave
    )
    os.close(slave)
    seen = bytearray()
    # poll, not select: select() refuses a descriptor numbered 1,024 or more.
    poller = select.poll()
    poller.register(master, select.POLLIN)
    while True:
        ready = poller.poll(120_000)
        if not ready:
            proc.kill()
            break
        try:
            piece = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not piece:
            break
        seen += piece
    os.close(master)
    assert proc.stdout is not None
    with proc.stdout:
        out = proc.stdout.read()
    return proc.wait(120), out, bytes(seen)


def _cli_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("IMPRINT_")}
    env.update(IMPRINT_DATA_DIR=str(tmp_path / "cli-data"), COLUMNS="200", TERM="xterm")
    return env


@pytest.mark.slow
def test_cli_ingest_runs_nothing_a_folders_git_configuration_names(
    hostile_repo: tuple[Path, Path], tmp_path: Path
) -> None:
    """`imprint ingest` on the same checkout runs none of its configured programs, and the
    ignore rules hold (two files ingested)."""
    tree, markers = hostile_repo
    result = subprocess.run(
        [str(IMPRINT), "ingest", str(tree)],
        env=_cli_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in markers.iterdir()) == []
    assert result.stdout.startswith("ingested 2 files"), result.stdout


# --- finding 10: names that fool a terminal or a reader -------------------------------------


@pytest.fixture
def named_tree(tmp_path: Path) -> Path:
    tree = tmp_path / "allowed" / "names"
    tree.mkdir(parents=True)
    (tree / HOSTILE).write_text("# Invoice\n\nunusualpelican text in a named file\n")
    (tree / "plain.md").write_text("# Plain\n\nunusualpelican text in a plain file\n")
    return tree


def _clean(text: str) -> None:
    """No raw control, bidi or zero-width character; the name shown as visible escapes."""
    raw = sorted({f"U+{ord(c):04X}" for c in text if not (c.isprintable() or c in "\n\t")})
    assert raw == [], text
    assert "\\u202e" in text and "\\x1b[2J" in text


def test_hostile_names_are_escaped_in_every_header(rt: Runtime, named_tree: Path) -> None:
    """A file name holding ESC[2J, a set-title, U+202E, isolates and zero-width characters
    shows as visible escapes in search, list_sources, file_summary, get_memory, file_chunks
    and graph_scope; the stored name is unchanged, so the file can still be addressed."""
    ingest_path(rt, named_tree, project="names")
    assert HOSTILE in lexical(rt, "unusualpelican")
    for tool, args in [
        ("search", {"query": "unusualpelican", "mode": "lexical"}),
        ("list_sources", {"project": "names"}),
        ("file_summary", {"source": HOSTILE, "project": "names"}),
        ("file_chunks", {"source": HOSTILE, "project": "names"}),
        ("graph_scope", {"scope": "project:names", "depth": 2}),
        ("graph_scope", {"scope": f"source:{HOSTILE}"}),
        (
            "recall",
            {
                "question": "which files mention unusualpelican",
                "plan": [
                    {"tool": "list_sources", "args": {"project": "names"}},
                    {"tool": "file_summary", "args": {"source": HOSTILE, "project": "names"}},
                    {"tool": "search", "args": {"query": "unusualpelican", "mode": "lexical"}},
                ],
                "max_chars": 1200,
            },
        ),
    ]:
        is_error, text = call(rt, named_tree, tool, args)
        assert not is_error, (tool, text)
        _clean(text)
    _, found = call(rt, named_tree, "search", {"query": "invoice", "mode": "lexical"})
    rid = found.split("[1] ", 1)[1].split(" ", 1)[0]
    is_error, text = call(rt, named_tree, "get_memory", {"id": rid})
    assert not is_error, text
    _clean(text.split("\n\n", 1)[0])


def test_escape_field_escapes_format_and_separator_characters() -> None:
    """Every Cc, Cf, Zl, Zp character (and lone surrogates) becomes a backslash escape;
    letters, CJK, emoji and spaces stay; escaping twice changes nothing."""
    text = "a\u202eb\u2066\u200b\ufeff\u00ad\u2028\x1b\n\ud800 é 漢 🙂"
    shown = escape_field(text)
    assert shown == "a\\u202eb\\u2066\\u200b\\ufeff\\xad\\u2028\\x1b\\n\\ud800 é 漢 🙂"
    assert escape_field(shown) == shown


@pytest.mark.slow
def test_cli_ingest_progress_writes_no_escape_from_a_file_name(
    named_tree: Path, tmp_path: Path
) -> None:
    """`imprint ingest` on a terminal: the progress line shows the hostile name escaped;
    no clear-screen, set-title or bidi character from it reaches the terminal."""
    code, out, seen = _run_on_a_terminal(
        [str(IMPRINT), "ingest", str(named_tree)], _cli_env(tmp_path)
    )
    assert code == 0, seen.decode("utf-8", "replace")
    assert out.startswith(b"ingested 2 files"), out
    shown = seen.decode("utf-8", "replace")
    assert "\x1b[2J" not in shown and "\x1b]0;pwned" not in shown
    assert not any(c in shown for c in RAW[2:]), ascii(shown)
    assert "\\x1b]0;pwned\\x07\\u202e" in shown, ascii(shown)


@pytest.fixture
def small_tree(tmp_path: Path) -> Path:
    """The dashboard fixture's tree, with one file under the hostile name."""
    return write_tree(tmp_path / "proj", {**TOPICS, HOSTILE: "# Invoice\n\nunusualpelican\n"})


def test_dashboard_pages_show_hostile_names_escaped(dash: Dash) -> None:
    """The dashboard's sources list, the source page and its delete page show the name with
    visible escapes (HTML escaping alone leaves bidi and zero-width characters active); the
    links and the delete form still carry the real name, so the file opens and deletes."""
    dash.sign_in()
    listing = dash.client.get("/sources", params={"project": "proj"})
    assert listing.status_code == 200
    assert "source=z%1B%5B2J%1B%5D0%3Bpwned%07%E2%80%AE" in listing.text  # the real name
    page = dash.client.get("/source", params={"source": HOSTILE, "project": "proj"})
    assert page.status_code == 200, page.text
    delete = dash.client.get("/delete", params={"source": HOSTILE, "project": "proj"})
    assert delete.status_code == 200, delete.text
    assert f'name="source" value="{HOSTILE}"' in delete.text  # what the form posts back
    for html in (listing.text, page.text, delete.text):
        shown = re.sub(r'<input type="hidden"[^>]*>', "", html)
        assert "\\u202e" in shown
        assert not any(c in shown for c in RAW), ascii(shown)[:300]


def test_memory_pages_show_hostile_memories_inert(dash: Dash) -> None:
    """A memory (and its supersede) whose text is markup, terminal escapes, bidi and
    zero-width characters: the Memory page, its timeline, its next briefing and the
    delete page show it escaped and with visible escapes, never live."""
    from imprint.writes.gateway import Writes
    from imprint.writes.memories import remember

    writes = Writes(dash.runtime)
    text = f"Decided <script>alert(1)</script> {HOSTILE}"
    old = remember(writes, text, "proj", "decision").id
    remember(writes, f"Reversed: {HOSTILE} <b>x</b>", "proj", "decision", supersedes=[old])
    dash.sign_in()
    page = dash.client.get("/memory", params={"project": "proj"})
    assert page.status_code == 200, page.text
    delete = dash.client.get("/delete", params={"id": old})
    assert delete.status_code == 200, delete.text
    for html in (page.text, delete.text):
        shown = re.sub(r'<input type="hidden"[^>]*>', "", html)
        assert "<script>alert" not in shown and "<b>x</b>" not in shown
        assert "\\u202e" in shown
        assert not any(c in shown for c in RAW), ascii(shown)[:300]
