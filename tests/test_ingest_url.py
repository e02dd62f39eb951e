"""ingest_url against a real HTTP server on 127.0.0.1: fetch, convert, index and refuse."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anyio
import pytest
from mcp.client import Client

from imprint.actors.lifecycle import Runtime
from imprint.config import Config
from imprint.errors import InputError
from imprint.reads.gateway import ActorReads
from imprint.reads.search import search_rows
from imprint.reads.status import status_row
from imprint.server import build_server
from imprint.store.embedder import Embedder
from imprint.tools import ingest_url as ingest_url_module
from imprint.tools._app import App
from imprint.tools.ingest_url import fetch_and_index

HANG_LIMIT_SEC = 60.0

PAGE = b"""<!doctype html>
<html><head><title>Quokka notes</title>
<script>var scriptonlyzebrine = "never searchable";</script></head>
<body>
<h1>Marmalade guide</h1>
<p>The zephyrine marmalade recipe needs bitter oranges and patience.</p>
<p>Simmer the peel for two hours before adding sugar.</p>
<script>document.write("scriptbodyxylophant");</script>
</body></html>
"""


@dataclass
class Page:
    """What the test server answers for one path."""

    body: bytes = b""
    status: int = 200
    content_type: str = "text/html; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)
    etag: str = ""
    last_modified: str = ""
    send_length: bool = True
    hang: bool = False


@dataclass
class Site:
    """A running server: its pages by path, the requests it saw, and the hang release."""

    base: str = ""
    pages: dict[str, Page] = field(default_factory=dict)
    seen: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def url(self, path: str) -> str:
        return self.base + path

    def requests_to(self, path: str) -> list[dict[str, str]]:
        with self.lock:
            return [headers for p, headers in self.seen if p == path]


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the tests read `Site.seen` instead."""

    def do_GET(self) -> None:
        site = self.server.site
        headers = {k.lower(): v for k, v in self.headers.items()}
        with site.lock:
            site.seen.append((self.path, headers))
        page = site.pages.get(self.path)
        if page is None:
            self._answer(404, "text/plain", {}, b"no such page", send_length=True)
            return
        if page.hang:
            # Blocks until the fixture's teardown; the client gives up long before.
            site.release.wait(HANG_LIMIT_SEC)
            return
        validators = {}
        if page.etag:
            validators["ETag"] = page.etag
        if page.last_modified:
            validators["Last-Modified"] = page.last_modified
        if (page.etag and headers.get("if-none-match") == page.etag) or (
            page.last_modified and headers.get("if-modified-since") == page.last_modified
        ):
            self._answer(304, "", validators, b"", send_length=False)
            return
        self._answer(
            page.status,
            page.content_type,
            {**validators, **page.headers},
            page.body,
            send_length=page.send_length,
        )

    def _answer(
        self,
        status: int,
        content_type: str,
        headers: dict[str, str],
        body: bytes,
        *,
        send_length: bool,
    ) -> None:
        try:
            self.send_response(status)
            if content_type:
                self.send_header("Content-Type", content_type)
            for name, value in headers.items():
                self.send_header(name, value)
            if send_length:
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if body:
                self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped reading (the size cap); nothing to do


class _Server(ThreadingHTTPServer):
    site: Site


