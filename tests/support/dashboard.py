"""Helpers shared by tests (moved unchanged from the test module of the same name)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from imprint.actors.lifecycle import Runtime
from imprint.dashboard import Guard, build_app
from imprint.store.embedder import Embedder
from tests.support.dashboard_support import ingested_runtime, owner

PORT = 8766


BASE = f"http://127.0.0.1:{PORT}"


ORIGIN = {"Origin": BASE}


class Dash:
    def __init__(self, runtime: Runtime, guard: Guard, client: TestClient) -> None:
        self.runtime = runtime
        self.guard = guard
        self.client = client

    def sign_in(self) -> None:
        r = self.client.get(f"/?token={self.guard.issue_token()}")
        assert r.status_code == 200, r.text

    def post(self, path: str, data: dict[str, str], **kw: Any) -> Any:
        return self.client.post(path, data={"csrf": self.guard.csrf, **data}, headers=ORIGIN, **kw)


@pytest.fixture
def dash(tmp_path: Path, embedder: Embedder, small_tree: Path) -> Iterator[Dash]:
    with ingested_runtime(tmp_path / "data", small_tree, embedder) as runtime:
        guard = Guard(PORT)
        app = build_app(runtime, guard, owner(), cwd=small_tree)
        with TestClient(app, base_url=BASE) as client:
            yield Dash(runtime, guard, client)
