"""`imprint capture --backfill`: queue the transcripts a client still keeps for capture."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from imprint.cli._app import err

__all__ = ["capture"]


def capture(
    backfill: Annotated[
        bool, typer.Option("--backfill", help="capture the transcripts the client still keeps")
    ] = False,
    client: Annotated[str, typer.Option(help="the client whose transcripts to read")] = (
        "claude-code"
    ),
) -> None:
    """Capture the sessions a client still keeps (redacted, idempotent), in the background."""
    from imprint._fs import data_dir
    from imprint.capture.backfill import CLIENTS, backfill_events
    from imprint.daemon import poke_capture
    from imprint.hooklib.queue import enqueue

    if not backfill:
        err.print("capture: nothing to do; --backfill queues the client's transcripts")
        raise typer.Exit(2)
    if client not in CLIENTS:
        err.print(f"capture: --client {client!r} is not supported; one of {', '.join(CLIENTS)}")
        raise typer.Exit(2)
    root = data_dir()
    queued = 0
    for event in backfill_events(client, Path.home()):
        enqueue(root, event)
        queued += 1
        err.print(f"capture: queued {queued}: {event['session_id']}", end="\r", markup=False)
    poke_capture(root)
    typer.echo(
        f"queued {queued} {client} transcripts; the daemon captures them in the background "
        "(each from where its last capture ended)"
    )
