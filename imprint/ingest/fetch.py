"""Fetch one page over HTTP(S) for `ingest_url`, guarded against private addresses.

Bounds: a connect and a per-read timeout, one total wall-clock limit (`ingest.url_timeout_sec`)
enforced on every socket operation, a size cap on the raw and on the decoded body (a single
gzip or deflate layer, decompressed here with `max_length`; stacked or unknown encodings are
refused), a redirect limit, and a bounded HTML conversion. Every address a host resolves to,
on every redirect hop, must be public unless `ingest.allow_private_urls` is set; the socket
then connects to the address that was checked, so a second lookup cannot swap it.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import ssl
import threading
import time
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import httpcore
import httpx

from imprint.errors import InputError
from imprint.ingest.html import HtmlTooLarge, html_to_text

__all__ = ["Page", "address_problem", "fetch_page", "page_text", "resolve_host"]

CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 10.0
MAX_BYTES = 5 * 1024 * 1024
MAX_REDIRECTS = 5
TEXT_TYPES = ("text/html", "application/xhtml", "text/plain", "text/markdown", "text/x-rst")
ENCODINGS = ("identity", "gzip", "x-gzip", "deflate")
# Certificate checking for https (a test trusts its own loopback certificate here).
TLS_VERIFY: ssl.SSLContext | bool = True
PIECE = 64 * 1024  # the most one decompress call may produce


def resolve_host(host: str, port: int) -> list[str]:
    """Every address `host` resolves to, in the resolver's order."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


# IPv6 prefixes that carry an IPv4 address a gateway then reaches: the NAT64 well-known
# prefix (RFC 6052; the IPv4 address in the last 32 bits) and IPv4-compatible addresses
# (deprecated; the same place). The local-use NAT64 prefix (RFC 8215) is refused whole: its
# layout is the operator's, and it is never global. 6to4 and Teredo: `ipaddress` finds the
# IPv4 address (Teredo's client, de-obfuscated).
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")
_COMPATIBLE = ipaddress.IPv6Network("::/96")


def _carried_ipv4(ip: ipaddress.IPv6Address) -> tuple[str, ipaddress.IPv4Address] | None:
    """The IPv4 address a NAT64, 6to4, Teredo or IPv4-compatible address leads to."""
    low = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip in _NAT64:
        return "a NAT64 address", low
    if ip.sixtofour is not None:
        return "a 6to4 address", ip.sixtofour
    if ip.teredo is not None:
        return "a Teredo address", ip.teredo[1]
    if ip in _COMPATIBLE and int(ip) > 1:  # :: and ::1 are judged as themselves
        return "an IPv4-compatible address", low
    return None


