"""PostgreSQL for the team-store tests: one server per test session, from the wheel.

Started once (about 3 s), in a fresh folder under the system temp dir, on a free loopback port;
as root it runs as the system user `imprint.store.postgres.local` makes. Each test takes a
workspace name of its own, so tests share the server without cleaning up after each other.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from imprint.types import WorkspaceName

__all__ = ["fresh_workspace", "team_database"]


@pytest.fixture(scope="session")
def team_database() -> Iterator[str]:
    """The URL of a running PostgreSQL 18 with pgvector, for this test session."""
    pytest.importorskip("psycopg")
    from imprint.store.postgres.local import LocalPostgres

    folder = Path(tempfile.mkdtemp(prefix="imprint-pg-"))
    server = LocalPostgres(folder)
    try:
        yield server.start()
    finally:
        try:
            server.stop("immediate")
        finally:
            shutil.rmtree(folder, ignore_errors=True)


def fresh_workspace(prefix: str = "user") -> WorkspaceName:
    return WorkspaceName(f"{prefix}:t{uuid.uuid4().hex[:10]}")
