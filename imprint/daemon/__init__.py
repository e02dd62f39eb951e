"""One owner process per data dir, shared by every `imprint serve`, and its clients.

One module per idea: `security` (the private socket folder, the peer's uid), `runfile` (who
owns the data dir, its stderr log), `hello` (the first line of every connection, and who is
admitted to send it), `front` (a session's opening answered from the snapshot while MCP
loads, where `_accepts` says the SDK would answer it the same way), `owner` (the daemon:
its socket, sessions, warm-up in `warm`, the dashboard in `hosting`) and `client` (connect,
spawn, bridge, stop). `imprint.launch` imports only the client; the command line uses what
this package exports.
"""

from imprint.daemon.client import (
    ask_backup,
    ask_dashboard,
    ask_import,
    ask_status,
    ask_sync,
    ask_watch,
    bridge_stdio,
    connect,
    daemon_alive,
    open_session,
    poke_capture,
    stop_daemon,
)
from imprint.daemon.owner import Daemon, run_daemon
from imprint.daemon.runfile import running_daemon
from imprint.daemon.security import peer_uid, socket_dir, socket_path

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
