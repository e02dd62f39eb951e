"""Every read and write the dashboard makes, imported in this one place.

They are the MCP tools' own row functions (`imprint/reads/` and `imprint/writes/`), so a
page shows what a tool returns and deletes as the tool does.
"""

from __future__ import annotations

from imprint.ingest.pipeline import running_ingests
from imprint.reads.chunks import FileChunksArgs, chunk_rows
from imprint.reads.device import device_row
from imprint.reads.facts import KgQueryArgs, fact_rows
from imprint.reads.gateway import ActorReads
from imprint.reads.memory import GetMemoryArgs, memory_row, supersede_chain
from imprint.reads.search import (
    SearchArgs,
    checked_mode,
    format_search,
    normalize_max_chars,
    search,
)
from imprint.reads.sources import ListSourcesArgs, source_rows
from imprint.reads.summary import FileSummaryArgs, summary_row
from imprint.recall.respond import RecallArgs, recall_text
from imprint.watch import watch_rows
from imprint.writes.gateway import Writes
from imprint.writes.memories import delete_records
from imprint.writes.repair import status_row

__all__ = [
    "ActorReads",
    "FileChunksArgs",
    "FileSummaryArgs",
    "GetMemoryArgs",
    "KgQueryArgs",
    "ListSourcesArgs",
    "RecallArgs",
    "SearchArgs",
    "Writes",
    "checked_mode",
    "chunk_rows",
    "delete_records",
    "device_row",
    "fact_rows",
    "format_search",
    "memory_row",
    "normalize_max_chars",
    "recall_text",
    "running_ingests",
    "search",
    "source_rows",
    "status_row",
    "summary_row",
    "supersede_chain",
    "watch_rows",
]