def address_problem(host: str, address: str) -> str | None:
    """Why `address` (one that `host` resolved to) is not a public one, or None. An IPv6
    address that carries an IPv4 one (mapped, NAT64, 6to4, Teredo, IPv4-compatible) is
    judged by that IPv4 address too: a gateway would connect to it."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        elif ip in _NAT64_LOCAL:
            return "private: the local-use NAT64 prefix 64:ff9b:1::/48"
        elif (carried := _carried_ipv4(ip)) is not None:
            form, inner = carried
            problem = _problem(inner)
            if problem is not None:
                return f"{problem} IPv4 {inner} inside {form}"
    return _problem(ip)


def _problem(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    for kind, hit in (
        ("unspecified", ip.is_unspecified),
        ("loopback", ip.is_loopback),
        ("link-local", ip.is_link_local),
        ("private", ip.is_private),
        ("multicast", ip.is_multicast),
    ):
        if hit:
            return kind
    return None if ip.is_global else "reserved"


def open_tcp(
    address: str, port: int, timeout: float, socket_options: Iterable[Any] | None
) -> httpcore.NetworkStream:
    """Connect to an address already checked (a test may refuse all but loopback here)."""
    return httpcore.SyncBackend().connect_tcp(
        address, port, timeout=timeout, socket_options=socket_options
    )


class _DeadlineStream(httpcore.NetworkStream):
    """A socket whose every read and write ends by the fetch's total deadline."""

    def __init__(self, inner: httpcore.NetworkStream, deadline: float) -> None:
        self._inner = inner
        self._deadline = deadline

    def _left(self, timeout: float | None, error: type[Exception]) -> float:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise error("the fetch passed its total time limit")
        return left if timeout is None else min(timeout, left)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, self._left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, self._left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        left = self._left(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(
            self._inner.start_tls(ssl_context, server_hostname, left), self._deadline
        )

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _GuardedBackend(httpcore.SyncBackend):
    """Resolves each host itself, checks every address, connects to a checked one."""

    def __init__(self, deadline: float, allow_private: bool) -> None:
        self._deadline = deadline
        self._allow_private = allow_private

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise httpcore.ConnectTimeout("the fetch passed its total time limit")
        addresses = _resolve_within(host, port, left)
        if not self._allow_private:
            for address in addresses:
                problem = address_problem(host, address)
                if problem is not None:
                    raise InputError(
                        f"url: host {host!r} resolves to {address} ({problem}); loopback, "
                        "link-local and private addresses are refused "
                        "(ingest.allow_private_urls = true allows them); nothing was stored"
                    )
        failure: Exception = httpcore.ConnectError(f"{host} has no address")
        for address in addresses:
            wait = left if timeout is None else min(timeout, left)
            try:
                stream = open_tcp(address, port, wait, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
                continue
            return _DeadlineStream(stream, self._deadline)
        raise failure


def _resolve_within(host: str, port: int, seconds: float) -> list[str]:
    """resolve_host, given up after `seconds` (getaddrinfo itself cannot be interrupted: a
    slow lookup finishes in its own thread after the fetch has failed)."""
    found: list[list[str] | BaseException] = []
    done = threading.Event()

    def lookup() -> None:
        try:
            found.append(resolve_host(host, port))
        except BaseException as exc:
            found.append(exc)
        finally:
            done.set()

    threading.Thread(target=lookup, name="ingest-url-resolve", daemon=True).start()
    if not done.wait(seconds):
        raise httpcore.ConnectTimeout(f"{host} did not resolve in time")
    result = found[0]
    if isinstance(result, BaseException):
        raise httpcore.ConnectError(f"{host} does not resolve") from result
    return result


def _client(deadline: float, allow_private: bool) -> httpx.Client:
    transport = httpx.HTTPTransport(verify=TLS_VERIFY)
    # httpx has no public hook for the network backend; the pool it builds takes one.
    transport._pool._network_backend = _GuardedBackend(deadline, allow_private)
    return httpx.Client(
        transport=transport,
        timeout=httpx.Timeout(READ_TIMEOUT, connect=CONNECT_TIMEOUT),
        follow_redirects=True,
        max_redirects=MAX_REDIRECTS,
        # Proxies from the environment would hide the address that is checked.
        trust_env=False,
    )


def _decoded(source: str, encoding_header: str, raw: Iterator[bytes]) -> bytes:
    """The body, at most MAX_BYTES raw and decoded; one decompress call yields at most PIECE
    bytes (and never more than the room left plus one), so memory stays within the cap plus
    one piece and one network read."""
    layers = [e.strip().lower() for e in encoding_header.split(",") if e.strip()]
    layers = [e for e in layers if e != "identity"]
    if len(layers) > 1 or any(e not in ENCODINGS for e in layers):
        raise InputError(
            f"url: {source!r} is sent with Content-Encoding {encoding_header!r}; "
            "allowed: one layer of gzip or deflate; nothing was stored"
        )
    layer = layers[0] if layers else ""
    body = bytearray()
    received = 0

    def over() -> InputError:
        return InputError(f"url: {source!r} is over {MAX_BYTES} bytes; nothing stored")

    if not layer:
        for piece in raw:
            body.extend(piece)
            if len(body) > MAX_BYTES:
                raise over()
        return bytes(body)
    wbits = zlib.MAX_WBITS | 16 if layer in ("gzip", "x-gzip") else zlib.MAX_WBITS
    inflater = zlib.decompressobj(wbits)
    started = False
    try:
        for piece in raw:
            received += len(piece)
            if received > MAX_BYTES:
                raise over()
            data = piece
            while data:
                try:
                    out = inflater.decompress(data, min(MAX_BYTES - len(body) + 1, PIECE))
                except zlib.error:
                    if layer != "deflate" or started:
                        raise
                    # Some servers send raw deflate without the zlib header.
                    inflater = zlib.decompressobj(-zlib.MAX_WBITS)
                    out = inflater.decompress(data, min(MAX_BYTES - len(body) + 1, PIECE))
                started = True
                body.extend(out)
                if len(body) > MAX_BYTES:
                    raise over()
                data = inflater.unconsumed_tail
                if inflater.eof and inflater.unused_data:
                    # Concatenated gzip members: a new inflater for the next one.
                    data = inflater.unused_data
                    inflater = zlib.decompressobj(wbits)
                elif inflater.eof:
                    data = b""
    except zlib.error as exc:
        raise InputError(f"url: {source!r} is not valid {layer} data; nothing was stored") from exc
    return bytes(body)


@dataclass(frozen=True)
class Page:
    """A page's body as it came (decoded from its transfer encoding, not yet text)."""

    ctype: str
    body: bytes
    encoding: str
    validators: str  # JSON: the ETag and Last-Modified to send next time
    final_url: str


def fetch_page(
    source: str,
    headers: dict[str, str],
    *,
    deadline: float,
    total: float,
    allow_private: bool,
    cached: bool,
) -> Page | None:
    """GET `source` by the monotonic `deadline` (`total` seconds after the fetch began);
    None when the server answers 304 to a `cached` copy's validators."""
    try:
        with (
            _client(deadline, allow_private) as client,
            client.stream("GET", source, headers=headers) as response,
        ):
            if response.status_code == 304 and cached:
                return None
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
            body = _decoded(
                source, response.headers.get("content-encoding", ""), response.iter_raw()
            )
            validators = json.dumps(
                {
                    "etag": response.headers.get("etag", ""),
                    "last_modified": response.headers.get("last-modified", ""),
                }
            )
            return Page(
                ctype=ctype,
                body=body,
                encoding=response.encoding or "utf-8",
                validators=validators,
                final_url=str(response.url),
            )
    except httpx.TimeoutException as exc:
        if time.monotonic() >= deadline:
            raise InputError(
                f"url: {source!r} did not finish within {total:g} s "
                "(ingest.url_timeout_sec); nothing was stored"
            ) from exc
        raise InputError(
            f"url: {source!r} did not answer within {READ_TIMEOUT:g} s; nothing was stored"
        ) from exc
    except httpx.TooManyRedirects as exc:
        raise InputError(f"url: {source!r} redirects more than {MAX_REDIRECTS} times") from exc
    except httpx.HTTPError as exc:
        raise InputError(f"url: {source!r} is unreachable ({type(exc).__name__})") from exc


def page_text(page: Page, source: str, *, deadline: float, max_chars: int) -> str:
    """The page's text: HTML converted (at most `max_chars`, by `deadline`), else as sent."""
    raw = page.body.decode(page.encoding, errors="replace")
    is_html = page.ctype.startswith(("text/html", "application/xhtml")) or raw.lstrip()[:1] == "<"
    try:
        return html_to_text(raw, max_chars=max_chars, deadline=deadline) if is_html else raw
    except HtmlTooLarge as exc:
        raise InputError(f"url: {source!r}: {exc}; nothing was stored") from exc
