"""Capture: each session's transcript, redacted, as the source `session:<id>` and a summary.

One module per idea: `queue` (the durable queue a hook appends to and the daemon drains),
`transcript` (reading a Claude Code transcript from an offset), `summary` (a turn as stored,
the rule-based session summary), `session` (one capture, through `imprint.writes`) and
`worker` (the daemon's draining thread). Only the queue is exported here: a hook imports it
and must stay light (the standard library only); the rest is imported from its module.
"""

from imprint.capture.queue import capture_dir, enqueue

__all__ = ["capture_dir", "enqueue"]
