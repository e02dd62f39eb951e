"""Every read and write the dashboard makes, imported in this one place.

They are the MCP tools' own row functions (`imprint/reads/` and `imprint/writes/`), so a
page shows what a tool returns and deletes as the tool does.
"""

from __future__ import annotations

from imprint.capture.session import load_state
from imprint.reads.briefing import briefing_preview
from imprint.reads.chunks import FileChunksArgs, chunk_rows
from imprint.reads.device import device_row
from imprint.reads.facts import KgQueryArgs, fact_rows
from imprint.reads.gateway import ActorReads
from imprint.reads.memory import GetMemoryArgs, memory_row, supersede_chain
from imprint.reads.project_memory import (
    PAGE_SIZE,
    ProjectMemory,
    memory_projects,
    project_memory,
    session_observations,
    session_of,
    session_row,
)
from imprint.reads.search import (
    SearchArgs,
    checked_mode,
    format_search,
    normalize_max_chars,
    search,
)
from imprint.reads.sources import ListSourcesArgs, source_rows
from imprint.reads.status import status_row
from imprint.reads.summary import FileSummaryArgs, summary_row
from imprint.recall.respond import RecallArgs, recall_text
from imprint.watch import watch_rows
from imprint.writes.files import running_ingests
from imprint.writes.gateway import Writes
from imprint.writes.memories import (
    delete_records,
    restore_memory,
    retag_memory,
    supersede_memory,
)

__all__ = [
    "PAGE_SIZE",
    "ActorReads",
    "FileChunksArgs",
    "FileSummaryArgs",
    "GetMemoryArgs",
    "KgQueryArgs",
    "ListSourcesArgs",
    "ProjectMemory",
    "RecallArgs",
    "SearchArgs",
    "Writes",
    "briefing_preview",
    "checked_mode",
    "chunk_rows",
    "delete_records",
    "device_row",
    "fact_rows",
    "format_search",
    "load_state",
    "memory_projects",
    "memory_row",
    "normalize_max_chars",
    "project_memory",
    "recall_text",
    "restore_memory",
    "retag_memory",
    "running_ingests",
    "search",
    "session_observations",
    "session_of",
    "session_row",
    "source_rows",
    "status_row",
    "summary_row",
    "supersede_chain",
    "supersede_memory",
    "watch_rows",
]
