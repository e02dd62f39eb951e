"""`imprint hook EVENT [--client NAME]`: the one command every client's hooks run.

It reads the client's JSON event from stdin and answers within `hooks.timeout_ms` for its
event, or prints nothing and exits 0: a watchdog thread ends the process at the deadline
(`os._exit`, so no thread, socket or child keeps it alive). stdout carries the added context
and nothing else. Session start and prompt submit ask the daemon (started if none runs)
over its socket; stop, pre-compact and session end hand the event to capture
(`imprint.hooks.capture.hand_off`). Every run is counted per client and event
(`imprint.hooklib.state`), each failure with its reason, for `imprint hooks status`.

The standard library and `imprint.daemon.client` only: this process starts at every
session start and, where enabled, every prompt. A session start with no daemon answering
(none runs, or its store is still starting) starts one in the background and briefs from
the store's SQLite file itself (`imprint.hooks.cold`: its records need site-packages).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, BinaryIO

from imprint._fs import DATA_DIR_ENV, PRIVATE_UMASK, data_dir
from imprint.hooklib.events import (
    CAPTURE_EVENTS,
    CLIENTS,
    DATA_DIR_OPTION,
    canonical_event,
    context_output,
)
from imprint.hooklib.settings import HookSettings, excluded_folder, hook_settings
from imprint.hooklib.state import record_run
from imprint.hooks._paths import with_site_packages

__all__ = ["MAX_EVENT_BYTES", "exit_now", "hook_args", "hook_main", "run_hook"]

MAX_EVENT_BYTES = 4 * 1024 * 1024  # an event names its transcript; it does not carry it


class HookFailure(Exception):
    """An expected failure of one hook run: counted with this reason, nothing printed."""


def hook_args(argv: list[str]) -> tuple[str, str] | None:
    """(event, client) of `EVENT [--client NAME]`; None for any other arguments."""
    if not argv or argv[0].startswith("-"):
        return None
    event, rest, client = argv[0], argv[1:], ""
    if len(rest) == 2 and rest[0] == "--client":
        client = rest[1]
    elif len(rest) == 1 and rest[0].startswith("--client="):
        client = rest[0].removeprefix("--client=")
    elif rest:
        return None
    return event, client


class _Run:
    """One hook run: ends exactly once, by its answer, its failure or its deadline."""

    def __init__(self, root: Path, client: str, event: str) -> None:
        self.root = root
        self.client = client
        self.event = event
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self._over = False

    def _elapsed_ms(self) -> int:
        return int((time.monotonic() - self.started) * 1000)

    def answer(self, output: str) -> None:
        with self._lock:
            if self._over:
                return
            self._over = True
            if output:
                data = output.encode("utf-8")
                while data:
                    data = data[os.write(1, data) :]
            record_run(self.root, self.client, self.event, elapsed_ms=self._elapsed_ms())

    def fail(self, reason: str) -> None:
        with self._lock:
            if self._over:
                return
            self._over = True
            record_run(
                self.root, self.client, self.event, error=reason, elapsed_ms=self._elapsed_ms()
            )

    def expire(self, budget_ms: int) -> None:
        """The deadline: count it, then end the process with nothing (more) printed."""
        self.fail(f"no answer within {budget_ms} ms (hooks.timeout_ms); printed nothing")
        os._exit(0)


def _read_event(stdin: BinaryIO) -> dict[str, Any]:
    raw = stdin.read(MAX_EVENT_BYTES + 1)
    if len(raw) > MAX_EVENT_BYTES:
        raise HookFailure(f"the event on stdin is over {MAX_EVENT_BYTES} bytes")
    try:
        event = json.loads(raw or b"null")
    except ValueError as exc:
        raise HookFailure(f"the event on stdin is not JSON ({exc})") from exc
    if not isinstance(event, dict):
        raise HookFailure("the event on stdin is not a JSON object")
    return event


def _cwd(event: dict[str, Any]) -> Path:
    """The session's folder: the event's `cwd`, Cursor's first workspace root, or ours."""
    cwd = event.get("cwd")
    roots = event.get("workspace_roots")
    if not isinstance(cwd, str) or not cwd:
        cwd = roots[0] if isinstance(roots, list) and roots and isinstance(roots[0], str) else ""
    return Path(cwd or os.getcwd())


def _hand_off(event: dict[str, Any], client: str, name: str) -> None:
    import importlib

    try:
        capture = importlib.import_module("imprint.hooks.capture")
    except ImportError as exc:
        raise HookFailure("capture is not available in this installation") from exc
    try:
        capture.hand_off(
            {**event, "client": client, "imprint_client": client, "imprint_event": name}
        )
    except OSError as exc:
        raise HookFailure(f"capture queue not written: {exc}") from exc


STARTING = "still starting"  # the daemon's answer while its store starts (daemon.warm)


