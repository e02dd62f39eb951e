"""A record's page with its tags, and deleting a record or a whole source behind a
confirmation page (the delete itself is a POST with the CSRF token)."""

from __future__ import annotations

import anyio
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from imprint._shown import clip, one_line, shown
from imprint.dashboard import _rows as rows
from imprint.dashboard._site import Site
from imprint.dashboard._templates import stamp
from imprint.errors import ImprintError
from imprint.logs import get_logger
from imprint.reads.memory import MemoryRow
from imprint.store.records import SESSION_SUMMARY_KIND

__all__ = ["routes"]

log = get_logger("imprint.dashboard")


# Observations a session's delete confirmation names one by one; the rest are counted.
OBSERVATIONS_NAMED = 50


def _info(row: MemoryRow) -> list[tuple[str, str]]:
    """A record's page: its fields, in the order shown."""
    r = row.record
    return [
        ("id", r.id),
        ("project", r.project or "-"),
        ("source", shown(f"{r.source or '(inline)'}#{r.chunk_index} of {r.chunk_count}")),
        ("source type", r.source_type),
        ("type", r.type),
        ("tagged by", r.tagged_by),
        ("lang", r.lang or "-"),
        ("layer", r.layer or "-"),
        ("kind", r.kind or "-"),
        ("domains", ", ".join(r.domains) or "-"),
        ("topics", ", ".join(r.topics) or "-"),
        ("created", stamp(r.created_at)),
        ("source on this computer", row.path_context.get("path", "not found here")),
    ]


def _memory_goes(site: Site, ws: str, rid: str) -> tuple[str, list[str]]:
    """What a memory's delete names, and what else it changes: the memories it superseded
    hold again, the link to what replaced it goes."""
    row = rows.memory_row(site.reads, site.reads.open(ws), rows.GetMemoryArgs(id=rid))
    what = f"{row.record.type} memory {rid}: {shown(clip(one_line(row.record.content), 200))}"
    also = [
        f"memory {k.old}, which it superseded, holds again (search and the briefing show it)"
        for k in row.supersedes
    ]
    if row.superseded_by:
        also.append(f"the link saying {row.superseded_by.new} replaced it goes with it")
    if row.record.kind == SESSION_SUMMARY_KIND:
        also.append("the session's turns stay; the next capture writes a new summary")
    return what, also


def _observations_go(site: Site, ws: str, project: str, source: str) -> list[str]:
    """The observations a session's delete takes with it (`delete_records`), in words."""
    with site.reads.deadline() as deadline:
        observed = rows.session_observations(
            site.reads, site.reads.open(ws), project, source, deadline
        )
    also: list[str] = []
    if observed:
        n = len(observed)
        also.append(
            f"{n} observation{'s' * (n != 1)} captured from it, "
            f"{'memories of their own, go' if n != 1 else 'a memory of its own, goes'} too:"
        )
        also += [
            f"{r.type} memory {r.id}: {shown(clip(one_line(r.content), 200))}"
            for r in observed[:OBSERVATIONS_NAMED]
        ]
        if n > OBSERVATIONS_NAMED:
            also.append(f"and {n - OBSERVATIONS_NAMED} more (the session's page lists them)")
    return also


def routes(site: Site) -> list[Route]:
    def memory(request: Request) -> Response:
        rid = request.path_params["rid"]
        ws = request.query_params.get("workspace", "")
        try:
            row = rows.memory_row(
                site.reads, site.reads.open(ws), rows.GetMemoryArgs(id=rid), site.app.cwd
            )
        except ImprintError as exc:
            return site.error(request, "Record", str(exc), "/sources", 404)
        r = row.record
        info = _info(row)
        whole_source = not (r.source_type == "memory" or r.chunk_count <= 1)
        newer, older = rows.supersede_chain(site.reads, site.reads.open(ws), r.id)
        return site.page(
            request,
            "memory.html",
            f"Record {r.id}",
            "/sources",
            r=r,
            ws=ws,
            info=info,
            whole_source=whole_source,
            newer=newer,
            older=older,
        )

    def delete_confirm(request: Request) -> Response:
        q = request.query_params
        rid, source = q.get("id", ""), q.get("source", "")
        project, ws = q.get("project", ""), q.get("workspace", "")
        if bool(rid) == bool(source):
            return site.error(request, "Delete", "id, source: give exactly one", "/sources")
        what = (
            f"record {rid}" if rid else f"source {shown(source)} ({project or '-'}) and its chunks"
        )
        hidden = (("id", rid), ("source", source), ("project", project), ("workspace", ws))
        if rid:
            # Deleting a memory drops its supersede links: say what that brings back.
            try:
                what, also = _memory_goes(site, ws, rid)
            except ImprintError as exc:
                return site.error(request, "Delete", str(exc), "/sources", 404)
        else:
            # A session's delete takes the observations kept from its turns (`delete_records`).
            try:
                also = _observations_go(site, ws, project, source)
            except ImprintError as exc:
                return site.error(request, "Delete", str(exc), "/sources")
        return site.page(
            request, "delete.html", "Delete?", "/sources", what=what, hidden=hidden, also=also
        )

    async def delete(request: Request) -> Response:
        values = await site.form(request)
        if values is None:
            return site.refused(request)
        try:
            text = await anyio.to_thread.run_sync(
                lambda: rows.delete_records(
                    site.app,
                    values.get("id", ""),
                    values.get("source", ""),
                    values.get("project", ""),
                    values.get("workspace", ""),
                )
            )
        except ImprintError as exc:
            return site.error(request, "Delete", str(exc), "/sources")
        log.info("dashboard.deleted", what=text)
        # A memory deleted from its project's Memory page goes back there.
        back = values.get("project") if values.get("id") and values.get("project") else None
        return site.page(
            request,
            "deleted.html",
            "Deleted",
            "/sources",
            text=text,
            back=back,
            ws=values.get("workspace", ""),
        )

    return [
        Route("/memory/{rid}", memory),
        Route("/delete", delete_confirm, methods=["GET"]),
        Route("/delete", delete, methods=["POST"]),
    ]
