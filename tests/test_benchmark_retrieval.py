"""benchmark/retrieval.py: the query set, its checks, the metrics, and one real run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmark._common import DEFAULT_CORPUS as CORPUS
from benchmark.retrieval import (
    DEFAULT_QUERIES,
    HALVES,
    LookupResult,
    Searched,
    figures,
    load_queries,
    main,
    shown_sources,
)
from imprint.actors.lifecycle import Runtime
from imprint.config import load_config
from imprint.logs import configure_logging
from imprint.writes.files import ingest_path


def test_query_set_has_64_or_more_lookups_split_evenly() -> None:
    """The first 64+ lookups split evenly; the 40+ later `hard-` lookups are all held out;
    the 8+ `history-` lookups (issue 32, "when did X change") are all in the tune half."""
    lookups = load_queries(DEFAULT_QUERIES)
    first = [lk for lk in lookups if not lk.id.startswith(("hard-", "history-"))]
    hard = [lk for lk in lookups if lk.id.startswith("hard-")]
    history = [lk for lk in lookups if lk.id.startswith("history-")]
    assert len(history) >= 8
    assert {lk.half for lk in history} == {"tune"}
    assert len(first) >= 64
    counts = {half: sum(lk.half == half for lk in first) for half in HALVES}
    assert counts["tune"] == counts["heldout"]
    assert len(hard) >= 40
    assert {lk.half for lk in hard} == {"heldout"}
    folders = {"pykka", "structlog", "mopidy", "python-sdk", "imprint-memory-layer"}
    assert {project for lk in lookups for project, _ in lk.gold} == folders


@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus is absent")
def test_every_gold_source_is_a_corpus_file() -> None:
    """Each gold pair names a file of the corpus: project = folder, source relative to it."""
    missing = [
        (lk.id, project, source)
        for lk in load_queries(DEFAULT_QUERIES)
        for project, source in lk.gold
        if not (CORPUS / project / source).is_file()
    ]
    assert missing == []


def test_a_bad_query_file_is_refused_with_every_problem(tmp_path: Path) -> None:
    """A repeated id, an unknown half and a lookup without gold are all named at once."""
    path = tmp_path / "q.json"
    gold = [{"project": "p", "source": "a.md"}]
    path.write_text(
        json.dumps(
            {
                "lookups": [
                    {"id": "a", "query": "x", "gold": gold, "half": "tune"},
                    {"id": "a", "query": "y", "gold": gold, "half": "train"},
                    {"id": "b", "query": "z", "gold": [], "half": "heldout"},
                ]
            }
        ),
        encoding="utf-8",
    )
    with pytest.raises(SystemExit) as err:
        load_queries(path)
    message = str(err.value)
    assert "a: id used twice" in message
    assert "a: half 'train' is not one of tune, heldout" in message
    assert "b: gold needs at least one" in message


def _searched(rank: int | None, shown: bool = True, file_rank: int | None = None) -> Searched:
    return Searched(
        mode="hybrid",
        rank=rank,
        file_rank=file_rank,
        visible={"1200": shown, "4000": True},
        hits=[],
        ms=[2.0, 4.0],
    )


def test_figures_count_top1_recall5_and_mrr10() -> None:
    """Ranks 1, 3, 6 and none give top-1 1, recall@5 2, MRR@10 (1 + 1/3 + 1/6) / 4; file
    ranks 1, 2, 11 and none give R@5 by file 2 and R@10 by file 2."""
    results = []
    for i, (rank, file_rank) in enumerate(((1, 1), (3, 2), (6, 11), (None, None))):
        r = LookupResult(id=str(i), query="q", half="tune", gold=[["p", "s"]])
        r.modes["hybrid"] = _searched(rank, shown=rank == 1, file_rank=file_rank)
        results.append(r)
    f = figures(results, "hybrid")
    assert (f.lookups, f.top1, f.recall5) == (4, 1, 2)
    assert (f.files5, f.files10) == (2, 2)
    assert f.mrr10 == pytest.approx((1 + 1 / 3 + 1 / 6) / 4)
    assert f.visible == {"1200": 1, "4000": 4}
    assert f.p50_ms == 3.0


def test_shown_sources_reads_only_the_block_headers_the_budget_shows() -> None:
    """Sources come from `[n] id | project | source#chunk |` headers, not from excerpts."""
    text = (
        'search "q" (hybrid): 2 results\n\n'
        "[1] 0123456789abcdef | pykka | docs/a b.md#3 | note | 0.0300\n"
        "mentions | other | docs/x.md#1 | inside an excerpt\n\n"
        "(1 more results hidden by max_chars=1200; raise max_chars)"
    )
    assert shown_sources(text) == {("pykka", "docs/a b.md")}
    folded = "[1] 0123456789abcdef | mopidy | docs/migration.md#37 +#68,#102 | note | 0.0300\n"
    assert shown_sources(folded) == {("mopidy", "docs/migration.md")}


def test_a_run_on_a_real_store_scores_and_publishes(
    tmp_path: Path, small_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through real actors: a unique phrase is found first in every mode, and --publish writes
    README.md and results.json with the same figures."""
    monkeypatch.setenv("ANONYMIZED_TELEMETRY", "False")
    data = tmp_path / "data"
    runtime = Runtime(data, load_config(data)).start()
    try:
        ingest_path(runtime, small_tree, project="proj")
    finally:
        runtime.stop()
    queries = tmp_path / "q.json"
    lookups = [
        {
            "id": "phrase",
            "query": "purple kangaroo protocol",
            "gold": [{"project": "proj", "source": "docs/espresso.md"}],
            "half": "tune",
        },
        {
            "id": "absent",
            "query": "tomatoes compost mulch",
            "gold": [{"project": "proj", "source": "src/retry.py"}],
            "half": "heldout",
        },
    ]
    queries.write_text(json.dumps({"lookups": lookups}), encoding="utf-8")
    out = tmp_path / "published"
    try:
        argv = ["--data-dir", str(data), "--queries", str(queries), "--repeats", "2"]
        code = main([*argv, "--publish", "--out", str(out), "--corpus", str(small_tree)])
    finally:
        configure_logging(None, level="warning", to_file=False)
    assert code == 0
    (folder,) = out.iterdir()
    assert folder.name.startswith("retrieval-")
    res = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    for mode in ("hybrid", "semantic", "lexical"):
        assert res["figures"]["tune"][mode]["top1"] == 1
        assert res["figures"]["heldout"][mode]["top1"] == 0
        by_id = {r["id"]: r["modes"][mode] for r in res["lookups"]}
        assert by_id["phrase"]["rank"] == 1
        assert by_id["phrase"]["visible"] == {"1200": True, "4000": True}
        assert len(by_id["phrase"]["ms"]) == 2
    readme = (folder / "README.md").read_text(encoding="utf-8")
    assert "| tune | hybrid | 1/1 100% |" in readme


def test_a_sides_variant_is_settings_and_flags_or_refused() -> None:
    """`NAME:SETTING,...` gives environment settings and benchmark flags; anything else is
    refused naming what a setting may be."""
    import argparse

    from benchmark.retrieval_sides import parse_variant

    side = parse_variant("mix:IMPRINT_SEARCH_HISTORY_WEIGHT=0, --by-chunk")
    assert (side.name, side.env, side.args) == (
        "mix",
        {"IMPRINT_SEARCH_HISTORY_WEIGHT": "0"},
        ("--by-chunk",),
    )
    for bad in ("no-colon", "x:", "x:HOME=/tmp"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_variant(bad)