@pytest.fixture
def site() -> Iterator[Site]:
    """An HTTP/1.0 server on 127.0.0.1 (a body without Content-Length ends at close)."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.site = Site(base=f"http://127.0.0.1:{server.server_address[1]}")
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="test-http", daemon=True
    )
    thread.start()
    try:
        yield server.site
    finally:
        server.site.release.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture
def rt(data_dir: Path, embedder: Embedder) -> Iterator[Runtime]:
    """An embedded-store runtime (the store mode does not matter to fetching)."""
    runtime = Runtime(data_dir, Config(), embedder=embedder).start()
    try:
        yield runtime
    finally:
        runtime.stop()


@pytest.fixture
def app(rt: Runtime, tmp_path: Path) -> App:
    return App(rt, tmp_path)


def call_tool(app: App, args: dict[str, str]) -> tuple[bool, str]:
    """ingest_url through an in-memory MCP client: (is_error, text)."""

    async def go() -> tuple[bool, str]:
        async with Client(build_server(app.runtime, app.cwd)) as client:
            result = await client.call_tool("ingest_url", args)
            block = result.content[0]
            return bool(result.is_error), getattr(block, "text", "")

    return anyio.run(go)


def ingest(app: App, url: str, via: str) -> tuple[bool, str]:
    """(is_error, text) from fetch_and_index directly or from the MCP tool."""
    if via == "mcp":
        return call_tool(app, {"url": url})
    try:
        return False, fetch_and_index(app, url)
    except InputError as exc:
        return True, str(exc)


def stored(rt: Runtime) -> int:
    return status_row(rt).records


def found(rt: Runtime, word: str) -> list[str]:
    """Sources of the records a lexical search for `word` finds."""
    rows = search_rows(ActorReads(rt), word, mode="lexical")
    return [hit.record.source for hit in rows.hits]


VIA = pytest.mark.parametrize("via", ["direct", "mcp"])


# --- fetching and indexing ------------------------------------------------------------------


@VIA
def test_html_page_is_indexed_by_url(app: App, rt: Runtime, site: Site, via: str) -> None:
    """An HTML page is converted to text and indexed under its URL as source_type url."""
    site.pages["/page"] = Page(body=PAGE)
    url = site.url("/page")
    is_error, text = ingest(app, url, via)
    assert not is_error, text
    assert text.startswith(f"ingested {url}: ")
    assert "redirected" not in text
    rows = search_rows(ActorReads(rt), "zephyrine", mode="lexical")
    assert rows.hits, "the page's text is not searchable"
    record = rows.hits[0].record
    assert record.source == url
    assert record.source_type == "url"
    assert "zephyrine marmalade" in record.content
    assert "Marmalade guide" in record.content
    assert found(rt, "scriptonlyzebrine") == []
    assert found(rt, "scriptbodyxylophant") == []
    assert site.requests_to("/page")[0]["user-agent"].startswith("imprint/")


def test_plain_text_page_is_indexed(app: App, rt: Runtime, site: Site) -> None:
    """A text/plain page is indexed as it is."""
    site.pages["/notes.txt"] = Page(
        body=b"Plain notes about the wombatella ferry timetable.\n",
        content_type="text/plain; charset=utf-8",
    )
    url = site.url("/notes.txt")
    assert fetch_and_index(app, url).startswith(f"ingested {url}: ")
    assert found(rt, "wombatella") == [url]


@VIA
def test_redirect_is_followed_and_reported(app: App, rt: Runtime, site: Site, via: str) -> None:
    """A 302 is followed; the result names the final URL and the record keeps the asked one."""
    site.pages["/page"] = Page(body=PAGE)
    site.pages["/old"] = Page(status=302, headers={"Location": "/page"}, content_type="")
    url = site.url("/old")
    is_error, text = ingest(app, url, via)
    assert not is_error, text
    assert text.startswith(f"ingested {url} (redirected to {site.url('/page')}): ")
    assert found(rt, "zephyrine") == [url]
    assert len(site.requests_to("/old")) == 1
    assert len(site.requests_to("/page")) == 1


def test_too_many_redirects_is_refused(app: App, rt: Runtime, site: Site) -> None:
    """A redirect loop stops at the limit with an error naming url:, and stores nothing."""
    site.pages["/loop"] = Page(status=302, headers={"Location": "/loop"}, content_type="")
    before = stored(rt)
    with pytest.raises(InputError, match=r"^url: .*redirects more than 5 times"):
        fetch_and_index(app, site.url("/loop"))
    assert stored(rt) == before


# --- errors that store nothing --------------------------------------------------------------


@VIA
def test_http_error_stores_nothing(app: App, rt: Runtime, site: Site, via: str) -> None:
    """A 404 is an error naming url: and HTTP 404; no record is stored."""
    before = stored(rt)
    is_error, text = ingest(app, site.url("/missing"), via)
    assert is_error
    assert text.startswith("url: ")
    assert "HTTP 404" in text
    assert stored(rt) == before


@VIA
def test_slow_server_times_out(
    app: App, rt: Runtime, site: Site, via: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that never answers within READ_TIMEOUT gives 'did not answer'; nothing stored."""
    monkeypatch.setattr(ingest_url_module, "READ_TIMEOUT", 0.5)
    site.pages["/slow"] = Page(body=PAGE, hang=True)
    before = stored(rt)
    is_error, text = ingest(app, site.url("/slow"), via)
    assert is_error
    assert text.startswith("url: ")
    assert "did not answer within 0.5 s" in text
    assert stored(rt) == before
    assert len(site.requests_to("/slow")) == 1


