"""Recall: a question and a plan through the form, the response and its waterfall; the
plan is checked as it is typed by the same validator the recall tool uses."""

from __future__ import annotations

import time
import uuid

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from imprint.dashboard import _rows as rows
from imprint.dashboard._security import CSRF_HEADER
from imprint.dashboard._site import Site, whole_number
from imprint.dashboard.pages.traces import waterfall
from imprint.errors import ImprintError
from imprint.recall.plan import parse_plan

__all__ = ["EXAMPLE_PLAN", "routes"]

EXAMPLE_PLAN = (
    '[{"tool": "search", "args": {"query": "how are writes serialized", "limit": 5}},\n'
    ' {"tool": "list_sources", "args": {"limit": 10}}]'
)


def routes(site: Site) -> list[Route]:
    def page(
        request: Request, values: dict[str, str], status: int = 200, **more: object
    ) -> Response:
        more.update(values=values, example_plan=EXAMPLE_PLAN)
        return site.page(request, "recall.html", "Recall", "/recall", status=status, **more)

    def recall_form(request: Request) -> Response:
        return page(request, {})

    async def recall_run(request: Request) -> Response:
        values = await site.form(request)
        if values is None:
            return site.refused(request)
        values.setdefault("condense", "off")
        plan = values.get("plan", "").strip()
        if plan:
            try:
                parse_plan(plan)
            except ImprintError as exc:
                return page(request, values, 400, plan_error=exc)
        recall_id = uuid.uuid4().hex[:12]
        started = time.monotonic()
        try:
            text = await anyio.to_thread.run_sync(
                lambda: rows.recall_text(
                    site.reads,
                    rows.RecallArgs(
                        question=values.get("question", ""),
                        plan=plan or None,
                        max_chars=whole_number(values.get("max_chars", "4000"), "max_chars"),
                        condense=values.get("condense") == "on",
                    ),
                    values.get("workspace", ""),
                    timeout_sec=site.runtime.config.recall.step_timeout_sec,
                    cwd=site.app.cwd,
                    recall_id=recall_id,
                )
            )
        except ImprintError as exc:
            return page(request, values, 400, error=exc)
        elapsed = (time.monotonic() - started) * 1000
        return page(
            request,
            values,
            recall_id=recall_id,
            elapsed_ms=elapsed,
            text=text,
            waterfall=waterfall(site, recall_id),
        )

    async def recall_validate(request: Request) -> Response:
        if not site.guard.csrf_ok(request.headers.get(CSRF_HEADER)):
            return JSONResponse({"ok": False, "error": "stale page: reload it"}, status_code=403)
        try:
            data = await request.json()
        except ValueError:
            return JSONResponse({"ok": False, "error": "body: not JSON"}, status_code=400)
        except RecursionError:
            error = 'body: nested too deeply; send {"plan": "<the plan as text>"}'
            return JSONResponse({"ok": False, "error": error}, status_code=400)
        plan = data.get("plan", "") if isinstance(data, dict) else ""
        if not isinstance(plan, str) or not plan.strip():
            return JSONResponse({"ok": True, "error": "", "steps": 0})
        try:
            steps = parse_plan(plan)
        except ImprintError as exc:
            return JSONResponse({"ok": False, "error": str(exc)})
        return JSONResponse({"ok": True, "error": "", "steps": len(steps)})

    return [
        Route("/recall", recall_form, methods=["GET"]),
        Route("/recall", recall_run, methods=["POST"]),
        Route("/recall/validate", recall_validate, methods=["POST"]),
    ]
