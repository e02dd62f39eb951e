"""The real entry point over the public corpus: ingest every file, skip them all again, search."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import CORPUS

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(1800),
    pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus is absent"),
]

PHRASE = "exit as soon as it has finished processing"
PHRASE_FILE = "pykka/docs/getting-started/actors.md"


def _imprint(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "imprint.cli", *args],
        env={**os.environ, "IMPRINT_DATA_DIR": str(data_dir)},
        capture_output=True,
        text=True,
        timeout=1500,
        check=False,
    )


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, float]]:
    data_dir = tmp_path_factory.mktemp("corpus-data")
    timings = {}
    for run in ("first", "second"):
        started = time.monotonic()
        proc = _imprint(data_dir, "ingest", str(CORPUS), "--project", "corpus")
        timings[run] = time.monotonic() - started
        assert proc.returncode == 0, proc.stderr
        timings[f"{run}_out"] = proc.stdout  # type: ignore[assignment]
    return data_dir, timings


def test_every_file_is_ingested_then_skipped_in_a_tenth_of_the_time(
    corpus_dir: tuple[Path, dict[str, float]],
) -> None:
    """Every corpus file is ingested; a second run skips them all in under 1/10 of the time."""
    _, timings = corpus_dir
    files = sum(1 for p in CORPUS.rglob("*") if p.is_file())
    first, second = str(timings["first_out"]), str(timings["second_out"])
    assert first.startswith(f"ingested {files} files"), first
    assert "0 skipped" in first and "chunks/s" in first
    assert second.startswith("ingested 0 files (0 chunks)") and f"{files} unchanged" in second
    assert timings["second"] < timings["first"] / 10, timings
    # stdout holds the summary only: logs and the progress bar go to stderr.
    assert first.count("\n") == 1


@pytest.mark.parametrize("mode", ["lexical", "semantic", "hybrid"])
def test_each_mode_finds_an_exact_phrase_from_one_file(
    corpus_dir: tuple[Path, dict[str, float]], mode: str
) -> None:
    """Each mode finds the one file holding a phrase; lexical and hybrid rank it first."""
    data_dir, _ = corpus_dir
    proc = _imprint(data_dir, "search", PHRASE, "--mode", mode, "--max-chars", "6000")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f'search "{PHRASE}" ({mode}):')
    hits = [line for line in lines if line.startswith("[")]
    assert any(f"| {PHRASE_FILE}#" in hit for hit in hits), hits
    if mode != "semantic":  # meaning alone ranks it 4th of 10 here; words rank it first
        assert f"| {PHRASE_FILE}#" in hits[0], hits[0]
    assert len(proc.stdout.rstrip("\n")) <= 6000


@pytest.mark.parametrize("max_chars", [1200, 4000, 12000])
def test_search_output_stays_under_budget_and_counts_hidden(
    corpus_dir: tuple[Path, dict[str, float]], max_chars: int
) -> None:
    """Output never exceeds max_chars; what the budget hid is counted on the last line."""
    data_dir, _ = corpus_dir
    proc = _imprint(
        data_dir, "search", "actor lifecycle", "--limit", "50", "--max-chars", str(max_chars)
    )
    text = proc.stdout.rstrip("\n")
    assert proc.returncode == 0 and len(text) <= max_chars
    shown = sum(1 for line in text.splitlines() if line.startswith("["))
    assert shown >= 1
    if shown < 50:
        assert text.splitlines()[-1].startswith(f"({50 - shown} more results hidden")


def test_status_reports_consistent_indexes_and_log_has_actor_traces(
    corpus_dir: tuple[Path, dict[str, float]],
) -> None:
    """status says the indexes agree; the JSON log traces actor messages with timings."""
    data_dir, _ = corpus_dir
    proc = _imprint(data_dir, "status")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "indexes: consistent" in proc.stdout
    events = [
        json.loads(line) for line in (data_dir / "logs" / "imprint.jsonl").read_text().splitlines()
    ]
    traced = [e for e in events if e.get("event") == "actor.message"]
    kinds = {e["message"] for e in traced}
    assert {"write", "vector_query", "lexical_query", "fetch_records", "check"} <= kinds
    for event in traced:
        assert {"request_id", "actor", "queue_ms", "run_ms", "outcome"} <= event.keys()