@pytest.mark.parametrize("send_length", [True, False], ids=["content-length", "until-close"])
@VIA
def test_body_over_cap_is_refused(
    app: App,
    rt: Runtime,
    site: Site,
    via: str,
    send_length: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A body over MAX_BYTES is refused with or without Content-Length; nothing stored."""
    monkeypatch.setattr(ingest_url_module, "MAX_BYTES", 10_000)
    body = b"<html><body><p>" + b"oversizedquillwort " * 2700 + b"</p></body></html>"
    assert len(body) > 50_000
    site.pages["/big"] = Page(body=body, send_length=send_length)
    before = stored(rt)
    is_error, text = ingest(app, site.url("/big"), via)
    assert is_error
    assert text.startswith("url: ")
    if send_length:
        assert f"is {len(body)} bytes; at most 10000" in text
    else:
        assert "over 10000 bytes" in text
    assert stored(rt) == before
    assert found(rt, "oversizedquillwort") == []


@VIA
def test_non_text_content_is_refused(app: App, rt: Runtime, site: Site, via: str) -> None:
    """An image/png answer is refused with an error naming url: and the type; nothing stored."""
    site.pages["/logo.png"] = Page(body=b"\x89PNG\r\n\x1a\n" + bytes(64), content_type="image/png")
    before = stored(rt)
    is_error, text = ingest(app, site.url("/logo.png"), via)
    assert is_error
    assert text.startswith("url: ")
    assert "image/png" in text
    assert stored(rt) == before


@pytest.mark.parametrize("url", ["ftp://x", "not a url", "", "http://", "file:///etc/passwd"])
@VIA
def test_bad_url_is_refused(app: App, url: str, via: str) -> None:
    """A URL that is not http(s) with a host is an error naming url:."""
    is_error, text = ingest(app, url, via)
    assert is_error
    assert text.startswith("url: ")
    assert "http:// or https://" in text


@VIA
def test_unreachable_port(app: App, rt: Runtime, via: str) -> None:
    """A closed port on 127.0.0.1 gives an error naming url: and 'unreachable'."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    before = stored(rt)
    is_error, text = ingest(app, f"http://127.0.0.1:{port}/page", via)
    assert is_error
    assert text.startswith("url: ")
    assert "unreachable" in text
    assert stored(rt) == before


# --- unchanged and changed pages ------------------------------------------------------------


@pytest.mark.parametrize(
    ("validator", "request_header"),
    [("etag", "if-none-match"), ("last_modified", "if-modified-since")],
)
def test_unchanged_page_answered_304_is_skipped(
    app: App, rt: Runtime, site: Site, validator: str, request_header: str
) -> None:
    """A second fetch sends the stored validator; the server's 304 gives 'unchanged'."""
    value = '"v1-abc"' if validator == "etag" else "Wed, 21 Oct 2015 07:28:00 GMT"
    if validator == "etag":
        site.pages["/page"] = Page(body=PAGE, etag=value)
    else:
        site.pages["/page"] = Page(body=PAGE, last_modified=value)
    url = site.url("/page")
    first = fetch_and_index(app, url)
    assert first.startswith(f"ingested {url}: ")
    before = stored(rt)
    assert before > 0
    assert request_header not in site.requests_to("/page")[0]
    is_error, second = call_tool(app, {"url": url})
    assert not is_error, second
    assert second.startswith("unchanged"), second
    assert "304" in second
    requests = site.requests_to("/page")
    assert len(requests) == 2
    assert requests[1][request_header] == value
    assert stored(rt) == before
    assert found(rt, "zephyrine") == [url]


def test_same_bytes_without_validators_is_skipped(app: App, rt: Runtime, site: Site) -> None:
    """A page with no validators and the same content is reported unchanged."""
    site.pages["/page"] = Page(body=PAGE)
    url = site.url("/page")
    fetch_and_index(app, url)
    before = stored(rt)
    second = fetch_and_index(app, url)
    assert second.startswith("unchanged"), second
    assert "same content" in second
    assert stored(rt) == before


def test_changed_page_replaces_old_chunks(app: App, rt: Runtime, site: Site) -> None:
    """A page whose body (and ETag) changed is re-indexed; its old text is gone."""
    site.pages["/page"] = Page(body=PAGE, etag='"v1"')
    url = site.url("/page")
    fetch_and_index(app, url)
    assert found(rt, "zephyrine") == [url]
    site.pages["/page"] = Page(
        body=b"<html><body><h1>Update</h1><p>Now about the gloriander teapot.</p></body></html>",
        etag='"v2"',
    )
    is_error, text = call_tool(app, {"url": url})
    assert not is_error, text
    assert text.startswith(f"ingested {url}: ")
    assert site.requests_to("/page")[1]["if-none-match"] == '"v1"'
    assert found(rt, "zephyrine") == []
    assert found(rt, "gloriander") == [url]
    assert status_row(rt).consistent
