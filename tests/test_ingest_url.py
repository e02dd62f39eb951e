"""ingest_url against a real HTTP server on 127.0.0.1: fetch, convert, index and refuse."""

from __future__ import annotations

import contextlib
import gzip
import re
import socket
import threading
import time
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anyio
import pytest
from mcp.client import Client

from imprint.actors.lifecycle import Runtime
from imprint.config import Config
from imprint.errors import InputError
from imprint.ingest import fetch as fetch_module
from imprint.ingest.html import html_to_text
from imprint.reads.gateway import ActorReads
from imprint.reads.search import SearchArgs, search
from imprint.server import build_server
from imprint.store.embedder import Embedder
from imprint.writes import content as content_module
from imprint.writes.content import fetch_and_index
from imprint.writes.gateway import Writes
from imprint.writes.repair import status_row

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
    trickle: bool = False


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
        if page.trickle:
            # A few bytes every 20 ms, each read well within any read timeout; stops when
            # released or after 500 pieces (10 s).
            try:
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.end_headers()
                for _ in range(500):
                    self.wfile.write(b"drip ")
                    self.wfile.flush()
                    if site.release.wait(0.02):
                        break
            except (BrokenPipeError, ConnectionResetError):
                pass
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
    """An embedded-store runtime (the store mode does not matter to fetching); the test
    server is on 127.0.0.1, so private addresses are allowed here (refusal is tested below)."""
    config = Config()
    config.ingest.allow_private_urls = True
    runtime = Runtime(data_dir, config, embedder=embedder).start()
    try:
        yield runtime
    finally:
        runtime.stop()


@pytest.fixture
def app(rt: Runtime, tmp_path: Path) -> Writes:
    return Writes(rt, tmp_path)


def call_tool(app: Writes, args: dict[str, str]) -> tuple[bool, str]:
    """ingest_url through an in-memory MCP client: (is_error, text)."""

    async def go() -> tuple[bool, str]:
        async with Client(build_server(app.runtime, app.cwd)) as client:
            result = await client.call_tool("ingest_url", args)
            block = result.content[0]
            return bool(result.is_error), getattr(block, "text", "")

    return anyio.run(go)


def ingest(app: Writes, url: str, via: str) -> tuple[bool, str]:
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
    rows = search(ActorReads(rt), SearchArgs(query=word, mode="lexical"))
    return [hit.record.source for hit in rows.hits]


VIA = pytest.mark.parametrize("via", ["direct", "mcp"])


# --- fetching and indexing ------------------------------------------------------------------


@VIA
def test_html_page_is_indexed_by_url(app: Writes, rt: Runtime, site: Site, via: str) -> None:
    """An HTML page is converted to text and indexed under its URL as source_type url."""
    site.pages["/page"] = Page(body=PAGE)
    url = site.url("/page")
    is_error, text = ingest(app, url, via)
    assert not is_error, text
    assert text.startswith(f"ingested {url}: ")
    assert "redirected" not in text
    rows = search(ActorReads(rt), SearchArgs(query="zephyrine", mode="lexical"))
    assert rows.hits, "the page's text is not searchable"
    record = rows.hits[0].record
    assert record.source == url
    assert record.source_type == "url"
    assert "zephyrine marmalade" in record.content
    assert "Marmalade guide" in record.content
    assert found(rt, "scriptonlyzebrine") == []
    assert found(rt, "scriptbodyxylophant") == []
    assert site.requests_to("/page")[0]["user-agent"].startswith("imprint/")


def test_plain_text_page_is_indexed(app: Writes, rt: Runtime, site: Site) -> None:
    """A text/plain page is indexed as it is."""
    site.pages["/notes.txt"] = Page(
        body=b"Plain notes about the wombatella ferry timetable.\n",
        content_type="text/plain; charset=utf-8",
    )
    url = site.url("/notes.txt")
    assert fetch_and_index(app, url).startswith(f"ingested {url}: ")
    assert found(rt, "wombatella") == [url]


