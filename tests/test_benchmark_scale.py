"""benchmark/scale.py: its sizes (up to 1M), and a store kept in --data-dir that a later run
measures again without rebuilding it (a 1M store takes most of an hour to build here)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from benchmark import scale
from benchmark.store import parse_sizes
from tests.conftest import write_tree


def test_sizes_take_k_and_m_suffixes() -> None:
    assert parse_sizes("10k,100k,1M") == [10_000, 100_000, 1_000_000]
    assert parse_sizes("2.5k, 500") == [500, 2_500]


@pytest.mark.parametrize("raw", ["1x", "m", "0", "-1k"])
def test_a_bad_size_is_refused_naming_the_argument(raw: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=r"^--sizes: .* is not a positive count"):
        parse_sizes(raw)


def test_a_folder_holding_another_or_an_unfinished_store_is_refused(tmp_path: Path) -> None:
    """Neither measured as if it were the size asked for, nor overwritten."""
    assert scale.built_before(tmp_path / "none", 100) is None
    unfinished = tmp_path / "unfinished"
    (unfinished / "workspaces").mkdir(parents=True)
    with pytest.raises(SystemExit, match="unfinished store; remove it to rebuild"):
        scale.built_before(unfinished, 100)
    other = tmp_path / "other"
    other.mkdir()
    (other / scale.BUILT).write_text(json.dumps({"records": 50}), encoding="utf-8")
    with pytest.raises(SystemExit, match="holds a store of 50, not 100"):
        scale.built_before(other, 100)


PROSE = (
    "An actor handles one message at a time from its mailbox. "
    "Stopping an actor drains the messages that wait in its mailbox first. "
    "A supervisor restarts a child actor that failed with an exception. "
    "The registry keeps a reference to every actor that is still running. "
    "Futures carry the reply of an ask back to the caller that waits for it. "
    "A proxy turns attribute access on an actor into messages to that actor. "
    "Threads run the actors, so a blocking call holds one thread of the pool. "
    "Each message of the benchmark is written through the writer actor in batches. "
    "The lexical index ranks the records that hold the rarer words of a query. "
    "The vector index finds the nearest records to the embedding of a query.\n"
)


@pytest.mark.timeout(300)
def test_a_kept_store_is_measured_again_without_rebuilding(tmp_path: Path) -> None:
    """The first run builds 300 records and records the build; the second finds that record,
    checks the store holds exactly those records, and measures it without writing."""
    corpus = write_tree(tmp_path / "corpus", {"docs/actors.md": PROSE})
    job = scale.SizeJob(tmp_path / "data" / "300", 300, corpus, 100, 8, compare=False)
    first = scale.run_size(job)
    assert not first.size.reused
    assert first.size.check["records"] == first.size.check["vectors"] == 300
    built = json.loads((job.folder / scale.BUILT).read_text(encoding="utf-8"))
    assert built["records"] == 300
    assert built["build_seconds"] == first.size.build_seconds
    mtime = (job.folder / scale.BUILT).stat().st_mtime_ns
    second = scale.run_size(job)
    assert second.size.reused
    assert second.size.records == 300
    assert second.size.build_seconds == first.size.build_seconds
    assert (job.folder / scale.BUILT).stat().st_mtime_ns == mtime
    assert second.size.hybrid.p50_ms > 0
    with pytest.raises(SystemExit, match="holds a store of 300, not 400"):
        scale.run_size(scale.SizeJob(job.folder, 400, corpus, 100, 8, compare=False))
