"""The README's first command in a bare copy of the repository, then the real entry point over
what it ingests: the repository's own code (nothing from beside the checkout).

The copy holds the git-tracked files only, in a temporary folder with no `shared/` beside it.
The install step (`bash scripts/install.sh`) is not re-run: a full install builds
llama-cpp-python for minutes, so `.venv/bin/imprint` in the copy is a two-line script that
runs this test's interpreter on the copy's own code. Set IMPRINT_TEST_FULL_INSTALL=1 to run the
README's command exactly as written, install included (it then needs the package registries).
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from imprint.ingest.tags import supported

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

REPO = Path(__file__).resolve().parents[2]
FULL_INSTALL = os.environ.get("IMPRINT_TEST_FULL_INSTALL") == "1"
FOLDER = "imprint"  # what the README's first command ingests
# The one file whose first docstring line the exact-phrase search looks for (its source: the
# path under FOLDER). The phrase is read from the file at run time.
PHRASE_FILE = "recall/evidence.py"


def readme_first_command() -> str:
    """The shell command of the README's "The two commands" section that ingests and searches."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S):
        command = " ".join(block.split())
        if "scripts/install.sh" in command and " search " in command:
            return command
    raise AssertionError("README.md has no ```sh block with install.sh ... imprint search")


def tracked_copy(dest: Path) -> None:
    """Copy the git-tracked files of this checkout (as they are on disk) to dest."""
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True
    ).stdout.split(b"\0")
    for rel in filter(None, files):
        src = REPO / os.fsdecode(rel)
        if not src.is_file():  # deleted in the working tree, not yet committed
            continue
        target = dest / os.fsdecode(rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)


def _imprint(repo: Path, data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(repo / ".venv" / "bin" / "imprint"), *args],
        cwd=repo,
        env=_env(repo, data_dir),
        capture_output=True,
        text=True,
        timeout=1500,
        check=False,
    )


def _env(repo: Path, data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("IMPRINT_")}
    env["IMPRINT_DATA_DIR"] = str(data_dir)
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # the copy is ingested: leave nothing in it
    if not FULL_INSTALL:
        env["PYTHONPATH"] = str(repo)
    return env


class Copy:
    def __init__(self, repo: Path, data_dir: Path) -> None:
        self.repo = repo
        self.data_dir = data_dir
        self.timings: dict[str, float] = {}
        self.outputs: dict[str, str] = {}


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Copy:
    base = tmp_path_factory.mktemp("bare")
    repo = base / "imprint"
    tracked_copy(repo)
    assert not (repo.parent / "shared").exists()
    if not FULL_INSTALL:
        script = repo / ".venv" / "bin" / "imprint"
        script.parent.mkdir(parents=True)
        script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m imprint.cli "$@"\n')
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
    data_dir = base / "data"
    command = readme_first_command()
    if not FULL_INSTALL:
        command = command.replace("bash scripts/install.sh", "true", 1)
    result = Copy(repo, data_dir)
    started = time.monotonic()
    proc = subprocess.run(
        ["bash", "-c", command],
        cwd=repo,
        env=_env(repo, data_dir),
        capture_output=True,
        text=True,
        timeout=1500,
        check=False,
    )
    result.timings["first"] = time.monotonic() - started
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result.outputs["first"] = proc.stdout
    started = time.monotonic()
    proc = _imprint(repo, data_dir, "ingest", FOLDER, "--project", "imprint")
    result.timings["second"] = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr
    result.outputs["second"] = proc.stdout
    return result


def test_readme_first_command_answers_from_the_repository_alone(copy: Copy) -> None:
    """The README's first command, run in a bare copy, ranks a recall passage on merging first.

    Held loosely on purpose, so that moving code between modules does not break it: the top
    hit is a recall module, and its excerpt says how the steps' results are merged."""
    assert f"ingest {FOLDER} " in readme_first_command()
    lines = copy.outputs["first"].splitlines()
    assert lines[0].startswith("ingested "), lines[0]
    assert lines[1].startswith("search "), lines[1]
    top = next(i for i, line in enumerate(lines) if line.startswith("[1] "))
    # One block per source: the top hit may carry a symbol, lines and other chunks (`+#0,#3`).
    assert re.search(r"\| imprint \| [\w/]*recall[\w/]*\.py#\d+[^|]* \|", lines[top]), lines[top]
    excerpt = " ".join(" ".join(lines[top + 1 : top + 10]).split())
    assert re.search(r"\bmerge", excerpt), excerpt


