"""`imprint status`'s text, one composition for both sides: the daemon's (asked with
`text`, so that the command beside a daemon prints what it sends and imports none of the
store, pydantic or typer: `imprint.launch`) and the command line's own with no daemon."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from imprint.reads.status import StatusRow

__all__ = ["status_lines"]


def status_lines(data_dir: Path, row: StatusRow, watch: list[str]) -> list[str]:
    """The status row, the watched folders' lines, the last backup and the hooks."""
    from imprint.reads.hook_report import client_hooks, hooks_lines
    from imprint.reads.status import format_status
    from imprint.writes.backup import backup_line

    return [
        format_status(row),
        *watch,
        backup_line(data_dir),
        *hooks_lines(client_hooks(data_dir)),
    ]
