"""Client hooks: `imprint hook EVENT` (one entry point for every client's lifecycle hooks),
`imprint hooks install|uninstall|status`, and what a hook adds to a session.

One module per idea: `events` (each client's event names and the form it takes added
context in), `settings` (`hooks.*`, read without the config schema), `state` (each run
counted for `hooks status`), `entry` (the hook process), `install` (each client's hook
configuration and MCP server entry), `launcher` (how installed hooks start: python -I -S),
`briefing` (the session-start briefing and a prompt's memories, computed by the daemon),
`cold` (the briefing a hook reads from SQLite itself when no daemon answers yet) and
`compose` (the briefing's text, shared by both). Capture (`capture`) is handed the stop,
pre-compact and session-end events.

Only the light modules are re-exported here: a hook process imports this package (import
`install` and `briefing` by their own names: they pull in the reads and the capture worker).
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
