"""Every read and write the dashboard makes, imported in this one place.

They are the MCP tools' own row functions (`imprint/reads/` and `imprint/writes/`), so a
page shows what a tool returns and deletes as the tool does.
"""

from __future__ import annotations

from imprint.ingest.pipeline import running_ingests
from imprint.reads.chunks import chunk_rows
from imprint.reads.device import device_row
from imprint.reads.facts import fact_rows
from imprint.reads.gateway import ActorReads
from imprint.reads.memory import memory_row
from imprint.reads.search import format_search, search_rows
from imprint.reads.sources import source_rows
from imprint.reads.summary import summary_row
from imprint.recall.respond import recall_text
from imprint.writes.gateway import Writes
from imprint.writes.memories import delete_records
from imprint.writes.repair import status_row

__all__ = [
    "ActorReads",
    "Writes",
    "chunk_rows",
    "delete_records",
    "device_row",
    "fact_rows",
    "format_search",
    "memory_row",
    "recall_text",
    "running_ingests",
    "search_rows",
    "source_rows",
    "status_row",
    "summary_row",
]
