"""Imprint's benchmarks: one module per benchmark, shared helpers in `_common`.

Run each from the repository root as a module (`python -m benchmark.store`):

- `python -m benchmark.store`: ingest throughput, hybrid search latency by store size, and
  search through the reader actors beside the direct call of the same functions.
- `python -m benchmark.runtime recall`: separate tool calls against one recall (`recall.py`);
  `python -m benchmark.runtime recall --llm`: recall's local-model path (`recall_llm.py`).
- `python -m benchmark.retrieval --data-dir PATH`: search quality per mode on a fixed query set.
- `python -m benchmark.concurrency`: a 4-step recall beside the same steps one after another.
- `python -m benchmark.model`: the bundled model's load time and tokens/s.
- `python -m benchmark.stress`: bursts of recalls behind a busy model and a busy CPU: how
  late past their deadline they answer (publishes a plot too; needs matplotlib, in the test extra).
- `python -m benchmark.snapshot_reads`: every read tool's output, for byte-identity across
  refactors.

The newest run of each benchmark is committed under `benchmark/published/` (its README lists
them); local JSON goes to
`benchmark/out/` (ignored).
"""
