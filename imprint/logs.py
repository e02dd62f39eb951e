"""Logging: configured once at the entry point. JSON lines to a file, readable lines on stderr.

Nothing is ever written to stdout: the stdio MCP transport owns it. Nothing the user wrote
is kept either: tracebacks are rendered without local variables (a frame's locals hold
memory contents, queries, socket input), query strings are cut from logged URLs, secrets
registered with `add_secret` are masked, and the log folder and files are private.
"""

from __future__ import annotations

import logging
import logging.handlers
import re
import sys
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import structlog
from structlog.tracebacks import ExceptionDictTransformer

from imprint._fs import private_dir, private_file
from imprint._shown import shown

__all__ = ["add_secret", "configure_logging", "get_logger", "log_files", "log_path", "redact"]

_configured: list[logging.Handler] = []
_secrets: set[str] = set()
# A URL's query string often carries tokens (`?access_token=`): keep the path, drop the rest.
_URL_QUERY = re.compile(r"""(\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s?#'"<>]*)\?[^\s#'"<>]*""")
_SECRET_NAMES = re.compile(r"(^|_)(api_key|token|password|secret|authorization)$", re.IGNORECASE)


def add_secret(value: str) -> None:
    """Mask this value wherever it would appear in a log line (an API key, a bearer token)."""
    if value and len(value) >= 4:
        _secrets.add(value)


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        for secret in _secrets:
            if secret in value:
                value = value.replace(secret, "***")
        return _URL_QUERY.sub(r"\1?...", value)
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def redact(_logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> dict[str, Any]:
    """structlog processor: secrets masked, query strings cut, secret-named fields hidden."""
    out: dict[str, Any] = {}
    for key, value in event_dict.items():
        if key.startswith("_"):
            out[key] = value
        elif _SECRET_NAMES.search(key) and isinstance(value, str):
            out[key] = "set" if value else "not set"
        else:
            out[key] = _clean(value)
    return out


def escape_for_terminal(
    _logger: Any, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """Console lines show each text value's control and bidi characters as escapes, so a
    logged file name cannot send the terminal an escape sequence (a traceback keeps its
    line breaks). The JSON file needs none of this: JSON escapes every such character."""
    for key, value in event_dict.items():
        if isinstance(value, str):
            event_dict[key] = shown(value, keep="\n" if key == "exception" else "")
    return event_dict


def log_path(data_dir: Path) -> Path:
    return data_dir / "logs" / "imprint.jsonl"


def log_files(data_dir: Path) -> list[Path]:
    """The JSON log and its rotated copies, oldest first (imprint.jsonl.3 ... imprint.jsonl)."""
    current = log_path(data_dir)
    rotated = []
    for path in current.parent.glob(current.name + ".*"):
        suffix = path.name[len(current.name) + 1 :]
        if suffix.isdigit():
            rotated.append((int(suffix), path))
    older = [p for _, p in sorted(rotated, reverse=True)]
    return [*older, current] if current.exists() else older


def _shared_processors() -> list[Any]:
    return [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]


def configure_logging(
    data_dir: Path | None,
    *,
    level: str = "warning",
    to_file: bool = True,
    max_bytes: int = 20 * 1024 * 1024,
    keep: int = 3,
) -> Path | None:
    """Route structlog and stdlib loggers (pykka, mcp, httpx, chromadb) to stderr and a file."""
    root = logging.getLogger()
    for handler in _configured:
        root.removeHandler(handler)
        handler.close()
    _configured.clear()

    shared = _shared_processors()
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )

    stderr = logging.StreamHandler(sys.stderr)
    stderr.setLevel(level.upper())
    stderr.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                # A plain traceback (no locals, unlike the rich default), made text first so
                # that `redact` sees it before it is printed.
                structlog.processors.format_exc_info,
                redact,
                escape_for_terminal,
                structlog.dev.ConsoleRenderer(
                    colors=False, exception_formatter=structlog.dev.plain_traceback
                ),
            ],
        )
    )
    _configured.append(stderr)

    path = None
    if to_file and data_dir is not None:
        path = log_path(data_dir)
        private_dir(path.parent)
        private_file(path)
        handler = _PrivateRotatingFileHandler(
            path, maxBytes=max_bytes, backupCount=keep, encoding="utf-8"
        )
        handler.setLevel(logging.INFO)
        handler.setFormatter(
            structlog.stdlib.ProcessorFormatter(
                foreign_pre_chain=shared,
                processors=[
                    structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                    structlog.processors.ExceptionRenderer(
                        ExceptionDictTransformer(show_locals=False)
                    ),
                    redact,
                    structlog.processors.JSONRenderer(),
                ],
            )
        )
        _configured.append(handler)

    for handler in _configured:
        root.addHandler(handler)
    root.setLevel(min(h.level for h in _configured))
    # Third-party chatter stays out unless it is a warning.
    # `mcp` logs failing tool calls at INFO with their text (URLs, arguments); httpx2 (the mcp
    # SDK's client) logs every request URL at info, query string and all: warnings only.
    for noisy in (
        "chromadb",
        "httpx",
        "httpx2",
        "httpcore",
        "onnxruntime",
        "urllib3",
        "posthog",
        "mcp",
    ):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    return path


class _PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """Rotated and reopened log files are created 0600 too, whatever the umask."""

    def _open(self) -> Any:
        private_file(Path(self.baseFilename))
        return super()._open()


def get_logger(name: str) -> structlog.stdlib.BoundLogger:
    return structlog.stdlib.get_logger(name)


# Until the entry point configures logging, structlog would print to stdout, which the stdio
# transport owns: route it through the stdlib (whose last resort is stderr) from the start.
structlog.configure(
    processors=[
        structlog.stdlib.filter_by_level,
        *_shared_processors(),
        structlog.stdlib.render_to_log_kwargs,
    ],
    logger_factory=structlog.stdlib.LoggerFactory(),
    wrapper_class=structlog.stdlib.BoundLogger,
)
