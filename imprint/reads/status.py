"""The status row: counts per project, facts, and whether the vector and lexical indexes
agree; and its text, the same for the tool and the CLI."""

from __future__ import annotations

from typing import NamedTuple

from imprint._faults import fail
from imprint.reads.gateway import Reads
from imprint.reads.layout import clip, escape_field
from imprint.store.check import IndexCheck
from imprint.store.context import TEXT_FORMAT

__all__ = ["StatusRow", "Upkeep", "format_status", "status_row", "upkeep"]


class StatusRow(IndexCheck):
    """The writer's check of one workspace, named, with the store it was taken in."""

    workspace: str
    store: str

    @classmethod
    def of(cls, workspace: str, store: str, check: IndexCheck) -> StatusRow:
        return cls(workspace=workspace, store=store, **dict(check))

    @property
    def last_write(self) -> float:
        return max(self.project_last_write.values(), default=0.0)

    @property
    def consistent(self) -> bool:
        return (
            not self.findings
            and self.fts_ok
            and self.only_in_vectors == 0
            and self.only_in_lexical == 0
            and self.journal_pending == 0
        )


def status_row(reads: Reads, workspace: str = "", check: bool = False) -> StatusRow:
    """Counts per project, facts, and whether the vector and lexical indexes agree (record
    by record with `check`), from the workspace's writer."""
    fail("status.row")  # a bug in a tool's row function (tests/test_error_lines.py)
    ws = reads.open(workspace)
    found = reads.check(ws, deep=check)
    return StatusRow.of(ws, reads.runtime.workspace(ws).chroma_url or "embedded", found)


# The answer stays under 10 KiB however many projects there are (a project line is at most
# about 140 characters): the largest are listed by name, the rest counted in one line.
MAX_PROJECTS = 40
MAX_FINDINGS = 20


def format_status(row: StatusRow) -> str:
    lines = [f"workspace {row.workspace} (chroma: {row.store})"]
    if row.projects:
        largest = sorted(row.projects.items(), key=lambda pc: (-pc[1]["records"], pc[0]))
        for project, c in sorted(largest[:MAX_PROJECTS]):
            lines.append(
                f"  project {project or '-'}: {c['records']} records, {c['sources']} sources"
            )
        rest = largest[MAX_PROJECTS:]
        if rest:
            records = sum(c["records"] for _, c in rest)
            sources = sum(c["sources"] for _, c in rest)
            noun = "project" if len(rest) == 1 else "projects"
            lines.append(
                f"  {len(rest)} more {noun} (smaller, not listed): {records} records, "
                f"{sources} sources; list_sources(project=NAME) shows one"
            )
    else:
        lines.append("  no records yet")
    lines.append(f"  facts: {row.facts} ({row.facts_current} current)")
    verdict = "consistent" if row.consistent else "INCONSISTENT"
    lines.append(
        f"  indexes: {verdict} (vectors {row.vectors}, lexical {row.records}, "
        f"only in vectors {row.only_in_vectors}, only in lexical {row.only_in_lexical}, "
        f"fts {'ok' if row.fts_ok else 'damaged'}, journal pending {row.journal_pending})"
    )
    if row.findings is not None:
        if not row.findings:
            lines.append("  check: every record agrees in both indexes (ids, content hashes)")
        for finding in row.findings[:MAX_FINDINGS]:
            lines.append(escape_field(f"  check: {clip(finding, 300)}"))
        if len(row.findings) > MAX_FINDINGS:
            lines.append(f"  check: {len(row.findings) - MAX_FINDINGS} more findings not listed")
    lines += [f"  {job.text}" for job in upkeep(row)]
    if row.journal_quarantined:
        lines.append(
            f"  journal: {row.journal_quarantined} failed writes set aside (quarantined; "
            "see writer.quarantined in the log); their records may be missing"
        )
    return "\n".join(lines)


class Upkeep(NamedTuple):
    """Background work a workspace's store needs: its line in the status, and how far it
    is (`done` of `total`, both 0 while no server is doing it)."""

    text: str
    done: int
    total: int


def upkeep(row: StatusRow) -> list[Upkeep]:
    """The re-index (an older text format) and the re-embedding (another embedding model)
    a workspace needs, as `format_status` and the dashboard's overview say them."""
    jobs = []
    if row.text_format < TEXT_FORMAT:
        done, total = row.reindex.get("done", 0), row.reindex.get("total", 0)
        doing = (
            f"re-indexing in the background: {done}/{total} sources"
            if row.reindex
            else "re-indexed in the background while a server (`imprint serve`) owns the store"
        )
        text = (
            f"index: built with text format {row.text_format}, this version indexes "
            f"{TEXT_FORMAT} (path and headings or symbol with each chunk, code chunked by its "
            f"structure); {doing}; search works meanwhile"
        )
        jobs.append(Upkeep(text, done, total))
    if row.other_embedder:
        done, total = row.reembed.get("done", 0), row.reembed.get("total", 0)
        doing = (
            f"embedding them again in the background: {done}/{total} records"
            if row.reembed
            else "embedded again in the background while a server (`imprint serve`) owns the store"
        )
        text = (
            "vectors: made by another embedding model than this configuration's "
            f"(embedding.model_path, tokenizer_path or max_tokens changed); {doing}; "
            "meaning search is off the mark until then, word search is not"
        )
        jobs.append(Upkeep(text, done, total))
    return jobs
