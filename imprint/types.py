"""Domain ids, as NewTypes so a memory id is never passed where a workspace name belongs."""

from typing import NewType

__all__ = ["MemoryId", "RecallId", "RequestId", "WorkspaceName"]

MemoryId = NewType("MemoryId", str)
WorkspaceName = NewType("WorkspaceName", str)
RequestId = NewType("RequestId", str)
RecallId = NewType("RecallId", str)
