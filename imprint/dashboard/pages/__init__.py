"""The dashboard's pages, one module each; each gives its routes over the shared `Site`."""

from __future__ import annotations

from starlette.routing import BaseRoute

from imprint.dashboard._site import Site
from imprint.dashboard.pages import (
    memories,
    overview,
    recall,
    remembered,
    search,
    settings,
    sources,
    traces,
)

__all__ = ["routes"]


def routes(site: Site) -> list[BaseRoute]:
    """Every page's routes, in the navigation's order."""
    found: list[BaseRoute] = []
    for page in (overview, remembered, search, recall, traces, settings, sources, memories):
        found.extend(page.routes(site))
    return found
