"""Imprint's benchmarks: one module per benchmark, shared helpers in `_common`.

Run each from the repository root, as a file or as a module (`python -m benchmark.store`):

- `benchmark/store.py`: ingest throughput, hybrid search latency by store size, and search
  through the reader actors beside the direct call of the same functions.
- `benchmark/runtime.py recall`: separate tool calls against one recall (`recall.py`);
  `benchmark/runtime.py recall --llm`: recall's local-model path (`recall_llm.py`).
- `benchmark/retrieval.py --data-dir PATH`: search quality per mode on a fixed query set.
- `benchmark/concurrency.py`: a 4-step recall beside the same steps one after another.
- `benchmark/model.py`: the bundled model's load time and tokens/s.
- `benchmark/snapshot_reads.py`: every read tool's output, for byte-identity across refactors.

Published runs are committed under `benchmark/published/`; local JSON goes to
`benchmark/out/` (ignored).
"""
