"""ingest_url: fetch one page over HTTP(S), turn HTML into text, index it by its URL.

Timeouts, a size cap and a redirect limit bound the fetch; an unchanged page (ETag or
Last-Modified answered with 304, or the same bytes) is skipped.
"""

from __future__ import annotations

import json
from typing import Annotated
from urllib.parse import urlsplit

import html2text
import httpx
from mcp.server.mcpserver import MCPServer
from pydantic import Field

from imprint.actors.read_messages import SourceEntryQuery
from imprint.errors import InputError
from imprint.reads.deadline import Deadline
from imprint.store.records import content_sha
from imprint.tools._app import REPLACE, App, run_tool, tool
from imprint.tools.ingest_content import index_text

__all__ = ["fetch_and_index", "register"]

CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 10.0
MAX_BYTES = 5 * 1024 * 1024
MAX_REDIRECTS = 5
TEXT_TYPES = ("text/html", "application/xhtml", "text/plain", "text/markdown", "text/x-rst")


def _html_to_text(html: str) -> str:
    converter = html2text.HTML2Text()
    converter.ignore_images = True
    converter.body_width = 0
    return converter.handle(html)


def fetch_and_index(app: App, url: str, project: str = "", workspace: str = "") -> str:
    parts = urlsplit(url.strip() if isinstance(url, str) else "")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError(f"url: {url!r} is not allowed; an http:// or https:// URL with a host")
    source = url.strip()
    ws = app.runtime.resolve(workspace, create=True)
    app.runtime.workspace(ws)
    entry = Deadline(30).wait(
        app.reads.source_entry(SourceEntryQuery(workspace=ws, project=project, source=source)),
        "ingest_url",
    )
    headers = {"User-Agent": "imprint/0.1 (+local memory server)"}
    if entry is not None and entry.validators:
        known = json.loads(entry.validators)
        if known.get("etag"):
            headers["If-None-Match"] = known["etag"]
        if known.get("last_modified"):
            headers["If-Modified-Since"] = known["last_modified"]
    timeout = httpx.Timeout(READ_TIMEOUT, connect=CONNECT_TIMEOUT)
    try:
        with (
            httpx.Client(
                timeout=timeout, follow_redirects=True, max_redirects=MAX_REDIRECTS
            ) as client,
            client.stream("GET", source, headers=headers) as response,
        ):
            if response.status_code == 304 and entry is not None:
                return f"unchanged: {source} (server answered 304; {entry.chunk_count} chunks kept)"
            if response.status_code >= 400:
                raise InputError(
                    f"url: {source!r} answered HTTP {response.status_code}; nothing was stored"
                )
            ctype = response.headers.get("content-type", "").split(";")[0].strip().lower()
            if ctype and not ctype.startswith(TEXT_TYPES):
                raise InputError(
                    f"url: {source!r} is {ctype}; allowed: HTML, plain text, Markdown or reST"
                )
            declared = int(response.headers.get("content-length") or 0)
            if declared > MAX_BYTES:
                raise InputError(f"url: {source!r} is {declared} bytes; at most {MAX_BYTES}")
            body = bytearray()
            for piece in response.iter_bytes():
                body.extend(piece)
                if len(body) > MAX_BYTES:
                    raise InputError(f"url: {source!r} is over {MAX_BYTES} bytes; nothing stored")
            encoding = response.encoding or "utf-8"
            validators = json.dumps(
                {
                    "etag": response.headers.get("etag", ""),
                    "last_modified": response.headers.get("last-modified", ""),
                }
            )
            final_url = str(response.url)
    except httpx.TimeoutException as exc:
        raise InputError(
            f"url: {source!r} did not answer within {READ_TIMEOUT:g} s; nothing was stored"
        ) from exc
    except httpx.TooManyRedirects as exc:
        raise InputError(f"url: {source!r} redirects more than {MAX_REDIRECTS} times") from exc
    except httpx.HTTPError as exc:
        raise InputError(f"url: {source!r} is unreachable ({type(exc).__name__})") from exc
    raw = bytes(body).decode(encoding, errors="replace")
    is_html = ctype.startswith(("text/html", "application/xhtml")) or raw.lstrip()[:1] == "<"
    text = _html_to_text(raw) if is_html else raw
    if not text.strip():
        raise InputError(f"url: {source!r} holds no text; nothing was stored")
    if entry is not None and entry.sha == content_sha(text):
        return f"unchanged: {source} (same content; {entry.chunk_count} chunks kept)"
    chunks, _ = index_text(
        app,
        source,
        text,
        project,
        ws,
        source_type="url",
        lang="markdown",
        validators=validators,
    )
    via = f" (redirected to {final_url})" if final_url != source else ""
    return f"ingested {source}{via}: {chunks} chunks"


def register(server: MCPServer, app: App) -> None:
    @tool(server, "ingest_url", REPLACE.model_copy(update={"open_world_hint": True}))
    async def ingest_url(
        url: Annotated[str, Field(description="an http:// or https:// page")],
        project: Annotated[str, Field(description="project it belongs to")] = "",
        workspace: Annotated[str, Field(description="workspace; empty = active")] = "",
    ) -> str:
        """Fetch a web page (HTML, text, Markdown; up to 5 MB, 10 s) and index its text
        under its URL, replacing an earlier copy. An unchanged page is skipped."""
        return await run_tool(fetch_and_index, app, url, project, workspace)
