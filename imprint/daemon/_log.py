"""The daemon package's logger, imported at the first log call: the stdio bridge (the client
half) never logs, and every import it skips is time before a client's `initialize`."""

from __future__ import annotations

from typing import Any

__all__ = ["log"]


class _Log:
    def __getattr__(self, name: str) -> Any:
        from imprint.logs import get_logger

        return getattr(get_logger("imprint.daemon"), name)


log = _Log()
