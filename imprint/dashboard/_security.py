"""Who may see the dashboard: the owner of the data dir, and only through loopback.

Loopback is not private (every local user can reach 127.0.0.1), so a connection from
another user is cut before its request is read (`imprint._loopback`), and every request,
pages and static files alike, needs a session cookie. Browsers send a site's cookies to
every port of it, so the cookie is named after this server's port
(`imprint_dashboard_8766`): another user's page on another port still receives it (and is
refused by the uid check when it replays it here), and two dashboards in one browser keep
a cookie each. The owner gets one by opening the URL that
`imprint dashboard` prints: it carries a one-time token (handed over the data dir's Unix
socket, which only the owner can open) that is exchanged for an HttpOnly, SameSite=Strict
cookie and then forgotten. A request whose Host is not this loopback name and port is
refused (DNS rebinding); a state-changing request must be a POST with the per-process CSRF
token and an Origin of this very server. No response carries Access-Control-Allow-Origin.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections.abc import Callable
from urllib.parse import urlencode

from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp

__all__ = ["COOKIE", "CSRF_FIELD", "CSRF_HEADER", "LOOPBACK", "Guard", "GuardMiddleware"]

LOOPBACK = "127.0.0.1"
COOKIE = "imprint_dashboard"
CSRF_FIELD = "csrf"
CSRF_HEADER = "x-csrf-token"
TOKEN_TTL_SEC = 300.0
SAFE_METHODS = ("GET", "HEAD")
UNAUTHORIZED = (
    "401 Unauthorized: open the URL that `imprint dashboard` printed; its token works once.\n"
)

HEADERS = {
    # Everything is served from here: no inline script, no other origin, no framing.
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    # Not no-referrer: with it Chromium sends `Origin: null` on POST, which must be refused.
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
}


class Guard:
    """Tokens, sessions and the CSRF token of one dashboard process."""

    def __init__(
        self,
        port: int = 0,
        *,
        token_ttl_sec: float = TOKEN_TTL_SEC,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.port = port
        self.csrf = secrets.token_urlsafe(32)
        self._ttl = token_ttl_sec
        self._clock = clock
        self._tokens: dict[str, float] = {}
        self._sessions: set[str] = set()
        self._lock = threading.Lock()

    def issue_token(self) -> str:
        token = secrets.token_urlsafe(32)
        with self._lock:
            now = self._clock()
            self._tokens = {t: exp for t, exp in self._tokens.items() if exp > now}
            self._tokens[token] = now + self._ttl
        return token

    def url(self, path: str = "/") -> str:
        """A fresh one-time URL for the owner (never logged)."""
        return f"http://{LOOPBACK}:{self.port}{path}?{urlencode({'token': self.issue_token()})}"

    def redeem(self, token: str) -> str | None:
        """A new session id for a token that was issued, is not stale and was never used."""
        with self._lock:
            expires = self._tokens.pop(token, None)  # used once, then gone
            if expires is None or expires <= self._clock():
                return None
            session = secrets.token_urlsafe(32)
            self._sessions.add(session)
            return session

    def session_ok(self, session: str | None) -> bool:
        if not session:
            return False
        with self._lock:
            return any(hmac.compare_digest(session, s) for s in self._sessions)

    @property
    def cookie(self) -> str:
        """The session cookie's name: one per port, as browsers share cookies across ports."""
        return f"{COOKIE}_{self.port}"

    def csrf_ok(self, given: str | None) -> bool:
        return bool(given) and hmac.compare_digest(str(given), self.csrf)

    def hosts(self) -> tuple[str, ...]:
        return (f"{LOOPBACK}:{self.port}", f"localhost:{self.port}")

    def host_ok(self, host: str | None) -> bool:
        return bool(host) and host in self.hosts()

    def origin_ok(self, origin: str | None, host: str | None) -> bool:
        return bool(origin) and self.host_ok(host) and origin == f"http://{host}"


class GuardMiddleware(BaseHTTPMiddleware):
    """Host check, token exchange, session check and Origin check, before any route."""

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        super().__init__(app)
        self.guard = guard

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        response = await self._checked(request, call_next)
        for name, value in HEADERS.items():
            response.headers[name] = value
        # Belt and braces: nothing below ever sets it, and nothing may.
        if "access-control-allow-origin" in response.headers:
            del response.headers["access-control-allow-origin"]
        return response

    async def _checked(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        guard = self.guard
        host = request.headers.get("host")
        if not guard.host_ok(host):
            return PlainTextResponse(
                "400 Bad Request: the Host must be this dashboard's loopback address\n",
                status_code=400,
            )
        token = request.query_params.get("token")
        if token is not None:
            session = guard.redeem(token)
            if session is None:
                return PlainTextResponse(UNAUTHORIZED, status_code=401)
            # Drop the token from the address bar and from history.
            response = RedirectResponse(request.url.path, status_code=303)
            response.set_cookie(
                guard.cookie, session, httponly=True, samesite="strict", path="/", secure=False
            )
            return response
        if not guard.session_ok(request.cookies.get(guard.cookie)):
            return PlainTextResponse(UNAUTHORIZED, status_code=401)
        if request.method not in SAFE_METHODS:
            if request.method != "POST":
                return PlainTextResponse("405 Method Not Allowed\n", status_code=405)
            if not guard.origin_ok(request.headers.get("origin"), host):
                return PlainTextResponse(
                    "403 Forbidden: a change must come from this dashboard's own pages\n",
                    status_code=403,
                )
        return await call_next(request)
