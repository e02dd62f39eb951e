"""The dashboard's pages, rendered on the server from the same row functions as the tools.

Reads that wait on actors run in Starlette's worker threads (sync endpoints) or through
`anyio.to_thread`, never on the event loop.
"""

from __future__ import annotations

from pathlib import Path

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from imprint.actors.lifecycle import Runtime
from imprint.dashboard import pages
from imprint.dashboard._security import Guard, GuardMiddleware
from imprint.dashboard._site import Owner, Site
from imprint.dashboard.pages.settings import LIVE_KEYS
from imprint.logs import get_logger

__all__ = ["LIVE_KEYS", "Owner", "build_app"]

log = get_logger("imprint.dashboard")
STATIC = Path(__file__).parent / "static"
# Fixed texts, no values and no template: they must answer even when rendering fails.
NOT_FOUND = "<!doctype html><title>404</title><p>404: no such page</p>"
SERVER_ERROR = "<!doctype html><title>500</title><p>500: the page failed; see the owner's log</p>"


async def _not_found(request: Request, exc: Exception) -> Response:
    return HTMLResponse(NOT_FOUND, 404)


async def _server_error(request: Request, exc: Exception) -> Response:
    # The message stays in the owner's log (without request data); the page says nothing more.
    log.error("dashboard.error", path=request.url.path, error=type(exc).__name__)
    return HTMLResponse(SERVER_ERROR, 500)


def build_app(
    runtime: Runtime, guard: Guard, owner: Owner | None = None, cwd: Path | None = None
) -> Starlette:
    """The dashboard as an ASGI app over one started runtime."""
    site = Site(runtime, guard, owner or Owner(kind="in-process"), cwd)
    routes = [*pages.routes(site), Mount("/static", StaticFiles(directory=STATIC), name="static")]
    return Starlette(
        routes=routes,
        middleware=[Middleware(GuardMiddleware, guard=guard)],
        exception_handlers={404: _not_found, 500: _server_error, Exception: _server_error},
    )
