"""`python -m imprint.daemon`: the data dir's owner, as a client spawns it. It binds its
socket before it imports the command line's libraries (or the store's)."""

from __future__ import annotations

import os
import sys

from imprint._fs import PRIVATE_UMASK, data_dir
from imprint.config import load_config
from imprint.daemon.owner import run_daemon
from imprint.errors import ImprintError
from imprint.logs import configure_logging


def main() -> int:
    # Whatever this process creates in the data dir (SQLite, Chroma, logs) is the user's alone.
    os.umask(PRIVATE_UMASK)
    try:
        root_dir = data_dir()
        config = load_config(root_dir)
        configure_logging(root_dir, level=config.log.level, to_file=config.log.file)
        return run_daemon(root_dir, config, idle_exit_sec=config.server.idle_exit_sec)
    except ImprintError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
