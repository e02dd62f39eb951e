"""Search: the search tool's own text, and per hit the numbers its ranking used."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from imprint.dashboard import _rows as rows
from imprint.dashboard._site import Site, whole_number
from imprint.errors import ImprintError
from imprint.reads.ranking import Why
from imprint.store.records import RECORD_TYPES

__all__ = ["LAYERS", "routes"]

LAYERS = ("", "docs", "source", "test", "config")


def routes(site: Site) -> list[Route]:
    def search(request: Request) -> Response:
        q = request.query_params
        query = q.get("q", "")
        args: dict[str, Any] = {
            "project": q.get("project", ""),
            "type": q.get("type", ""),
            "lang": q.get("lang", ""),
            "layer": q.get("layer", ""),
            "mode": q.get("mode", "hybrid"),
            "workspace": q.get("workspace", ""),
        }
        limit, max_chars = q.get("limit", "10"), q.get("max_chars", "4000")
        form = {
            "query": query,
            "limit": limit,
            "max_chars": max_chars,
            "types": ["", *RECORD_TYPES],
            "layers": LAYERS,
            **args,
        }
        if not query:
            return site.page(request, "search.html", "Search", "/search", form=form)
        try:
            asked = rows.SearchArgs(
                query=query,
                project=args["project"],
                type=args["type"],
                lang=args["lang"],
                layer=args["layer"],
                limit=whole_number(limit, "limit"),
                mode=rows.checked_mode(args["mode"]),
            )
            found = rows.search(site.reads, asked, args["workspace"])
            budget = rows.normalize_max_chars(whole_number(max_chars, "max_chars"))
            text = rows.format_search(found, budget)
        except ImprintError as exc:
            return site.page(
                request, "search.html", "Search", "/search", status=400, form=form, error=exc
            )
        # A hit without `why` shows the numbers the fusion itself used.
        hits = [(hit.record, hit.why or Why(fused=hit.score)) for hit in found.hits]
        return site.page(
            request,
            "search.html",
            "Search",
            "/search",
            form=form,
            found=found,
            hits=hits,
            text=text,
        )

    return [Route("/search", search)]
