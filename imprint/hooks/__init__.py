"""Client hooks: `imprint hook EVENT` (one entry point for every client's lifecycle hooks),
`imprint hooks install|uninstall|status`, and what a hook adds to a session.

One module per idea: `entry` (the hook process), `launcher` (how installed hooks start:
python -I -S), `capture` (the stop, pre-compact and session-end events handed to the capture
queue), `cold` (the briefing a hook reads from SQLite itself when no daemon answers yet),
`install` (each client's hook configuration), `mcp_entry` (its MCP server entry), `codex`
(what Codex says of its hooks) and `status` (`imprint hooks status`). What the hook process
shares with the daemon (the events, `hooks.*`, each run's record, the briefing's layout, the
capture queue) is on the ground floor, in `imprint.hooklib`; the briefing the daemon computes
and the hook report are reads (`imprint.reads.briefing`, `imprint.reads.hook_report`).

Only the light modules are re-exported here: a hook process imports this package (import
`install` and `status` by their own names).
"""

from imprint.hooklib.events import CLIENTS, EVENTS, canonical_event
from imprint.hooks.entry import hook_args, run_hook

__all__ = [
    "CLIENTS",
    "EVENTS",
    "canonical_event",
    "hook_args",
    "run_hook",
]