def _cold(root: Path, cwd: Path, settings: HookSettings) -> str:
    with_site_packages()  # the store's records are pydantic models
    from imprint.hooks.cold import StoreUnreadable, cold_briefing

    try:
        return cold_briefing(root, cwd, settings.context_chars, settings.exclude)
    except StoreUnreadable as exc:
        raise HookFailure(str(exc)) from exc


def _context(
    root: Path, name: str, event: dict[str, Any], cwd: Path, settings: HookSettings
) -> str:
    from imprint.daemon.asks import ask_hook
    from imprint.daemon.client import daemon_alive, poke_capture
    from imprint.errors import ImprintError

    start = name == "session-start"
    if start and not daemon_alive(root):
        # Starting a daemon outlasts a session start's budget: one is started in the
        # background for the next hook (and to drain the capture queue), never waited for,
        # and this briefing is read straight from the store.
        with contextlib.suppress(Exception):
            poke_capture(root)
        return _cold(root, cwd, settings)
    prompt = event.get("prompt")
    request = {
        "event": name,
        "cwd": str(cwd),
        "prompt": prompt if isinstance(prompt, str) else "",
        "context_chars": settings.context_chars,
        "exclude": list(settings.exclude),
        # The daemon's reads end a little before the hook's own deadline.
        "deadline_ms": max(1, int(settings.budget_ms(name) * 0.8)),
        # A session start does not wait for a daemon whose store is still starting.
        **({"runtime_wait_ms": 50} if start else {}),
    }
    try:
        try:
            return ask_hook(root, request)
        except ImportError:
            # Started without site-packages (`python -S`), and no daemon answers on the
            # socket yet: waiting for one takes its start lock (filelock).
            with_site_packages()
            return ask_hook(root, request)
    except ImprintError as exc:
        if start and STARTING in str(exc):
            return _cold(root, cwd, settings)
        raise HookFailure(str(exc)) from exc
    except OSError as exc:
        raise HookFailure(f"daemon: {exc.strerror or type(exc).__name__}") from exc


def _answer(root: Path, client: str, name: str, settings: HookSettings, stdin: BinaryIO) -> str:
    event = _read_event(stdin)
    cwd = _cwd(event)
    if excluded_folder(cwd, settings.exclude):
        return ""
    if name in CAPTURE_EVENTS:
        _hand_off(event, client, name)
        return ""
    if name == "prompt-submit" and not settings.prompt_submit:
        return ""
    return context_output(client, name, _context(root, name, event, cwd, settings))


def run_hook(event_name: str, client: str = "", stdin: BinaryIO | None = None) -> int:
    """Run one hook; always 0 (a hook never stands in the client's way)."""
    root = data_dir()
    name = canonical_event(event_name)
    shown_client = client if client in CLIENTS else (client and "other") or "unknown"
    run = _Run(root, shown_client, name or "unknown")
    if name is None:
        run.fail(f"unknown event {event_name[:60]!r}")
        return 0
    settings = hook_settings(root)
    budget = settings.budget_ms(name)
    watchdog = threading.Timer(budget / 1000, run.expire, args=(budget,))
    watchdog.daemon = True
    watchdog.start()
    try:
        output = _answer(root, client, name, settings, stdin or sys.stdin.buffer)
    except HookFailure as exc:
        run.fail(str(exc))
    except Exception as exc:  # a bug or an unexpected failure: counted, never shown
        run.fail(f"unexpected {type(exc).__name__}: {exc}")
    else:
        run.answer(output)
    finally:
        watchdog.cancel()
    return 0


def hook_main(argv: list[str]) -> None:
    """The launcher's `EVENT [--client NAME]` (`imprint.hooks.launcher`, perhaps started
    with `-X imprint_data_dir=DIR`): run the hook and exit 0; other arguments: a one-line
    error and exit 2."""
    os.umask(PRIVATE_UMASK)  # whatever a hook creates in the data dir is the user's alone
    named = sys._xoptions.get(DATA_DIR_OPTION)
    if isinstance(named, str) and named:
        # The data dir `hooks install` named (`-X imprint_data_dir=DIR`): the client's
        # environment may lack it or hold another, and this process, and any daemon it
        # starts, must use the one the client's MCP entry names.
        os.environ[DATA_DIR_ENV] = named
    asked = hook_args(argv)
    if asked is None:
        print(f"imprint hook: the arguments are EVENT [--client NAME]; got {argv}", file=sys.stderr)
        sys.exit(2)
    exit_now(run_hook(*asked))


def exit_now(code: int) -> None:
    """End the hook's process without the interpreter's teardown (its modules' cleanup,
    some milliseconds a client waits for): everything it wrote went out by `os.write` or
    is flushed here first; the daemon it may have started is its own session."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)
