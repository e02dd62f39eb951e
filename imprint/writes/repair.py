"""The writer's repair of a workspace's two indexes (`imprint repair`); and `status_row` by
its old address, for older callers (the row itself is a read:
`imprint.reads.status.status_row`, which the daemon's status handler asks)."""

from __future__ import annotations

from imprint.actors.lifecycle import Runtime
from imprint.reads import status
from imprint.reads.gateway import ActorReads
from imprint.reads.status import StatusRow
from imprint.store.check import RepairReport
from imprint.writes.gateway import Writes

__all__ = ["repair_workspace", "status_row"]


def status_row(runtime: Runtime, workspace: str = "", check: bool = False) -> StatusRow:
    """`imprint.reads.status.status_row` through the runtime's reads (older callers ask by
    this address)."""
    return status.status_row(ActorReads(runtime), workspace, check)


def repair_workspace(runtime: Runtime, workspace: str = "") -> RepairReport:
    """Rebuild whichever index of the workspace disagrees (found, done, still left)."""
    writes = Writes(runtime)
    return writes.repair(writes.open(workspace, create=False))