def test_every_file_is_ingested_then_skipped_in_a_tenth_of_the_time(copy: Copy) -> None:
    """Every file of a kind Imprint reads is ingested, every other one skipped and counted;
    a second run skips them all in under 1/10 of the time."""
    first = copy.outputs["first"].splitlines()[0]
    second = copy.outputs["second"]
    paths = [p for p in (copy.repo / FOLDER).rglob("*") if p.is_file()]
    files = sum(1 for p in paths if supported(p.name))
    assert first.startswith(f"ingested {files} files"), first
    assert f"{len(paths) - files} skipped" in first and "chunks/s" in first
    assert second.startswith("ingested 0 files (0 chunks)") and f"{files} unchanged" in second
    assert copy.timings["second"] < copy.timings["first"] / 10, copy.timings
    # stdout holds the summary only: logs and the progress bar go to stderr.
    assert second.count("\n") == 1


def _phrase(repo: Path) -> str:
    """The first line of PHRASE_FILE's docstring, checked to occur in that one file only."""
    doc = ast.get_docstring(ast.parse((repo / FOLDER / PHRASE_FILE).read_text(encoding="utf-8")))
    assert doc
    phrase = doc.splitlines()[0].rstrip(".")
    holders = [
        p.relative_to(repo / FOLDER).as_posix()
        for p in (repo / FOLDER).rglob("*")
        if p.is_file() and phrase in p.read_text(errors="replace")
    ]
    assert holders == [PHRASE_FILE], holders
    return phrase


@pytest.mark.parametrize("mode", ["lexical", "semantic", "hybrid"])
def test_each_mode_finds_an_exact_phrase_from_one_file(copy: Copy, mode: str) -> None:
    """Each mode finds the one file holding a phrase; lexical and hybrid rank it first."""
    phrase = _phrase(copy.repo)
    proc = _imprint(
        copy.repo, copy.data_dir, "search", phrase, "--mode", mode, "--max-chars", "6000"
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f'search "{phrase}" ({mode}):')
    hits = [line for line in lines if line.startswith("[")]
    assert any(f"| {PHRASE_FILE}#" in hit for hit in hits), hits
    if mode != "semantic":  # meaning alone need not rank it first; the words do
        assert f"| {PHRASE_FILE}#" in hits[0], hits[0]
    assert len(proc.stdout.rstrip("\n")) <= 6000


@pytest.mark.parametrize("max_chars", [1200, 4000, 12000])
def test_search_output_stays_under_budget_and_counts_hidden(copy: Copy, max_chars: int) -> None:
    """Output never exceeds max_chars; what the budget hid is counted on the last line."""
    proc = _imprint(
        copy.repo,
        copy.data_dir,
        "search",
        "actor lifecycle",
        "--limit",
        "50",
        "--max-chars",
        str(max_chars),
    )
    text = proc.stdout.rstrip("\n")
    assert proc.returncode == 0 and len(text) <= max_chars
    # Up to 50 sources (one block each): as many as the candidates hold.
    found = re.match(r'search ".*" \(hybrid\): (\d+) results', text)
    assert found, text.splitlines()[0]
    results = int(found.group(1))
    assert 10 < results <= 50
    shown = sum(1 for line in text.splitlines() if line.startswith("["))
    assert shown >= 1
    if shown < results:
        assert text.splitlines()[-1].startswith(f"({results - shown} more results hidden")


def test_status_reports_consistent_indexes_and_log_has_actor_traces(copy: Copy) -> None:
    """status says the indexes agree; the JSON log traces actor messages with timings."""
    proc = _imprint(copy.repo, copy.data_dir, "status")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "indexes: consistent" in proc.stdout
    events = [
        json.loads(line)
        for line in (copy.data_dir / "logs" / "imprint.jsonl").read_text().splitlines()
    ]
    traced = [e for e in events if e.get("event") == "actor.message"]
    kinds = {e["message"] for e in traced}
    # lexical_query from the lexical mode's search, lexical_and_phrase from the hybrid ones
    reads = {"vector_query", "lexical_query", "lexical_and_phrase", "fetch_records"}
    assert {"write", "check", *reads} <= kinds
    for event in traced:
        assert {"request_id", "actor", "queue_ms", "run_ms", "outcome"} <= event.keys()
