"""What the Codex on PATH says of Imprint's hooks, asked of Codex itself.

Codex runs a hook only once it is trusted: a hook nobody has reviewed is skipped, silently,
and `codex exec` has no way to review one (measured on Codex 0.171: no hook ran until its
trust was recorded). Codex keeps that trust in its config, per hook, as the hash of the
hook's definition that it computes (`[hooks.state."<hooks.json>:<event>:<group>:<handler>"]
trusted_hash = "sha256:..."`). So this asks Codex, through `codex app-server`:
- `hooks/list`: every hook Codex would run in a folder, with its trust (`trusted`,
  `untrusted`, or `modified` when the definition changed after it was trusted) and the hash
  it would trust;
- `config/batchWrite`: trust named hooks, the write Codex's own `/hooks` review makes.
And `codex features list`, for the name of the feature that turns hooks on: `hooks` since
Codex renamed `codex_hooks` (which it now reports as deprecated on every run).

Each answer is bounded by `CODEX_WAIT`; a Codex that is missing, too old or too slow is a
`CodexError` with the reason, which the caller reports beside what it did.
"""

from __future__ import annotations

import contextlib
import json
import queue
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from imprint.hooklib.events import canonical_event

__all__ = [
    "CODEX_WAIT",
    "REVIEW",
    "CodexError",
    "CodexHook",
    "codex_executable",
    "hooks_feature",
    "listed_hooks",
    "trust_hooks",
    "trust_words",
]

CODEX_WAIT = 20.0  # seconds for one Codex process to answer everything asked of it


class CodexError(Exception):
    """Codex could not be asked (missing, too old, too slow, or it refused): the reason."""


@dataclass(frozen=True)
class CodexHook:
    """One hook as `hooks/list` reports it."""

    key: str  # "<hooks.json>:<event>:<group>:<handler>", the trust store's key
    event: str  # Codex's name: sessionStart, stop, ...
    command: str
    trust: str  # trusted, untrusted, modified
    enabled: bool
    current_hash: str  # what trusting it records


def codex_executable() -> str | None:
    """The `codex` on PATH, if any."""
    return shutil.which("codex")


def hooks_feature(codex: str) -> str:
    """The `[features]` key that turns hooks on for this Codex: `hooks`, or `codex_hooks`
    for a Codex from before the rename."""
    try:
        done = subprocess.run(
            [codex, "features", "list"],
            capture_output=True,
            text=True,
            timeout=CODEX_WAIT,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CodexError(f"`codex features list` failed: {exc}") from exc
    names = {line.split()[0] for line in done.stdout.splitlines() if line.strip()}
    if "hooks" in names:
        return "hooks"
    if "codex_hooks" in names:
        return "codex_hooks"
    raise CodexError(
        f"`codex features list` names no hooks feature (exit {done.returncode}): "
        "this Codex may be too old to run hooks"
    )


class _AppServer:
    """`codex app-server` over stdio, one JSON-RPC message a line, every answer awaited
    until one deadline."""

    def __init__(self, codex: str, cwd: Path) -> None:
        self.deadline = time.monotonic() + CODEX_WAIT
        try:
            self.proc = subprocess.Popen(
                [codex, "app-server"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                cwd=cwd,
            )
        except OSError as exc:
            raise CodexError(f"`codex app-server` did not start: {exc}") from exc
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.reader = threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True)
        self.reader.start()
        self.next_id = 0

    def _read(self, stdout: IO[str] | None) -> None:
        assert stdout is not None
        for line in stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _send(self, message: dict[str, Any]) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        try:
            stdin.write(json.dumps(message) + "\n")
            stdin.flush()
        except OSError as exc:
            raise CodexError(f"`codex app-server` closed its input: {exc}") from exc

    def ask(self, method: str, params: dict[str, Any]) -> Any:
        self.next_id += 1
        self._send({"method": method, "id": self.next_id, "params": params})
        while True:
            left = self.deadline - time.monotonic()
            try:
                line = self.lines.get(timeout=max(0.0, left))
            except queue.Empty:
                raise CodexError(
                    f"`codex app-server` did not answer {method} within {CODEX_WAIT:.0f} s"
                ) from None
            if line is None:
                raise CodexError(f"`codex app-server` exited before answering {method}")
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if message.get("id") != self.next_id or "method" in message:
                continue  # a notification, or a request of its own
            if "error" in message:
                error = message["error"]
                text = error.get("message", error) if isinstance(error, dict) else error
                raise CodexError(f"Codex refused {method}: {text}")
            return message.get("result")

    def __enter__(self) -> _AppServer:
        try:
            self.ask("initialize", {"clientInfo": {"name": "imprint", "version": "1"}})
            self._send({"method": "initialized"})
        except CodexError:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.reader.join(timeout=5)  # its end of output once the process is gone
        if self.proc.stdout is not None and not self.reader.is_alive():
            self.proc.stdout.close()


def _hooks(app: _AppServer, cwd: Path) -> list[CodexHook]:
    result = app.ask("hooks/list", {"cwds": [str(cwd)]})
    out = []
    for folder in (result or {}).get("data", []):
        for hook in folder.get("hooks", []):
            out.append(
                CodexHook(
                    key=str(hook.get("key", "")),
                    event=str(hook.get("eventName", "")),
                    command=str(hook.get("command", "")),
                    trust=str(hook.get("trustStatus", "")),
                    enabled=bool(hook.get("enabled", True)),
                    current_hash=str(hook.get("currentHash", "")),
                )
            )
    return out


def listed_hooks(codex: str, cwd: Path) -> list[CodexHook]:
    """Every hook Codex would run in `cwd` (user, project and plugin ones), with its trust."""
    with _AppServer(codex, cwd) as app:
        return _hooks(app, cwd)


def trust_hooks(codex: str, cwd: Path, which: Callable[[CodexHook], bool]) -> list[CodexHook]:
    """Trust the hooks `which` picks at the definition Codex sees now (no other hook is
    touched), then every hook in `cwd` as Codex reports it afterwards."""
    with _AppServer(codex, cwd) as app:
        chosen = [h for h in _hooks(app, cwd) if which(h) and h.trust != "trusted"]
        if chosen:
            state = {h.key: {"trusted_hash": h.current_hash} for h in chosen}
            edit = {"keyPath": "hooks.state", "value": state, "mergeStrategy": "upsert"}
            app.ask(
                "config/batchWrite",
                {
                    "edits": [edit],
                    "filePath": None,
                    "expectedVersion": None,
                    "reloadUserConfig": True,
                },
            )
        return _hooks(app, cwd)


REVIEW = (
    "Codex skips a hook until it is trusted (`codex exec` cannot ask): review them in codex "
    "(/hooks, or the prompt at start), or run `imprint hooks install --client codex --trust`"
)


def trust_words(hooks: list[CodexHook]) -> dict[str, str]:
    """Per Imprint event, how Codex holds its hook: trusted, not trusted, changed since it
    was trusted, or disabled."""
    out: dict[str, str] = {}
    for hook in hooks:
        event = canonical_event(hook.event) or hook.event
        if not hook.enabled:
            out[event] = "disabled in Codex"
        elif hook.trust == "trusted":
            out[event] = "trusted by Codex"
        elif hook.trust == "modified":
            out[event] = "changed since Codex trusted it: Codex skips it"
        else:
            out[event] = "not trusted by Codex yet: Codex skips it"
    return out
