"""The daemon's warm-up: once the runtime is up, the daemon's own process keeps the heap it
built out of later garbage collections (`gc.freeze`); a Warmup that is not the daemon's own
(a test's, an embedding caller's) leaves the collector as it was."""

from __future__ import annotations

import gc
import threading
from pathlib import Path

import pytest

from imprint.config import Config
from imprint.daemon.warm import Warmup

WAIT_SEC = 120


@pytest.mark.parametrize("freeze", [True, False])
def test_the_daemons_warmup_freezes_the_heap_it_built(tmp_path: Path, freeze: bool) -> None:
    gc.unfreeze()  # whatever froze before this test
    warmed = threading.Event()
    warmup = Warmup(
        tmp_path / "data",
        Config(),
        embedder=False,
        stopping=threading.Event(),
        then=warmed.set,
        freeze=freeze,
    )
    warmup.start()
    try:
        assert warmed.wait(WAIT_SEC)
        runtime = warmup.wait_runtime(WAIT_SEC)
        frozen = gc.get_freeze_count()
        if freeze:
            assert frozen > 1000  # the package tree and the runtime's objects
            gc.collect()
            assert gc.get_freeze_count() == frozen  # a full collection leaves them out
        else:
            assert frozen == 0
        runtime.stop()
    finally:
        warmup.join()
        gc.unfreeze()  # back into the oldest generation: nothing of this test is kept
