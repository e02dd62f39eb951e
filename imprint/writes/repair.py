"""The writer's check and repair of a workspace's two indexes (`status`, `imprint repair`)."""

from __future__ import annotations

from imprint._faults import fail
from imprint.actors.lifecycle import Runtime
from imprint.reads.status import StatusRow
from imprint.store.check import RepairReport
from imprint.writes.gateway import Writes

__all__ = ["repair_workspace", "status_row"]


def status_row(runtime: Runtime, workspace: str = "", check: bool = False) -> StatusRow:
    """Counts per project, facts, and whether the vector and lexical indexes agree (record
    by record with `check`), from the workspace's writer."""
    fail("status.row")  # a bug in a tool's row function (tests/test_error_lines.py)
    writes = Writes(runtime)
    ws = writes.open(workspace, create=False)
    found = writes.check(ws, deep=check)
    return StatusRow.of(ws, runtime.workspace(ws).chroma_url or "embedded", found)


def repair_workspace(runtime: Runtime, workspace: str = "") -> RepairReport:
    """Rebuild whichever index of the workspace disagrees (found, done, still left)."""
    writes = Writes(runtime)
    return writes.repair(writes.open(workspace, create=False))
