"""Every read and write the dashboard makes, imported in this one place.

They are the MCP tools' own row functions, so a page shows what a tool returns. The row
functions are moving from `imprint/tools/` to `imprint/reads/` (same names): repoint the
imports here and nowhere else.
"""

from __future__ import annotations

from imprint.ingest.pipeline import running_ingests
from imprint.tools._app import App
from imprint.tools._reads import ActorReads
from imprint.tools.delete import delete_records
from imprint.tools.device_context import device_row
from imprint.tools.file_chunks import chunk_rows
from imprint.tools.file_summary import summary_row
from imprint.tools.get_memory import memory_row
from imprint.tools.kg_query import fact_rows
from imprint.tools.list_sources import source_rows
from imprint.tools.recall import recall_text
from imprint.tools.search import format_search, search_explained
from imprint.tools.status import status_row

__all__ = [
    "ActorReads",
    "App",
    "chunk_rows",
    "delete_records",
    "device_row",
    "fact_rows",
    "format_search",
    "memory_row",
    "recall_text",
    "running_ingests",
    "search_explained",
    "source_rows",
    "status_row",
    "summary_row",
]
