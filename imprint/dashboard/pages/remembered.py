"""Memory: what Imprint remembers of a project, as a person reads it. Its memories by type,
newest first, each with its date, source and id (superseded ones struck through, with what
replaced them and a way back); the timeline; the briefing the next session gets; facts with
their validity; one captured session's page. Supersede, restore and retag are CSRF-checked
POSTs; delete goes through the records' confirmation page."""

from __future__ import annotations

from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from imprint.dashboard import _rows as rows
from imprint.dashboard._site import Site, whole_number
from imprint.dashboard._templates import href
from imprint.dashboard._timeline import timeline
from imprint.errors import ImprintError
from imprint.hooklib.state import read_state
from imprint.logs import get_logger, log_files
from imprint.store.records import RECORD_TYPES
from imprint.trace.log import capture_runs

__all__ = ["routes"]

log = get_logger("imprint.dashboard")


def _back(values: dict[str, str], rid: str) -> Response:
    params = {"project": values.get("project", ""), "workspace": values.get("workspace", "")}
    # `project` is kept even when empty: the page of memories without a project.
    target = href("/memory", params)
    if not params["project"]:
        target += ("&" if "?" in target else "?") + "project="
    return RedirectResponse(f"{target}#m-{rid}", status_code=303)


def _change(site: Site, title: str, do: Any) -> Any:
    """A POST endpoint that runs `do(form values)` and goes back to the memory changed."""

    async def endpoint(request: Request) -> Response:
        values = await site.form(request)
        if values is None:
            return site.refused(request)
        try:
            text = await anyio.to_thread.run_sync(lambda: do(values))
        except ImprintError as exc:
            return site.error(request, title, str(exc), "/memory")
        log.info("dashboard.memory.changed", what=text)
        return _back(values, values.get("id", ""))

    return endpoint


def routes(site: Site) -> list[Route]:
    def memory_page(request: Request) -> Response:
        q = request.query_params
        ws_name = q.get("workspace", "")
        project = q.get("project")
        context: dict[str, Any] = {
            "ws": ws_name,
            "pm": None,
            "types": RECORD_TYPES,
            "briefing": None,
            "briefing_error": None,
        }
        try:
            ws = site.reads.open(ws_name)
            if project is None:
                context["projects"] = rows.memory_projects(site.reads, ws)
                return site.page(request, "project_memory.html", "Memory", "/memory", **context)
            offset = whole_number(q.get("offset", "0"), "offset")
            pm = rows.project_memory(site.reads, ws, project, offset=offset)
        except ImprintError as exc:
            return site.error(request, "Memory", str(exc), "/memory", 400)
        try:
            with site.reads.deadline() as deadline:
                budget = site.runtime.config.hooks.context_chars
                context["briefing"] = rows.briefing_preview(
                    site.reads, ws, pm.project, budget, deadline
                )
        except ImprintError as exc:
            context["briefing_error"] = exc
        context.update(
            pm=pm, tl=timeline(pm), on_page={it.record.id for it in pm.items}, projects=[]
        )
        title = f"Memory of {pm.project or '(no project)'}"
        return site.page(request, "project_memory.html", title, "/memory", **context)

    def session_page(request: Request) -> Response:
        q = request.query_params
        ws_name, sid, project = q.get("workspace", ""), q.get("id", ""), q.get("project", "")
        try:
            s = rows.session_row(site.reads, site.reads.open(ws_name), sid, project)
        except ImprintError as exc:
            return site.error(request, "Session", str(exc), "/memory", 404)
        try:
            state = rows.load_state(site.runtime.data_dir, s.session_id)
        except (OSError, ValueError):
            state = None  # a capture state unreadable is a missing line, not a failed page
        runs = capture_runs(log_files(site.runtime.data_dir), s.session_id)
        # The hook processes count their runs per client and event, not per session: the
        # capturing client's counts are shown beside this session's capture runs.
        client = state.client if state is not None else ""
        hooks = sorted(read_state(site.runtime.data_dir).get(client, {}).items())
        return site.page(
            request,
            "session.html",
            f"Session {s.session_id}",
            "/memory",
            s=s,
            ws=ws_name,
            state=state,
            runs=runs,
            client=client,
            hooks=hooks,
            log_on=site.runtime.config.log.file,
        )

    supersede = _change(
        site,
        "Supersede",
        lambda v: rows.supersede_memory(
            site.app, v.get("id", ""), v.get("by", ""), v.get("workspace", "")
        ),
    )
    restore = _change(
        site,
        "Restore",
        lambda v: rows.restore_memory(site.app, v.get("id", ""), v.get("workspace", "")),
    )
    retag = _change(
        site,
        "Retag",
        lambda v: rows.retag_memory(
            site.app, v.get("id", ""), v.get("type", ""), workspace=v.get("workspace", "")
        ),
    )
    return [
        Route("/memory", memory_page),
        Route("/session", session_page),
        Route("/memory/supersede", supersede, methods=["POST"]),
        Route("/memory/restore", restore, methods=["POST"]),
        Route("/memory/retag", retag, methods=["POST"]),
    ]
