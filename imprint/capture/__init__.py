"""Capture: each session's transcript, redacted, as the source `session:<id>` and a summary.

One module per idea: `queue` (the durable queue a hook appends to and the daemon drains),
`transcript` (reading a transcript from an offset; Claude Code's format), `codex` and
`gemini` (their clients' formats), `formats` (the reader for a client's name), `summary` (a
turn as stored, the rule-based session summary), `refine` (the local model's line on it,
where the model path is on), `session` (one capture, through `imprint.writes`), `backfill`
(the transcripts each client keeps) and `worker` (the daemon's draining thread). Only the
queue is exported here: a hook imports it and must stay light (the standard library only);
the rest is imported from its module.
"""

from imprint.hooklib.queue import capture_dir, enqueue

__all__ = ["capture_dir", "enqueue"]
