"""Content: index a named text, a file or folder under the allowed roots, or a fetched page.

A source's chunks are replaced as a whole: the same name (or path, or URL) again replaces
what it held. An unchanged page (ETag or Last-Modified answered with 304, or the same text)
is skipped. The fetch itself, with its address guard, is `imprint.ingest.fetch`.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from urllib.parse import urlsplit

from imprint.actors.deadline import Deadline
from imprint.actors.read_messages import SourceEntryQuery
from imprint.errors import InputError
from imprint.ingest.fetch import fetch_page, page_text
from imprint.ingest.records import build_records
from imprint.store.records import SourceEntry, SourceType, WriteBatch, check_project, content_sha
from imprint.types import WorkspaceName
from imprint.writes._redaction import redaction_note
from imprint.writes.files import IngestReport, Progress, ingest_path
from imprint.writes.gateway import Writes

__all__ = [
    "MAX_CONTENT_CHARS",
    "allowed_roots",
    "checked_path",
    "fetch_and_index",
    "index_text",
    "ingest_checked",
    "ingest_roots",
    "ingest_text",
]

MAX_CONTENT_CHARS = 2_000_000


def index_text(
    writes: Writes,
    name: str,
    text: str,
    project: str,
    ws: WorkspaceName,
    *,
    source_type: SourceType,
    lang: str = "",
    validators: str = "",
    argument: str = "content",
) -> tuple[int, str]:
    """Replace the source `name` with the chunks of `text`; how many chunks, and the note
    of the secrets redacted from them (`redaction_note`; empty when none were).

    Refused (nothing written) past MAX_CONTENT_CHARS or ingest.max_chunks_per_source."""
    if len(text) > MAX_CONTENT_CHARS:
        raise InputError(
            f"{argument}: {name!r} holds {len(text)} characters; at most {MAX_CONTENT_CHARS}"
        )
    cfg = writes.runtime.config.ingest
    records = build_records(
        project,
        name,
        text,
        source_type=source_type,
        lang=lang or "text",
        mtime=time.time(),
        target=cfg.chunk_chars,
        overlap=cfg.chunk_overlap,
    )
    if len(records) > cfg.max_chunks_per_source:
        raise InputError(
            f"{argument}: {name!r} would make {len(records)} chunks; at most "
            f"{cfg.max_chunks_per_source} (ingest.max_chunks_per_source); nothing was stored"
        )
    entry = SourceEntry(
        project=project,
        source=name,
        source_type=source_type,
        mtime=time.time(),
        sha=content_sha(text),
        chunk_count=len(records),
        validators=validators,
    )
    ack = writes.write(ws, WriteBatch(upserts=tuple(records), set_sources=(entry,)))
    return len(records), redaction_note(ack.redacted)


def _entry(
    writes: Writes, ws: WorkspaceName, project: str, source: str, what: str
) -> SourceEntry | None:
    query = SourceEntryQuery(workspace=ws, project=project, source=source)
    return Deadline(30).wait(writes.reads.ask(query), what)


def ingest_text(
    writes: Writes, name: str, content: str, project: str = "", workspace: str = ""
) -> str:
    """Index inline text under `name`, replacing what an earlier text of that name held."""
    label = name.strip() if isinstance(name, str) else ""
    if not label or len(label) > 200 or not label.isprintable():
        raise InputError(
            "name: must be 1-200 printable characters on one line (it becomes the source)"
        )
    if not isinstance(content, str) or not content.strip():
        raise InputError("content: must be non-empty text")
    if len(content) > MAX_CONTENT_CHARS:
        raise InputError(f"content: {len(content)} characters; at most {MAX_CONTENT_CHARS}")
    check_project(project)
    ws = writes.open(workspace, create=True)
    entry = _entry(writes, ws, project, label, "ingest_content")
    if entry is not None and entry.source_type != "content":
        raise InputError(
            f"name: {label!r} is already a {entry.source_type} source in project "
            f"{project or '-'!r}; ingest_content replaces only its own texts, choose another name"
        )
    lang = "markdown" if label.endswith((".md", ".markdown")) else ""
    chunks, note = index_text(
        writes,
        label,
        content,
        project,
        ws,
        source_type="content",
        lang=lang or ("markdown" if content.lstrip().startswith("#") else ""),
    )
    return (
        f"ingested {label!r}: {chunks} chunks (replacing any earlier content of that name)" + note
    )


def ingest_roots(configured: list[str], cwd: Path | None, extra: list[Path]) -> list[Path]:
    """The folders an ingest may read: ingest.allowed_roots (`configured`; when empty, `cwd`
    if given), then `extra`. One rule for a session and for `imprint ingest PATH` (no cwd,
    PATH the extra), in-process or through the daemon."""
    base = [Path(r).expanduser().resolve() for r in configured]
    if not base and cwd is not None:
        base = [cwd]
    return base + [Path(r).expanduser().resolve() for r in extra]


def allowed_roots(writes: Writes) -> list[Path]:
    """ingest.allowed_roots (default: the session's cwd, unless the session has none), and
    the session's extra folders."""
    cwd = writes.cwd if writes.cwd_root else None
    return ingest_roots(writes.runtime.config.ingest.allowed_roots, cwd, writes.extra_roots)


def checked_path(writes: Writes, path: str) -> Path:
    """`path` resolved against the session's cwd, refused outside the allowed roots."""
    if not isinstance(path, str) or not path.strip():
        raise InputError("path: must be a file or folder path")
    if "\x00" in path:
        raise InputError(f"path: {path!r} holds a NUL character; no file name can")
    candidate = Path(path).expanduser()
    target = (candidate if candidate.is_absolute() else writes.cwd / candidate).resolve()
    roots = allowed_roots(writes)
    if not any(target == r or target.is_relative_to(r) for r in roots):
        allowed = ", ".join(str(r) for r in roots)
        raise InputError(
            f"path: {path!r} is outside the allowed roots ({allowed}); "
            "set ingest.allowed_roots to allow more"
        )
    return target


def ingest_checked(
    writes: Writes, path: str, project: str, workspace: str, progress: Progress | None
) -> IngestReport:
    """Ingest a file or folder under the allowed roots (see `imprint.writes.files`)."""
    return ingest_path(
        writes.runtime,
        checked_path(writes, path),
        project=project,
        workspace=workspace,
        progress=progress,
        roots=allowed_roots(writes),
    )


def fetch_and_index(writes: Writes, url: str, project: str = "", workspace: str = "") -> str:
    """Fetch one page and index its text under its URL, unless it is unchanged."""
    parts = urlsplit(url.strip() if isinstance(url, str) else "")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError(f"url: {url!r} is not allowed; an http:// or https:// URL with a host")
    source = url.strip()
    check_project(project)
    cfg = writes.runtime.config.ingest
    total = cfg.url_timeout_sec
    deadline = time.monotonic() + total
    ws = writes.open(workspace, create=True)
    entry = _entry(writes, ws, project, source, "ingest_url")
    headers = {
        "User-Agent": "imprint/0.1 (+local memory server)",
        "Accept-Encoding": "gzip, deflate",
    }
    if entry is not None and entry.validators:
        known = json.loads(entry.validators)
        if known.get("etag"):
            headers["If-None-Match"] = known["etag"]
        if known.get("last_modified"):
            headers["If-Modified-Since"] = known["last_modified"]
    page = fetch_page(
        source,
        headers,
        deadline=deadline,
        total=total,
        allow_private=cfg.allow_private_urls,
        cached=entry is not None,
    )
    if page is None:  # a 304, which only a cached copy's validators are answered with
        kept = entry.chunk_count if entry is not None else 0
        return f"unchanged: {source} (server answered 304; {kept} chunks kept)"
    text = page_text(page, source, deadline=deadline, max_chars=MAX_CONTENT_CHARS)
    if len(text) > MAX_CONTENT_CHARS:
        raise InputError(
            f"url: {source!r} holds {len(text)} characters of text; at most {MAX_CONTENT_CHARS}"
        )
    if not text.strip():
        raise InputError(f"url: {source!r} holds no text; nothing was stored")
    if entry is not None and entry.sha == content_sha(text):
        return f"unchanged: {source} (same content; {entry.chunk_count} chunks kept)"
    chunks, note = index_text(
        writes,
        source,
        text,
        project,
        ws,
        source_type="url",
        lang="markdown",
        validators=page.validators,
        argument="url",
    )
    via = f" (redirected to {page.final_url})" if page.final_url != source else ""
    return f"ingested {source}{via}: {chunks} chunks{note}"
