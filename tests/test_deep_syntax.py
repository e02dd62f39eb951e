"""Deep syntax (issue 43, finding 5) replayed: files that nest a thousand levels deep (a Go
receiver of 1,000 `*`, a 1,000-term JS string concatenation, deep nesting in JS, Python,
Rust, Java, C++) are chunked, not a RecursionError; a file whose chunking still fails skips
only itself (counted and named in the summary), and a watched folder does not read it again
until it changes."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from imprint.actors.lifecycle import Runtime
from imprint.chunking import chunk_file
from imprint.ingest import records as pipeline
from imprint.watch import WatchHost
from imprint.writes.files import ingest_path
from tests.support.hardening import lexical

IMPRINT = Path(sys.executable).with_name("imprint")
DEEP = 1000
WAIT_SEC = 120.0


def _nest(opening: str, closing: str, inner: str) -> str:
    return opening * DEEP + inner + closing * DEEP


# Each as the review sent it: (file name, text); all but the last two raised RecursionError.
DEEP_FILES = {
    "receiver.go": "package x\n\nfunc (r " + "*" * DEEP + "Router) Handle() {\n\treturn\n}\n",
    "concat.js": "const s = " + " + ".join(f'"a{i}"' for i in range(DEEP)) + ";\n",
    "arrays.js": "const a = " + _nest("[", "]", "1") + ";\n",
    "parens.js": "const a = " + _nest("(", ")", "1") + ";\n",
    "functions.js": "".join(f"function f{i}() {{\n" for i in range(DEEP)) + "}\n" * DEEP,
    "defs.py": "".join(" " * i + f"def f{i}():\n" for i in range(DEEP)) + " " * DEEP + "pass\n",
    "mods.rs": "".join(f"mod m{i} {{\n" for i in range(DEEP)) + "}\n" * DEEP,
    "Classes.java": "class X {\n"
    + "".join(f"class C{i} {{\n" for i in range(DEEP))
    + "}\n" * DEEP
    + "}\n",
    "spaces.cpp": "".join(f"namespace n{i} {{\n" for i in range(DEEP)) + "}\n" * DEEP,
    "blocks.rs": "fn main() {\n" + _nest("{", "}", "1") + "\n}\n",
    "pointer.c": "int " + "*" * DEEP + "f(void) { return 0; }\n",
}
LANGS = {".go": "go", ".js": "javascript", ".py": "python", ".rs": "rust", ".java": "java"}
LANGS |= {".cpp": "cpp", ".c": "c"}


@pytest.mark.parametrize("name", sorted(DEEP_FILES))
def test_deep_syntax_is_chunked_whole_without_a_recursion_error(name: str) -> None:
    """Every deep input gives chunks covering each of its non-blank lines (the structure
    down to MAX_NESTING levels, prose below), never a RecursionError."""
    text = DEEP_FILES[name]
    chunks = chunk_file(text, LANGS[Path(name).suffix], name, "code")
    assert chunks
    rows = {i for c in chunks for i in range(c.line_start, c.line_end + 1)}
    lines = text.splitlines()
    assert {i for i, line in enumerate(lines, start=1) if line.strip()} <= rows


def test_deep_definitions_keep_their_symbols_to_the_nesting_cap() -> None:
    """The outer definitions of a deeply nested file keep their symbol paths (`m0.m1...`)
    down to MAX_NESTING levels; below it the code is cut like prose inside the deepest."""
    from imprint.chunking._tree import MAX_NESTING

    chunks = chunk_file(DEEP_FILES["mods.rs"], "rust", "mods.rs", "code")
    assert max(c.symbol.count(".") for c in chunks) == MAX_NESTING
    assert chunks[0].symbol.startswith("m0.m1.m2") and chunks[-1].symbol == "m0"


@pytest.fixture
def deep_tree(tmp_path: Path) -> Path:
    tree = tmp_path / "allowed" / "deep"
    tree.mkdir(parents=True)
    for name, text in DEEP_FILES.items():
        (tree / name).write_text(text)
    (tree / "plain.md").write_text("# Plain\n\nquietmarmot plain text\n")
    return tree


def test_a_folder_of_deep_files_is_indexed_whole(rt: Runtime, deep_tree: Path) -> None:
    """Ingesting the folder indexes every file, the deep ones and the plain one."""
    report = ingest_path(rt, deep_tree, project="deep")
    assert report.files == len(DEEP_FILES) + 1 and report.failed == [], report.summary()
    assert lexical(rt, "quietmarmot") == ["plain.md"]
    assert "receiver.go" in lexical(rt, "Router")


def _failing_on(name: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make chunking raise for the file `name` (a chunker bug on one text); the sources
    chunked are listed in the returned list."""
    real = pipeline.chunk_file
    chunked: list[str] = []

    def chunk(text: str, lang: str, source: str, *args: object) -> object:
        chunked.append(source)
        if source == name:
            raise RecursionError("maximum recursion depth exceeded")
        return real(text, lang, source, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(pipeline, "chunk_file", chunk)
    return chunked


def test_one_file_that_fails_skips_only_itself_and_is_named(
    rt: Runtime, deep_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file whose chunking raises is skipped alone: the rest is indexed and the summary
    counts and names it."""
    _failing_on("receiver.go", monkeypatch)
    report = ingest_path(rt, deep_tree, project="deep")
    assert report.failed == ["receiver.go"]
    assert report.files == len(DEEP_FILES)
    assert "1 failed (receiver.go)" in report.summary()
    assert lexical(rt, "quietmarmot") == ["plain.md"]
    assert "receiver.go" not in lexical(rt, "Router")


@pytest.fixture
def host(rt: Runtime) -> Iterator[WatchHost]:
    watches = WatchHost(rt.data_dir, lambda _t: rt, quiet_sec=0.1, max_wait_sec=2.0).start()
    try:
        yield watches
    finally:
        watches.stop()


def test_a_watched_folder_does_not_read_a_failing_file_again_until_it_changes(
    rt: Runtime, host: WatchHost, deep_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The watcher's batches succeed around a failing file (no retrying state), a later
    batch for another change does not chunk the failing file again, and an edit to it is
    tried once more."""
    chunked = _failing_on("receiver.go", monkeypatch)
    host.add(str(deep_tree))
    watcher = host.watcher(str(deep_tree.resolve()))
    assert watcher is not None
    assert watcher.wait(lambda w: w.batches >= 1, WAIT_SEC)
    row = watcher.row()
    assert row.state != "retrying" and row.error == "", row
    assert "1 failed" in row.last_batch
    assert chunked.count("receiver.go") == 1
    (deep_tree / "plain.md").write_text("# Plain\n\nloudmarmot changed text\n")
    assert watcher.wait(lambda w: lexical(rt, "loudmarmot") == ["plain.md"], WAIT_SEC)
    assert chunked.count("receiver.go") == 1  # not read again: the same text fails again
    receiver = deep_tree / "receiver.go"
    receiver.write_text(DEEP_FILES["receiver.go"] + "\n// edited\n")
    os.utime(receiver, (1_000_000_000, 1_000_000_000))  # an mtime surely new
    assert watcher.wait(lambda w: chunked.count("receiver.go") == 2, WAIT_SEC)


@pytest.mark.slow
def test_cli_ingest_of_deep_files_exits_0_and_indexes_them(deep_tree: Path, tmp_path: Path) -> None:
    """`imprint ingest` on the review's folder exits 0 and ingests every file (it exited 2
    with "send flatter JSON", indexing nothing)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("IMPRINT_")}
    env.update(IMPRINT_DATA_DIR=str(tmp_path / "cli-data"), COLUMNS="200")
    result = subprocess.run(
        [str(IMPRINT), "ingest", str(deep_tree)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"ingested {len(DEEP_FILES) + 1} files"), result.stdout
