"""Traces: the recalls in the log, slow or failed ones picked out, and each one's waterfall."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from imprint.dashboard._site import Site
from imprint.logs import log_files
from imprint.trace import (
    SvgPicture,
    build_waterfall,
    read_recall_events,
    recall_summaries,
    render_svg,
    svg_picture,
)

__all__ = ["TRACE_LIMIT", "Waterfall", "routes", "waterfall"]

TRACE_LIMIT = 50
FILTERS = ("", "slow", "failed")


@dataclass(frozen=True)
class Waterfall:
    """A recall's picture with its caption, or the one line that says why there is none."""

    recall_id: str
    note: str = ""
    caption: str = ""
    svg: SvgPicture | None = None  # drawn by the trace package's `waterfall.svg`


def _events(site: Site, recall_id: str = "", limit: int = 0) -> dict[str, list[dict[str, Any]]]:
    return read_recall_events(log_files(site.runtime.data_dir), recall_id, limit=limit)


def waterfall(site: Site, recall_id: str) -> Waterfall:
    if not site.runtime.config.log.file:
        return Waterfall(recall_id, "log.file is off: no trace was written for this recall.")
    events = _events(site, recall_id).get(recall_id)
    if not events:
        return Waterfall(recall_id, "no trace for this recall in the log")
    wf = build_waterfall(recall_id, events)
    if not wf.bars:
        return Waterfall(
            recall_id, "A recall without a plan is a plain search: it has no steps to time."
        )
    slowest = wf.slowest
    caption = f"{len(wf.steps)} steps"
    if wf.deadline_ms is not None:
        caption += f", deadline {wf.deadline_ms:.0f} ms"
    if slowest is not None:
        caption += f", slowest {slowest.label} ({slowest.total_ms:.1f} ms)"
    marked = [b for b in wf.steps if b.outcome != "ok"]
    if marked:
        caption += "; " + ", ".join(f"{b.label}: {b.outcome}" for b in marked)
    return Waterfall(recall_id, caption=caption, svg=svg_picture(wf))


def routes(site: Site) -> list[Route]:
    def traces(request: Request) -> Response:
        which = request.query_params.get("filter", "")
        try:
            slow_ms = float(request.query_params.get("slow_ms", "1000"))
        except ValueError:
            return site.error(request, "Traces", "slow_ms: a number of milliseconds", "/traces")
        summaries = recall_summaries(_events(site, limit=TRACE_LIMIT * 4))
        if which == "slow":
            summaries = [s for s in summaries if (s.total_ms or 0) >= slow_ms]
        elif which == "failed":
            summaries = [s for s in summaries if s.failed]
        return site.page(
            request,
            "traces.html",
            "Traces",
            "/traces",
            which=which,
            filters=FILTERS,
            slow_ms=slow_ms,
            summaries=summaries[:TRACE_LIMIT],
            files=len(log_files(site.runtime.data_dir)),
            log=site.runtime.config.log,
        )

    def trace(request: Request) -> Response:
        rid = request.path_params["rid"]
        svg = rid.endswith(".svg")
        rid = rid.removesuffix(".svg")
        if not rid.replace("-", "").isalnum():
            return site.error(
                request, "Trace", "recall: an id from the Traces page", "/traces", 404
            )
        events = _events(site, rid).get(rid)
        if not events:
            return site.error(request, "Trace", f"recall {rid}: not in the log", "/traces", 404)
        wf = build_waterfall(rid, events)
        if svg:
            return Response(render_svg(wf), media_type="image/svg+xml")
        return site.page(
            request,
            "trace.html",
            f"Trace {rid}",
            "/traces",
            wf=wf,
            waterfall=waterfall(site, rid),
        )

    return [Route("/traces", traces), Route("/traces/{rid}", trace)]