@VIA
def test_redirect_is_followed_and_reported(app: Writes, rt: Runtime, site: Site, via: str) -> None:
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


def test_too_many_redirects_is_refused(app: Writes, rt: Runtime, site: Site) -> None:
    """A redirect loop stops at the limit with an error naming url:, and stores nothing."""
    site.pages["/loop"] = Page(status=302, headers={"Location": "/loop"}, content_type="")
    before = stored(rt)
    with pytest.raises(InputError, match=r"^url: .*redirects more than 5 times"):
        fetch_and_index(app, site.url("/loop"))
    assert stored(rt) == before


# --- errors that store nothing --------------------------------------------------------------


@VIA
def test_http_error_stores_nothing(app: Writes, rt: Runtime, site: Site, via: str) -> None:
    """A 404 is an error naming url: and HTTP 404; no record is stored."""
    before = stored(rt)
    is_error, text = ingest(app, site.url("/missing"), via)
    assert is_error
    assert text.startswith("url: ")
    assert "HTTP 404" in text
    assert stored(rt) == before


@VIA
def test_slow_server_times_out(
    app: Writes, rt: Runtime, site: Site, via: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that never answers within READ_TIMEOUT gives 'did not answer'; nothing stored."""
    monkeypatch.setattr(fetch_module, "READ_TIMEOUT", 0.5)
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
    app: Writes,
    rt: Runtime,
    site: Site,
    via: str,
    send_length: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A body over MAX_BYTES is refused with or without Content-Length; nothing stored."""
    monkeypatch.setattr(fetch_module, "MAX_BYTES", 10_000)
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
def test_non_text_content_is_refused(app: Writes, rt: Runtime, site: Site, via: str) -> None:
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
def test_bad_url_is_refused(app: Writes, url: str, via: str) -> None:
    """A URL that is not http(s) with a host is an error naming url:."""
    is_error, text = ingest(app, url, via)
    assert is_error
    assert text.startswith("url: ")
    assert "http:// or https://" in text


@VIA
def test_unreachable_port(app: Writes, rt: Runtime, via: str) -> None:
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
    app: Writes, rt: Runtime, site: Site, validator: str, request_header: str
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


def test_same_bytes_without_validators_is_skipped(app: Writes, rt: Runtime, site: Site) -> None:
    """A page with no validators and the same content is reported unchanged."""
    site.pages["/page"] = Page(body=PAGE)
    url = site.url("/page")
    fetch_and_index(app, url)
    before = stored(rt)
    second = fetch_and_index(app, url)
    assert second.startswith("unchanged"), second
    assert "same content" in second
    assert stored(rt) == before


def test_changed_page_replaces_old_chunks(app: Writes, rt: Runtime, site: Site) -> None:
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


# --- private addresses (issue 10 point 2) ---------------------------------------------------


@pytest.fixture
def strict_app(data_dir: Path, embedder: Embedder, tmp_path: Path) -> Iterator[Writes]:
    """A runtime with the default configuration: private addresses refused."""
    runtime = Runtime(data_dir, Config(), embedder=embedder).start()
    try:
        yield Writes(runtime, tmp_path)
    finally:
        runtime.stop()


@pytest.fixture
def loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever the resolver says, a socket may only ever be opened to loopback."""
    real = fetch_module.open_tcp

    def guarded(address: str, port: int, timeout: float, options: object) -> object:
        assert address in ("127.0.0.1", "::1"), f"test tried to connect to {address}"
        return real(address, port, timeout, options)  # type: ignore[arg-type]

    monkeypatch.setattr(fetch_module, "open_tcp", guarded)


def fake_dns(monkeypatch: pytest.MonkeyPatch, names: dict[str, list[str]]) -> None:
    real = fetch_module.resolve_host

    def resolve(host: str, port: int) -> list[str]:
        return names[host] if host in names else real(host, port)

    monkeypatch.setattr(fetch_module, "resolve_host", resolve)


@VIA
def test_loopback_url_is_refused_by_default(
    strict_app: Writes, site: Site, via: str, loopback_only: None
) -> None:
    """With default settings a URL on 127.0.0.1 is refused before any request is sent."""
    site.pages["/page"] = Page(body=PAGE)
    before = stored(strict_app.runtime)
    is_error, text = ingest(strict_app, site.url("/page"), via)
    assert is_error, text
    assert text.startswith("url: ")
    assert "127.0.0.1 (loopback)" in text
    assert "ingest.allow_private_urls" in text
    assert site.requests_to("/page") == []
    assert stored(strict_app.runtime) == before


def test_loopback_url_is_fetched_when_allowed(app: Writes, rt: Runtime, site: Site) -> None:
    """ingest.allow_private_urls = true lifts the refusal (the `app` fixture sets it)."""
    assert rt.config.ingest.allow_private_urls
    site.pages["/page"] = Page(body=PAGE)
    assert fetch_and_index(app, site.url("/page")).startswith("ingested ")
    assert found(rt, "zephyrine") == [site.url("/page")]


def test_redirect_to_loopback_is_refused(
    strict_app: Writes, site: Site, monkeypatch: pytest.MonkeyPatch, loopback_only: None
) -> None:
    """A public host redirecting to 127.0.0.1 is refused at the hop; the target is never asked.

    `allowed.test` resolves to 127.0.0.1 too (no traffic leaves loopback), and the check is
    told, for this host only, that its address is public."""
    port = site.base.rsplit(":", 1)[1]
    fake_dns(monkeypatch, {"allowed.test": ["127.0.0.1"]})
    real = fetch_module.address_problem
    monkeypatch.setattr(
        fetch_module,
        "address_problem",
        lambda host, address: None if host == "allowed.test" else real(host, address),
    )
    site.pages["/page"] = Page(body=PAGE)
    site.pages["/hop"] = Page(
        status=302, headers={"Location": f"http://127.0.0.1:{port}/page"}, content_type=""
    )
    before = stored(strict_app.runtime)
    with pytest.raises(InputError, match=r"^url: host '127\.0\.0\.1' resolves to .*loopback"):
        fetch_and_index(strict_app, f"http://allowed.test:{port}/hop")
    assert len(site.requests_to("/hop")) == 1
    assert site.requests_to("/page") == []
    assert stored(strict_app.runtime) == before


@pytest.mark.parametrize(
    ("addresses", "kind"),
    [
        (["10.1.2.3"], "private"),
        (["192.168.1.10"], "private"),
        (["169.254.169.254"], "link-local"),
        (["fe80::1"], "link-local"),
        (["0.0.0.0"], "unspecified"),
        (["::ffff:127.0.0.1"], "loopback"),
        (["93.184.216.34", "10.0.0.1"], "private"),
    ],
    ids=["10/8", "192.168/16", "metadata", "fe80", "unspecified", "mapped-loopback", "mixed"],
)
def test_private_and_link_local_hosts_are_refused(
    strict_app: Writes,
    monkeypatch: pytest.MonkeyPatch,
    loopback_only: None,
    addresses: list[str],
    kind: str,
) -> None:
    """A host with any non-public address among those it resolves to is refused before
    connecting (the resolver is faked; no socket is opened to these addresses)."""
    fake_dns(monkeypatch, {"intranet.test": addresses})
    with pytest.raises(InputError, match=rf"^url: host 'intranet\.test' resolves to .*\({kind}\)"):
        fetch_and_index(strict_app, "http://intranet.test/admin")


# Issue 26 finding 12: IPv6 forms that carry a private IPv4 address to a gateway.
CARRIED = [
    ("64:ff9b::a00:1", "private IPv4 10.0.0.1 inside a NAT64 address"),
    ("64:ff9b::7f00:1", "loopback IPv4 127.0.0.1 inside a NAT64 address"),
    ("64:ff9b::a9fe:a9fe", "link-local IPv4 169.254.169.254 inside a NAT64 address"),
    ("64:ff9b:1::a00:1", "private: the local-use NAT64 prefix 64:ff9b:1::/48"),
    ("64:ff9b:1:5db8:d8:2200::", "private: the local-use NAT64 prefix 64:ff9b:1::/48"),
    ("2002:a00:1::1", "private IPv4 10.0.0.1 inside a 6to4 address"),
    ("2002:c0a8:10a::", "private IPv4 192.168.1.10 inside a 6to4 address"),
    ("2002:7f00:1::", "loopback IPv4 127.0.0.1 inside a 6to4 address"),
    ("2001:0:4136:e378:8000:63bf:f5ff:fffe", "private IPv4 10.0.0.1 inside a Teredo address"),
    ("::10.0.0.1", "private IPv4 10.0.0.1 inside an IPv4-compatible address"),
    ("::127.0.0.1", "loopback IPv4 127.0.0.1 inside an IPv4-compatible address"),
    ("::ffff:10.0.0.1", "private"),
]


@pytest.mark.parametrize(("address", "kind"), CARRIED, ids=[a for a, _ in CARRIED])
def test_ipv6_forms_carrying_a_private_ipv4_address_are_refused(
    strict_app: Writes,
    monkeypatch: pytest.MonkeyPatch,
    loopback_only: None,
    address: str,
    kind: str,
) -> None:
    """A host resolving to a NAT64 (64:ff9b::/96, 64:ff9b:1::/48), 6to4 (2002::/16),
    Teredo (2001::/32), IPv4-compatible or IPv4-mapped address whose IPv4 address is
    private, loopback or link-local is refused before connecting, naming what it carries."""
    fake_dns(monkeypatch, {"gateway.test": [address]})
    expected = rf"^url: host 'gateway\.test' resolves to {re.escape(address)} \({re.escape(kind)}\)"
    before = stored(strict_app.runtime)
    with pytest.raises(InputError, match=expected):
        fetch_and_index(strict_app, "http://gateway.test/admin")
    assert stored(strict_app.runtime) == before


@pytest.mark.parametrize(
    "address", ["64:ff9b::5db8:d822", "2002:5db8:d822::1", "::ffff:93.184.216.34", "2606:2800::1"]
)
def test_ipv6_forms_carrying_a_public_ipv4_address_are_public(address: str) -> None:
    """NAT64, 6to4 and mapped addresses of a public IPv4 address (93.184.216.34) and a plain
    global IPv6 address are not refused."""
    assert fetch_module.address_problem("site.test", address) is None


# --- decompression bombs (issue 18 point 3) -------------------------------------------------


def gzip_of_zeros(size: int, layers: int = 1) -> bytes:
    """`size` zero bytes gzipped `layers` times, built in pieces (nothing big is held)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    piece = bytes(1 << 20)
    out = [packer.compress(piece) for _ in range(size // len(piece))]
    data = b"".join(out) + packer.flush()
    for _ in range(layers - 1):
        data = gzip.compress(data, 9)
    return data


def peak_bytes_during(fn: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        with contextlib.suppress(InputError):
            fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("layers", [1, 2], ids=["gzip", "gzip-gzip"])
def test_gzip_bomb_memory_stays_near_the_cap(
    app: Writes, rt: Runtime, site: Site, monkeypatch: pytest.MonkeyPatch, layers: int
) -> None:
    """A 64 MiB gzip bomb (one layer or two) is refused while memory stays within the cap
    plus a small constant; stacked encodings are refused by name."""
    cap = 1 << 20
    monkeypatch.setattr(fetch_module, "MAX_BYTES", cap)
    bomb = gzip_of_zeros(64 << 20, layers)
    assert len(bomb) < 200_000
    encoding = ", ".join(["gzip"] * layers)
    site.pages["/bomb"] = Page(
        body=bomb, content_type="text/plain", headers={"Content-Encoding": encoding}
    )
    before = stored(rt)
    errors: list[str] = []

    def fetch() -> None:
        try:
            fetch_and_index(app, site.url("/bomb"))
        except InputError as exc:
            errors.append(str(exc))
            raise

    peak = peak_bytes_during(fetch)
    assert errors, "the bomb was accepted"
    if layers > 1:
        assert "Content-Encoding 'gzip, gzip'" in errors[0]
    else:
        assert f"over {cap} bytes" in errors[0]
    assert peak < 2 * cap, f"peak {peak} bytes for a {cap}-byte cap"
    assert stored(rt) == before


def test_gzip_page_is_decoded_and_indexed(app: Writes, rt: Runtime, site: Site) -> None:
    """A page sent with one gzip layer is decompressed and indexed as usual."""
    site.pages["/page"] = Page(body=gzip.compress(PAGE), headers={"Content-Encoding": "gzip"})
    assert fetch_and_index(app, site.url("/page")).startswith("ingested ")
    assert found(rt, "zephyrine") == [site.url("/page")]


@pytest.mark.parametrize("encoding", ["br", "compress", "gzip, deflate"])
def test_unknown_or_stacked_encoding_is_refused(
    app: Writes, rt: Runtime, site: Site, encoding: str
) -> None:
    """An encoding other than one layer of gzip or deflate is refused; nothing stored."""
    site.pages["/page"] = Page(body=PAGE, headers={"Content-Encoding": encoding})
    with pytest.raises(InputError, match=r"^url: .*Content-Encoding"):
        fetch_and_index(app, site.url("/page"))
    assert stored(rt) == 0


# --- HTML conversion bounds (issue 18 point 4) ----------------------------------------------


@pytest.mark.parametrize("tag", ["ul", "ol"])
def test_nested_lists_convert_to_linear_text(tag: str) -> None:
    """10 KB and 100 KB of nested `<ul><li>x` / `<ol><li>x` give text linear in the input
    (html2text alone gave 1.2-1.8 MB for 10 KB, 156 MB for 100 KB)."""
    for repeats in (1_100, 11_000):
        html = f"<{tag}><li>x" * repeats
        text = html_to_text(html, max_chars=2_000_000, deadline=time.monotonic() + 60)
        assert text.count("x") == repeats
        assert len(text) < 10 * len(html)


def test_converted_text_is_capped(app: Writes, rt: Runtime, site: Site, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """HTML whose text passes the 2M-character cap (here lowered) is refused; nothing stored."""
    monkeypatch.setattr(content_module, "MAX_CONTENT_CHARS", 5_000)
    site.pages["/long"] = Page(body=b"<html><body><p>" + b"wordy text " * 2_000 + b"</p>")
    with pytest.raises(InputError, match=r"^url: .*over 5000 characters"):
        fetch_and_index(app, site.url("/long"))
    assert stored(rt) == 0


def test_nested_list_page_is_ingested_bounded(app: Writes, rt: Runtime, site: Site) -> None:
    """A 10 KB page of nested lists stores a bounded amount of text (was ~1,000 chunks)."""
    site.pages["/lists"] = Page(body=b"<html><body>" + b"<ul><li>nestedword" * 700)
    assert fetch_and_index(app, site.url("/lists")).startswith("ingested ")
    assert status_row(rt).records < 60


# --- total deadline and fetch concurrency (issue 18 point 5) --------------------------------


@VIA
def test_trickling_server_hits_the_total_limit(
    app: Writes, rt: Runtime, site: Site, via: str
) -> None:
    """A server sending a few bytes every 20 ms (never idle long enough for the read timeout)
    is cut at ingest.url_timeout_sec; nothing is stored."""
    rt.config.ingest.url_timeout_sec = 0.5
    site.pages["/drip"] = Page(trickle=True)
    is_error, text = ingest(app, site.url("/drip"), via)
    assert is_error, text
    assert "did not finish within 0.5 s (ingest.url_timeout_sec)" in text
    assert stored(rt) == 0


def test_fetches_never_hold_the_threads_reads_need(
    app: Writes, rt: Runtime, site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the worker-thread limiter shrunk to 2, three hanging fetches leave status free:
    status answers while every fetch is still waiting on the server."""
    monkeypatch.setattr(fetch_module, "READ_TIMEOUT", 3.0)
    site.pages["/hang"] = Page(body=PAGE, hang=True)
    finished: list[bool] = []

    async def go() -> tuple[str, int]:
        anyio.to_thread.current_default_thread_limiter().total_tokens = 2
        async with Client(build_server(app.runtime, app.cwd)) as client:

            async def fetch() -> None:
                result = await client.call_tool("ingest_url", {"url": site.url("/hang")})
                finished.append(bool(result.is_error))

            async with anyio.create_task_group() as group:
                for _ in range(3):
                    group.start_soon(fetch)
                with anyio.fail_after(30):
                    while len(site.requests_to("/hang")) < 2:
                        await anyio.sleep(0.01)
                result = await client.call_tool("status", {})
                done_before = len(finished)
                site.release.set()
            return getattr(result.content[0], "text", ""), done_before

    text, done_before = anyio.run(go)
    assert text.startswith("workspace default"), text
    assert done_before == 0, "status waited for fetches to finish"
    assert len(finished) == 3


# --- https through the guarded connection ---------------------------------------------------


@pytest.fixture
def tls_site(site: Site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Site]:
    """The same pages over https on 127.0.0.1, with a self-signed certificate the client
    is told to trust."""
    pytest.importorskip("cryptography")
    import datetime
    import ipaddress
    import ssl

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    server = _Server(("127.0.0.1", 0), _Handler)
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(cert_file, key_file)
    server.socket = server_ctx.wrap_socket(server.socket, server_side=True)
    server.site = Site(base=f"https://127.0.0.1:{server.server_address[1]}")
    monkeypatch.setattr(
        fetch_module, "TLS_VERIFY", ssl.create_default_context(cafile=str(cert_file))
    )
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="test-https", daemon=True
    )
    thread.start()
    try:
        yield server.site
    finally:
        server.site.release.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_https_page_is_fetched_through_the_guarded_connection(
    app: Writes, rt: Runtime, tls_site: Site
) -> None:
    """An https page on 127.0.0.1 (allowed here) is fetched over TLS and indexed."""
    tls_site.pages["/page"] = Page(body=PAGE)
    url = tls_site.url("/page")
    assert fetch_and_index(app, url).startswith(f"ingested {url}: ")
    assert found(rt, "zephyrine") == [url]


def test_https_hang_hits_the_total_limit(app: Writes, rt: Runtime, tls_site: Site) -> None:
    """A TLS server that never answers is cut at ingest.url_timeout_sec, not later."""
    rt.config.ingest.url_timeout_sec = 0.5
    tls_site.pages["/slow"] = Page(body=PAGE, hang=True)
    with pytest.raises(InputError, match=r"did not finish within 0\.5 s"):
        fetch_and_index(app, tls_site.url("/slow"))
    assert stored(rt) == 0


def test_slow_name_lookup_hits_the_total_limit(
    app: Writes, rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A name lookup that never returns is given up at ingest.url_timeout_sec."""
    rt.config.ingest.url_timeout_sec = 0.5
    release = threading.Event()

    def stuck(host: str, port: int) -> list[str]:
        release.wait(HANG_LIMIT_SEC)
        return ["127.0.0.1"]

    monkeypatch.setattr(fetch_module, "resolve_host", stuck)
    try:
        with pytest.raises(InputError, match=r"did not finish within 0\.5 s"):
            fetch_and_index(app, "http://slow-dns.test/page")
    finally:
        release.set()
    assert stored(rt) == 0
