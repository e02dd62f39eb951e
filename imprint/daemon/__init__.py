"""One owner process per data dir, shared by every `imprint serve`, and its clients.

One module per idea: `security` (the private socket folder, the peer's uid), `runfile` (who
owns the data dir, its stderr log), `hello` (the first line of every connection, and who is
admitted to send it), `front` (a session's opening answered from the snapshot while MCP
loads, where `_accepts` says the SDK would answer it the same way), `owner` (the daemon:
its socket, sessions, warm-up in `warm`; the answers to every other operation a hello names
in `handlers`, the dashboard and those answers' work in `hosting`), `client` (connect,
spawn, bridge, stop) and `asks` (the one-line requests, one tool called). `imprint.launch`
imports only the client half (`client` and `asks`); the command line uses what this
package exports.

`Daemon` and `run_daemon` are loaded when first named (PEP 562): the owner brings in the
logging stack (structlog) and its background threads, and a hook or a light CLI command
that imports `imprint.daemon.client` runs this file first, under `python -I -S`, where no
site-packages are on the path.
"""

from typing import TYPE_CHECKING, Any

from imprint.daemon.asks import (
    ask_backup,
    ask_dashboard,
    ask_import,
    ask_status,
    ask_sync,
    ask_watch,
)
from imprint.daemon.client import (
    bridge_stdio,
    connect,
    daemon_alive,
    open_session,
    poke_capture,
    stop_daemon,
)
from imprint.daemon.runfile import running_daemon
from imprint.daemon.security import peer_uid, socket_dir, socket_path

if TYPE_CHECKING:
    from imprint.daemon.owner import Daemon, run_daemon

__all__ = [
    "Daemon",
    "ask_backup",
    "ask_dashboard",
    "ask_import",
    "ask_status",
    "ask_sync",
    "ask_watch",
    "bridge_stdio",
    "connect",
    "daemon_alive",
    "open_session",
    "peer_uid",
    "poke_capture",
    "run_daemon",
    "running_daemon",
    "socket_dir",
    "socket_path",
    "stop_daemon",
]


def __getattr__(name: str) -> Any:
    if name in ("Daemon", "run_daemon"):
        from imprint.daemon import owner

        return getattr(owner, name)
    raise AttributeError(f"module 'imprint.daemon' has no attribute {name!r}")
