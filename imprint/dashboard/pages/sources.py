"""Sources: the list_sources rows with the newest facts below them, and one source's
summary and chunks, ten at a time."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from imprint._shown import shown
from imprint.dashboard import _rows as rows
from imprint.dashboard._site import Site, whole_number
from imprint.dashboard._templates import stamp
from imprint.dashboard.pages.search import LAYERS
from imprint.errors import ImprintError

__all__ = ["routes"]

FACTS_SHOWN = 50
CHUNKS_SHOWN = 10


def routes(site: Site) -> list[Route]:
    def sources(request: Request) -> Response:
        q = request.query_params
        form = {k: q.get(k, "") for k in ("project", "lang", "layer", "workspace")}
        form["limit"] = q.get("limit", "50")
        context: dict[str, Any] = {"form": form, "layers": LAYERS}
        try:
            listed = rows.ListSourcesArgs(
                project=form["project"],
                lang=form["lang"],
                layer=form["layer"],
                limit=whole_number(form["limit"], "limit"),
            )
            found, total = rows.source_rows(site.reads, site.reads.open(form["workspace"]), listed)
        except ImprintError as exc:
            return site.page(
                request, "sources.html", "Sources", "/sources", status=400, error=exc, **context
            )
        # The newest facts (kg_query's rows), ended ones included and marked.
        try:
            newest = rows.KgQueryArgs(include_ended=True, limit=FACTS_SHOWN)
            facts = rows.fact_rows(site.reads, site.reads.open(form["workspace"]), newest)
        except ImprintError as exc:
            context["facts_error"] = exc
        else:
            context["facts"] = facts
        context.update(found=found, total=total, facts_shown=FACTS_SHOWN)
        return site.page(request, "sources.html", "Sources", "/sources", **context)

    def source(request: Request) -> Response:
        q = request.query_params
        name, project, ws = q.get("source", ""), q.get("project", ""), q.get("workspace", "")
        try:
            start = whole_number(q.get("start", "0"), "start")
            opened = site.reads.open(ws)
            summary = rows.summary_row(
                site.reads, opened, rows.FileSummaryArgs(source=name, project=project)
            )
            end = start + CHUNKS_SHOWN - 1
            asked = rows.FileChunksArgs(source=name, start=start, end=end, project=project)
            chunks = rows.chunk_rows(site.reads, opened, asked)
        except ImprintError as exc:
            return site.error(request, "Source", str(exc), "/sources", 404)
        info = [
            ("project", summary.project or "-"),
            ("type", summary.source_type),
            ("chunks", summary.chunks),
            ("modified", stamp(summary.mtime)),
            (
                "lang / layer / kind",
                f"{summary.lang or '-'} / {summary.layer or '-'} / {summary.kind or '-'}",
            ),
            ("record types", ", ".join(summary.types)),
            ("topics", ", ".join(summary.topics) or "-"),
        ]
        return site.page(
            request,
            "source.html",
            f"Source {shown(name)}",
            "/sources",
            source=name,
            project=project,
            ws=ws,
            start=start,
            info=info,
            summary=summary,
            chunks=chunks,
            previous=max(0, start - CHUNKS_SHOWN),
        )

    return [Route("/sources", sources), Route("/source", source)]
