"""The `hooks.*` settings as a hook process reads them: `[hooks]` of config.toml and the
`IMPRINT_HOOKS_*` environment, with the standard library only (the typed schema,
`imprint.config.HooksConfig`, costs a hook 150 ms of imports; tests hold the two equal).

A value this reader cannot use falls back to its default: a hook never fails on a setting
(`imprint config list` reports the bad value).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from fnmatch import fnmatch
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

__all__ = ["HookSettings", "excluded_folder", "hook_settings"]


_TIMEOUTS: Mapping[str, int] = MappingProxyType(
    {"session_start": 1500, "prompt_submit": 300, "capture": 300}
)


# A NamedTuple, not a dataclass: `dataclasses` brings `inspect` into every hook process.
class HookSettings(NamedTuple):
    context_chars: int = 2000
    prompt_submit: bool = False
    timeout_ms: Mapping[str, int] = _TIMEOUTS
    exclude: tuple[str, ...] = ()

    def budget_ms(self, event: str) -> int:
        """How long the hook for `event` may take."""
        key = event.replace("-", "_") if event in ("session-start", "prompt-submit") else "capture"
        return self.timeout_ms[key]


def _int(value: Any, default: int, low: int, high: int) -> int:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and low <= value <= high:
        return value
    return default


def _bool(value: Any, default: bool) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in {"1", "true", "yes", "on"}:
            return True
        if lowered in {"0", "false", "no", "off"}:
            return False
    return default


def _list(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = value.split(",")
    if isinstance(value, list):
        return tuple(v.strip() for v in value if isinstance(v, str) and v.strip())
    return ()


def hook_settings(data_dir: Path, environ: Mapping[str, str] | None = None) -> HookSettings:
    """The hooks settings: defaults, then config.toml, then the environment."""
    env = os.environ if environ is None else environ
    try:
        text = (data_dir / "config.toml").read_text("utf-8")
    except (OSError, ValueError):
        text = ""
    table: Any = {}
    if "hooks" in text:  # tomllib is imported only for a file that may set hooks.*
        import tomllib

        try:
            table = tomllib.loads(text).get("hooks", {})
        except (ValueError, RecursionError):
            table = {}
    raw: dict[str, Any] = dict(table) if isinstance(table, dict) else {}
    timeouts = raw.get("timeout_ms")
    raw_timeouts: dict[str, Any] = dict(timeouts) if isinstance(timeouts, dict) else {}
    for name in ("context_chars", "prompt_submit", "exclude"):
        if f"IMPRINT_HOOKS_{name.upper()}" in env:
            raw[name] = env[f"IMPRINT_HOOKS_{name.upper()}"]
    defaults = HookSettings()
    for name in defaults.timeout_ms:
        if f"IMPRINT_HOOKS_TIMEOUT_MS_{name.upper()}" in env:
            raw_timeouts[name] = env[f"IMPRINT_HOOKS_TIMEOUT_MS_{name.upper()}"]
    return HookSettings(
        context_chars=_int(raw.get("context_chars"), defaults.context_chars, 200, 20_000),
        prompt_submit=_bool(raw.get("prompt_submit"), defaults.prompt_submit),
        timeout_ms=MappingProxyType(
            {
                name: _int(raw_timeouts.get(name), default, 50, 60_000)
                for name, default in defaults.timeout_ms.items()
            }
        ),
        exclude=_list(raw.get("exclude")) if "exclude" in raw else defaults.exclude,
    )


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a loop: judged as written
        return path


def excluded_folder(cwd: Path, exclude: Sequence[str]) -> bool:
    """Whether `hooks.exclude` names a folder holding `cwd`: a path or a glob (an entry
    with a `/` or starting with `~`), or the name of `cwd` or of a folder above it. Both
    sides are judged as written and with their links resolved, so a link into an excluded
    folder (or an entry naming a link) excludes the same folder. The daemon also checks
    the project the folder maps to (`imprint.reads.briefing.excluded`)."""
    if not exclude:
        return False
    real = _resolved(cwd)
    here = [cwd, *cwd.parents, *([real, *real.parents] if real != cwd else [])]
    for entry in exclude:
        if "/" in entry or entry.startswith("~"):
            written = Path(entry).expanduser()
            patterns = {str(written), str(_resolved(written))}
            if any(fnmatch(str(folder), p) for folder in here for p in patterns):
                return True
        elif any(folder.name == entry for folder in here):
            return True
    return False
