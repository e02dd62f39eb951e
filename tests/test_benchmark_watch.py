"""benchmark.watch on a tiny tree: every figure it publishes is measured, and the branch
switch it times really reaches the index."""

from __future__ import annotations

from benchmark.watch import run


def test_the_watch_benchmark_measures_each_figure_on_a_small_tree() -> None:
    """30 files, a 10-file branch switch and 2 edits: each latency has its samples, the
    rescan found nothing to do, and the switch was indexed in at least one batch."""
    out = run(files=30, switch=10, edits=2)
    assert out["edit_searchable"]["queries"] == 2
    assert out["idle_search"]["queries"] == 60
    assert len(out["no_change_rescans_sec"]) == 3
    assert out["switch_batches"] >= 1
    assert out["switch_chunks_per_sec"] > 0 and out["embedder_idle_chunks_per_sec"] > 0
    assert out["embedder_loaded_chunks_per_sec"] > 0
