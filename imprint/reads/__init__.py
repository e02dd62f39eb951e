"""Row functions below the tools and recall: normalize arguments, fetch rows through `Reads`.

A tool and a recall step call the same function here, so clamps, filters and workspace scope
cannot drift apart. Nothing here knows MCP.
"""

from imprint.actors.deadline import Deadline, Pending, call_deadline
from imprint.reads.gateway import ActorReads, Reads

__all__ = ["ActorReads", "Deadline", "Pending", "Reads", "call_deadline"]
