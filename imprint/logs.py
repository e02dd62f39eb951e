"""Logging: configured once at the entry point. JSON lines to a file, readable lines on stderr.

Nothing is ever written to stdout: the stdio MCP transport owns it.
"""

from __future__ import annotations

import logging
import logging.handlers
import sys
from pathlib import Path
from typing import Any

import structlog

__all__ = ["configure_logging", "get_logger", "log_files", "log_path"]

_configured: list[logging.Handler] = []


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
                structlog.dev.ConsoleRenderer(colors=False),
            ],
        )
    )
    _configured.append(stderr)

    path = None
    if to_file and data_dir is not None:
        path = log_path(data_dir)
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.handlers.RotatingFileHandler(
            path, maxBytes=max_bytes, backupCount=keep, encoding="utf-8"
        )
        handler.setLevel(logging.INFO)
        handler.setFormatter(
            structlog.stdlib.ProcessorFormatter(
                foreign_pre_chain=shared,
                processors=[
                    structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                    structlog.processors.dict_tracebacks,
                    structlog.processors.JSONRenderer(),
                ],
            )
        )
        _configured.append(handler)

    for handler in _configured:
        root.addHandler(handler)
    root.setLevel(min(h.level for h in _configured))
    # Third-party chatter stays out unless it is a warning.
    # httpx2 (the mcp SDK's client) logs every request URL at info, query string and all.
    for noisy in ("chromadb", "httpx", "httpx2", "httpcore", "onnxruntime", "urllib3", "posthog"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    return path


def get_logger(name: str) -> structlog.stdlib.BoundLogger:
    return structlog.stdlib.get_logger(name)


# Until the entry point configures logging, structlog would print to stdout, which the stdio
# transport owns: route it through the stdlib (whose last resort is stderr) from the start.
structlog.configure(
    processors=[*_shared_processors(), structlog.stdlib.render_to_log_kwargs],
    logger_factory=structlog.stdlib.LoggerFactory(),
    wrapper_class=structlog.stdlib.BoundLogger,
)
