"""The dashboard's pages, rendered on the server from the same row functions as the tools.

Reads that wait on actors run in Starlette's worker threads (sync endpoints) or through
`anyio.to_thread`, never on the event loop.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field as dc_field
from pathlib import Path
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from imprint import config as cfg
from imprint._shown import shown
from imprint.actors.lifecycle import Runtime
from imprint.config import LIVE_KEYS
from imprint.dashboard import _rows as rows
from imprint.dashboard._html import ago, e, field, layout, link, select, stamp, table
from imprint.dashboard._security import CSRF_FIELD, CSRF_HEADER, Guard, GuardMiddleware
from imprint.errors import ImprintError
from imprint.logs import get_logger, log_files
from imprint.reads.search import Why
from imprint.recall.plan import parse_plan
from imprint.store.records import RECORD_TYPES
from imprint.waterfall import (
    build_waterfall,
    read_recall_events,
    recall_summaries,
    render_svg,
)
from imprint.workspaces import active_workspace, list_workspaces

__all__ = ["LIVE_KEYS", "Owner", "build_app"]

log = get_logger("imprint.dashboard")
STATIC = Path(__file__).parent / "static"
SECRET_SUFFIXES = ("api_key",)
TRACE_LIMIT = 50
EXAMPLE_PLAN = (
    '[{"tool": "search", "args": {"query": "how are writes serialized", "limit": 5}},\n'
    ' {"tool": "list_sources", "args": {"limit": 10}}]'
)


@dataclass
class Owner:
    """The process that owns the data dir and serves this dashboard."""

    kind: str  # daemon, serve --http, or in-process
    pid: int = dc_field(default_factory=os.getpid)
    started_at: float = dc_field(default_factory=time.time)
    clients: Callable[[], int] = lambda: 0


def _secret(key: str) -> bool:
    return key.endswith(SECRET_SUFFIXES)


class Pages:
    def __init__(self, runtime: Runtime, guard: Guard, owner: Owner, cwd: Path | None) -> None:
        self.runtime = runtime
        self.guard = guard
        self.owner = owner
        self.app = rows.App(runtime, cwd)
        self.reads = self.app.reads

    # -- helpers -------------------------------------------------------------------------

    def page(
        self, title: str, body: str, active: str, *, status: int = 200, workspace: str = ""
    ) -> HTMLResponse:
        ws = workspace or active_workspace(self.runtime.data_dir)
        html = layout(title, body, active=active, csrf=self.guard.csrf, workspace=ws)
        return HTMLResponse(html, status_code=status)

    def csrf_input(self) -> str:
        return f'<input type="hidden" name="{CSRF_FIELD}" value="{e(self.guard.csrf)}">'

    def error(self, title: str, message: str, active: str, status: int = 400) -> HTMLResponse:
        return self.page(title, f'<p class="error">{e(message)}</p>', active, status=status)

    async def form(self, request: Request) -> dict[str, str] | None:
        """The posted form, or None when its CSRF token is not this process's."""
        data = await request.form()
        values = {k: str(v) for k, v in data.items() if isinstance(v, str)}
        if not self.guard.csrf_ok(values.get(CSRF_FIELD)):
            return None
        return values

    def refused(self) -> Response:
        return self.error("Refused", "403: the form's CSRF token is missing or stale", "", 403)

    # -- overview ------------------------------------------------------------------------

    def overview(self, request: Request) -> Response:
        rt = self.runtime
        now = time.time()
        owner = self.owner
        device = rows.device_row(self.app)
        sections = []
        head = [
            ("owner", f"{e(owner.kind)} (pid {owner.pid})"),
            ("uptime", e(_duration(now - owner.started_at))),
            ("connected clients", e(owner.clients())),
            ("data dir", e(rt.data_dir)),
            ("inference provider", e(device["inference_provider"])),
            ("runs on this computer", "yes" if device["inference_local"] else "no"),
            ("recall model path", e(device["recall_model_path"])),
            ("model", e(device.get("model_file") or device.get("model") or "-")),
            ("model loaded", "yes" if device["model_loaded"] else "no"),
            ("model busy", e(device.get("model_busy", "no"))),
        ]
        sections.append(
            '<section class="cards">'
            + "".join(f'<div class="card"><b>{k}</b><span>{v}</span></div>' for k, v in head)
            + "</section>"
        )
        names = list_workspaces(rt.data_dir)
        active = active_workspace(rt.data_dir)
        if not names:
            sections.append("<p>No workspace holds anything yet.</p>")
        for ws in names:
            try:
                st = rows.status_row(rt, ws)
            except ImprintError as exc:
                sections.append(f'<h2>{e(ws)}</h2><p class="error">{e(exc)}</p>')
                continue
            verdict = (
                '<span class="ok">indexes agree</span>'
                if st.consistent
                else '<span class="bad">INDEXES DISAGREE</span>'
            )
            project_rows = [
                [
                    link("/sources", p or "-", project=p, workspace=ws),
                    e(c["records"]),
                    e(c["sources"]),
                    e(ago(st.project_last_write.get(p), now)),
                ]
                for p, c in sorted(st.projects.items())
            ]
            last = st.last_write
            stale = ' class="bad"' if last and now - last > 7 * 86400 else ""
            sections.append(
                f"<h2>workspace {e(ws)}{' (active)' if ws == active else ''}</h2>"
                f"<p>{verdict}: vectors {st.vectors}, lexical {st.records}, only in vectors "
                f"{st.only_in_vectors}, only in lexical {st.only_in_lexical}, journal pending "
                f"{st.journal_pending}, fts {'ok' if st.fts_ok else 'damaged'} · facts "
                f"{st.facts} ({st.facts_current} current) · "
                f"<span{stale}>last write {e(ago(last, now))}</span> ({e(stamp(last))})</p>"
                + (
                    table(["project", "records", "sources", "last write"], project_rows)
                    if project_rows
                    else "<p>no records yet</p>"
                )
            )
        ingests = rows.running_ingests(rt.data_dir)
        if ingests:
            sections.append(
                "<h2>running ingests</h2>"
                + table(
                    ["path", "progress", "current file", "running for"],
                    [
                        [
                            e(i["path"]),
                            f'<progress max="{max(1, i["total"])}" value="{i["done"]}"></progress>'
                            f" {i['done']}/{i['total']}",
                            e(i["current"]),
                            e(_duration(now - i["started"])),
                        ]
                        for i in ingests
                    ],
                )
            )
        else:
            sections.append("<h2>running ingests</h2><p>none</p>")
        return self.page("Overview", "".join(sections), "/")

    # -- search --------------------------------------------------------------------------

    def search(self, request: Request) -> Response:
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
        form = (
            '<form method="get" action="/search" class="inline" id="search-form">'
            + field("q", "query", query, extra=' size="50" autofocus')
            + select("mode", "mode", ["hybrid", "semantic", "lexical"], args["mode"])
            + field("project", "project", args["project"], extra=' size="10"')
            + select("type", "type", ["", *RECORD_TYPES], args["type"])
            + field("lang", "lang", args["lang"], extra=' size="8"')
            + select("layer", "layer", ["", "docs", "source", "test", "config"], args["layer"])
            + field("limit", "limit", limit, kind="number", extra=' min="1" max="50"')
            + field("max_chars", "budget", max_chars, kind="number", extra=' step="100"')
            + field("workspace", "workspace", args["workspace"], extra=' size="10"')
            + "<button>Search</button></form>"
        )
        if not query:
            return self.page("Search", form, "/search")
        try:
            found = rows.search_rows(self.reads, query, limit=_int(limit, "limit"), **args)
            text = rows.format_search(found, _int(max_chars, "max_chars"))
        except ImprintError as exc:
            return self.page(
                "Search", form + f'<p class="error">{e(exc)}</p>', "/search", status=400
            )
        ws = args["workspace"]
        hit_rows = []
        for n, hit in enumerate(found.hits, start=1):
            r = hit.record
            w = hit.why or Why(fused=hit.score)  # the numbers the fusion itself used
            where = (
                link(
                    "/source",
                    f"{r.source}#{r.chunk_index}",
                    source=r.source,
                    project=r.project,
                    workspace=ws,
                )
                if r.source
                else "(inline)"
            )
            phrase = "yes" if w.phrase else "no"
            hit_rows.append(
                [
                    str(n),
                    link(f"/memory/{r.id}", r.id, workspace=ws)
                    + f'<div class="excerpt">{e(r.content[:300])}</div>',
                    e(r.project or "-"),
                    where,
                    e(r.type),
                    e(w.vector_rank or "-"),
                    e(w.lexical_rank or "-"),
                    e(phrase),
                    f"{w.fused:.4f}",
                ]
            )
        body = (
            form
            + f"<p>{len(found.hits)} results for <q>{e(found.query)}</q> ({e(found.mode)})</p>"
            + table(
                [
                    "#",
                    "record",
                    "project",
                    "source",
                    "type",
                    "vector rank",
                    "BM25 rank",
                    "exact phrase",
                    "fused score",
                ],
                hit_rows,
                cls="hits",
            )
            + "<details open><summary>as the search tool returns it</summary>"
            + f'<pre class="tool-output">{e(text)}</pre></details>'
        )
        return self.page("Search", body, "/search")

    # -- recall --------------------------------------------------------------------------

    def _recall_form(self, values: dict[str, str], plan_error: str = "") -> str:
        plan_err = f'<p class="error" id="plan-error">{e(plan_error)}</p>'
        checked = " checked" if values.get("condense", "on") == "on" else ""
        return (
            '<form method="post" action="/recall" id="recall-form">'
            + self.csrf_input()
            + '<label class="block">question<textarea name="question" rows="2" required>'
            + e(values.get("question", ""))
            + "</textarea></label>"
            + '<label class="block">plan (JSON list of read steps; empty = a plain search)'
            + '<textarea name="plan" id="plan" rows="7" spellcheck="false" '
            + f'placeholder="{e(EXAMPLE_PLAN)}">'
            + e(values.get("plan", ""))
            + "</textarea></label>"
            + plan_err
            + '<div class="inline">'
            + field("max_chars", "budget", values.get("max_chars", "4000"), kind="number")
            + f'<label><input type="checkbox" name="condense"{checked}> condense</label>'
            + field("workspace", "workspace", values.get("workspace", ""), extra=' size="10"')
            + '<button id="recall-run">Run recall</button></div></form>'
        )

    def recall_form(self, request: Request) -> Response:
        return self.page("Recall", self._recall_form({}), "/recall")

    async def recall_run(self, request: Request) -> Response:
        values = await self.form(request)
        if values is None:
            return self.refused()
        values.setdefault("condense", "off")
        plan = values.get("plan", "").strip()
        if plan:
            try:
                parse_plan(plan)
            except ImprintError as exc:
                return self.page(
                    "Recall", self._recall_form(values, str(exc)), "/recall", status=400
                )
        recall_id = uuid.uuid4().hex[:12]
        started = time.monotonic()
        try:
            text = await anyio.to_thread.run_sync(
                lambda: rows.recall_text(
                    self.reads,
                    values.get("question", ""),
                    plan or None,
                    _int(values.get("max_chars", "4000"), "max_chars"),
                    values.get("condense") == "on",
                    values.get("workspace", ""),
                    timeout_sec=self.runtime.config.recall.step_timeout_sec,
                    cwd=self.app.cwd,
                    recall_id=recall_id,
                )
            )
        except ImprintError as exc:
            body = self._recall_form(values) + f'<p class="error">{e(exc)}</p>'
            return self.page("Recall", body, "/recall", status=400)
        elapsed = (time.monotonic() - started) * 1000
        body = (
            self._recall_form(values)
            + f"<h2>response <small>({elapsed:.0f} ms, recall {e(recall_id)})</small></h2>"
            + f'<pre class="tool-output" id="recall-output">{e(text)}</pre>'
            + "<h2>waterfall</h2>"
            + self._waterfall_html(recall_id)
        )
        return self.page("Recall", body, "/recall")

    async def recall_validate(self, request: Request) -> Response:
        if not self.guard.csrf_ok(request.headers.get(CSRF_HEADER)):
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

    # -- traces --------------------------------------------------------------------------

    def _events(self, recall_id: str = "", limit: int = 0) -> dict[str, list[dict[str, Any]]]:
        return read_recall_events(log_files(self.runtime.data_dir), recall_id, limit=limit)

    def _waterfall_html(self, recall_id: str) -> str:
        if not self.runtime.config.log.file:
            return "<p>log.file is off: no trace was written for this recall.</p>"
        events = self._events(recall_id).get(recall_id)
        if not events:
            return "<p>no trace for this recall in the log</p>"
        wf = build_waterfall(recall_id, events)
        if not wf.bars:
            return "<p>A recall without a plan is a plain search: it has no steps to time.</p>"
        slowest = wf.slowest
        caption = f"{len(wf.steps)} steps"
        if wf.deadline_ms is not None:
            caption += f", deadline {wf.deadline_ms:.0f} ms"
        if slowest is not None:
            caption += f", slowest {slowest.label} ({slowest.total_ms:.1f} ms)"
        marked = [b for b in wf.steps if b.outcome != "ok"]
        if marked:
            caption += "; " + ", ".join(f"{b.label}: {b.outcome}" for b in marked)
        svg_link = link(f"/traces/{recall_id}.svg", "SVG")
        return (
            f'<p class="caption">{e(caption)} · {svg_link}</p>'
            f'<div class="waterfall-box">{render_svg(wf)}</div>'
        )

    def traces(self, request: Request) -> Response:
        which = request.query_params.get("filter", "")
        try:
            slow_ms = float(request.query_params.get("slow_ms", "1000"))
        except ValueError:
            return self.error("Traces", "slow_ms: a number of milliseconds", "/traces")
        summaries = recall_summaries(self._events(limit=TRACE_LIMIT * 4))
        if which == "slow":
            summaries = [s for s in summaries if (s.total_ms or 0) >= slow_ms]
        elif which == "failed":
            summaries = [s for s in summaries if s.failed]
        summaries = summaries[:TRACE_LIMIT]
        filters = " · ".join(
            link("/traces", name or "all", filter=name, slow_ms="" if name != "slow" else slow_ms)
            if name != which
            else f"<b>{e(name or 'all')}</b>"
            for name in ("", "slow", "failed")
        )
        body_rows = [
            [
                link(f"/traces/{s.recall_id}", s.recall_id),
                e(s.started[:23].replace("T", " ")),
                e(s.question[:80]),
                e(s.steps),
                e(f"{s.total_ms:.0f} ms" if s.total_ms is not None else "-"),
                e(f"{s.slowest} ({s.slowest_ms:.0f} ms)" if s.slowest_ms is not None else "-"),
                f'<span class="bad">failed</span> {e(s.problems)}' if s.failed else "ok",
            ]
            for s in summaries
        ]
        files = log_files(self.runtime.data_dir)
        body = (
            f"<p>filter: {filters} (slow = at least {slow_ms:g} ms) · from "
            f"{len(files)} log file(s); the log rotates at log.max_bytes="
            f"{self.runtime.config.log.max_bytes} keeping log.keep={self.runtime.config.log.keep}"
            "</p>"
            + (
                table(
                    ["recall", "started", "question", "steps", "total", "slowest step", ""],
                    body_rows,
                    cls="traces",
                )
                if body_rows
                else "<p>no recalls in the log match</p>"
            )
        )
        return self.page("Traces", body, "/traces")

    def trace(self, request: Request) -> Response:
        rid = request.path_params["rid"]
        svg = rid.endswith(".svg")
        rid = rid.removesuffix(".svg")
        if not rid.replace("-", "").isalnum():
            return self.error("Trace", "recall: an id from the Traces page", "/traces", 404)
        events = self._events(rid).get(rid)
        if not events:
            return self.error("Trace", f"recall {rid}: not in the log", "/traces", 404)
        wf = build_waterfall(rid, events)
        if svg:
            return Response(render_svg(wf), media_type="image/svg+xml")
        bar_rows = [
            [
                e(("  " * b.depth) + b.label),
                e(b.actor or "-"),
                f"{b.queue_ms:.1f}",
                f"{b.run_ms:.1f}",
                e(b.outcome) + (" (slowest)" if b.slowest else ""),
                e(b.note),
            ]
            for b in wf.bars
        ]
        body = (
            f"<p>{e(wf.question)} · started {e(wf.started)} · total "
            f"{e(f'{wf.total_ms:.0f} ms' if wf.total_ms is not None else '-')}</p>"
            + self._waterfall_html(rid)
            + table(["row", "actor", "queue ms", "run ms", "outcome", "note"], bar_rows)
        )
        return self.page(f"Trace {rid}", body, "/traces")

    # -- settings ------------------------------------------------------------------------

    def _settings_body(self, message: str = "", error_key: str = "", error: str = "") -> str:
        root = self.runtime.data_dir
        running = self.runtime.config
        try:
            saved = cfg.load_config(root)
        except ImprintError as exc:
            return f'<p class="error">{e(exc)}</p>'
        groups: dict[str, list[list[str]]] = {}
        for key in cfg.all_keys():
            origin = cfg.key_origin(root, key)
            value = cfg.get_value(saved, key)
            now = cfg.get_value(running, key)
            secret = _secret(key)
            shown = ("set" if value else "not set") if secret else _show(value)
            where = f"env {cfg.env_name(key)}" if origin == "env" else origin
            live = key in LIVE_KEYS
            restart = "no (applies at once)" if live else "yes"
            if not secret and value != now:
                restart = "yes: saved, not yet in use" if not live else restart
            if origin == "env":
                edit = '<span class="muted">read-only (set by the environment)</span>'
            elif secret:
                edit = '<span class="muted">secret: set it with imprint config set</span>'
            else:
                edit = (
                    '<form method="post" action="/settings" class="inline setting">'
                    + self.csrf_input()
                    + f'<input type="hidden" name="key" value="{e(key)}">'
                    + f'<input name="value" value="{e(_show(value))}" '
                    + f'aria-label="{e(key)}" data-key="{e(key)}">'
                    + "<button>Save</button></form>"
                )
                if key == error_key:
                    edit += f'<p class="error">{e(error)}</p>'
            group = key.split(".")[0]
            groups.setdefault(group, []).append(
                [
                    f'<code id="{e(key)}">{e(key)}</code>',
                    e(shown),
                    e(where),
                    e(cfg.describe_allowed(key)),
                    e(restart),
                    edit,
                ]
            )
        note = f'<p class="saved">{e(message)}</p>' if message else ""
        if error:
            note += f'<p class="error">{e(error)}</p>'
        return (
            note
            + f"<p>file: <code>{e(cfg.config_path(root))}</code></p>"
            + "".join(
                f"<h2>{e(group)}</h2>"
                + table(
                    ["key", "value", "from", "allowed", "restart needed", "edit"],
                    key_rows,
                    cls="settings",
                )
                for group, key_rows in groups.items()
            )
        )

    def settings(self, request: Request) -> Response:
        saved = request.query_params.get("saved", "")
        message = f"saved {saved}" if saved in cfg.all_keys() else ""
        return self.page("Settings", self._settings_body(message), "/settings")

    async def settings_save(self, request: Request) -> Response:
        values = await self.form(request)
        if values is None:
            return self.refused()
        key, raw = values.get("key", ""), values.get("value", "")
        root = self.runtime.data_dir
        try:
            if key not in cfg.all_keys():
                raise ImprintError(f"key: {key!r} is not a setting")
            if cfg.key_origin(root, key) == "env":
                raise ImprintError(f"{key}: set by {cfg.env_name(key)}; change it there")
            if _secret(key):
                raise ImprintError(f"{key}: a secret; set it with imprint config set")
            stored = cfg.set_value(root, key, raw)
        except ImprintError as exc:
            # A secret's value is never echoed back: the message names the key only.
            message = str(exc) if not _secret(key) else f"{key}: not changed"
            body = self._settings_body(error_key=key, error=message)
            return self.page("Settings", body, "/settings", status=400)
        if key in LIVE_KEYS:
            group, name = key.split(".")
            setattr(getattr(self.runtime.config, group), name, stored)
        log.info("dashboard.setting.saved", key=key)
        return RedirectResponse(f"/settings?saved={key}#{key}", status_code=303)

    # -- sources and memories ------------------------------------------------------------

    def sources(self, request: Request) -> Response:
        q = request.query_params
        args = {k: q.get(k, "") for k in ("project", "lang", "layer", "workspace")}
        limit = q.get("limit", "50")
        form = (
            '<form method="get" action="/sources" class="inline">'
            + field("project", "project", args["project"], extra=' size="12"')
            + field("lang", "lang", args["lang"], extra=' size="8"')
            + select("layer", "layer", ["", "docs", "source", "test", "config"], args["layer"])
            + field("limit", "limit", limit, kind="number", extra=' min="1" max="200"')
            + field("workspace", "workspace", args["workspace"], extra=' size="10"')
            + "<button>Filter</button></form>"
        )
        try:
            found, total = rows.source_rows(
                self.reads,
                args["project"],
                args["lang"],
                args["layer"],
                _int(limit, "limit"),
                args["workspace"],
            )
        except ImprintError as exc:
            return self.page(
                "Sources", form + f'<p class="error">{e(exc)}</p>', "/sources", status=400
            )
        ws = args["workspace"]
        body_rows = [
            [
                e(r["project"] or "-"),
                link(
                    "/source",
                    r["source"],
                    source=r["source"],
                    project=r["project"],
                    workspace=ws,
                )
                if r["source"]
                # Stored memories have no source: each is opened by its id (from Search).
                else "(memories, no source)",
                e(r["chunks"]),
                e(r["source_type"]),
                e(r["lang"] or "-"),
                e(r["layer"] or "-"),
                e(stamp(r["mtime"])),
            ]
            for r in found
        ]
        body = (
            form
            + f"<p>{total} sources match; {len(found)} shown</p>"
            + table(
                ["project", "source", "chunks", "type", "lang", "layer", "modified"],
                body_rows,
                cls="sources",
            )
            + self._facts(ws)
        )
        return self.page("Sources", body, "/sources")

    def _facts(self, ws: str) -> str:
        """The newest facts (kg_query's rows), ended ones included and marked."""
        try:
            facts = rows.fact_rows(self.reads, include_ended=True, limit=50, workspace=ws)
        except ImprintError as exc:
            return f'<h2>facts</h2><p class="error">{e(exc)}</p>'
        if not facts:
            return "<h2>facts</h2><p>none</p>"
        return "<h2>facts <small>(newest 50)</small></h2>" + table(
            ["subject", "predicate", "object", "since", "ended", "source", "id"],
            [
                [
                    e(f.subject),
                    e(f.predicate),
                    e(f.object),
                    e(stamp(f.valid_from)),
                    e(stamp(f.ended) if f.ended else "-"),
                    e(f.source or "-"),
                    f"<code>{e(f.id)}</code>",
                ]
                for f in facts
            ],
            cls="facts",
        )

    def source(self, request: Request) -> Response:
        q = request.query_params
        source, project, ws = q.get("source", ""), q.get("project", ""), q.get("workspace", "")
        try:
            start = _int(q.get("start", "0"), "start")
            summary = rows.summary_row(self.reads, source, project, ws)
            chunks = rows.chunk_rows(self.reads, source, start, start + 9, project, ws)
        except ImprintError as exc:
            return self.error("Source", str(exc), "/sources", 404)
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
        chunk_html = "".join(
            f'<article class="chunk"><h3>#{r.chunk_index} '
            + link(f"/memory/{r.id}", r.id, workspace=ws)
            + f"</h3><pre>{e(r.content)}</pre></article>"
            for r in chunks.records
        )
        pager = []
        if start > 0:
            pager.append(
                link(
                    "/source",
                    "previous",
                    source=source,
                    project=project,
                    workspace=ws,
                    start=max(0, start - 10),
                )
            )
        if chunks.end < chunks.total - 1:
            pager.append(
                link(
                    "/source",
                    "next",
                    source=source,
                    project=project,
                    workspace=ws,
                    start=chunks.end + 1,
                )
            )
        body = (
            table(["", ""], [[e(k), e(v)] for k, v in info], cls="kv")
            + f"<h2>chunks {chunks.start}-{min(chunks.end, chunks.total - 1)} of "
            f"{chunks.total}</h2>"
            + chunk_html
            + f'<p class="pager">{" · ".join(pager)}</p>'
            + '<p class="danger">'
            + link(
                "/delete",
                "Delete this source…",
                source=source,
                project=summary.project,
                workspace=ws,
            )
            + "</p>"
        )
        return self.page(f"Source {shown(source)}", body, "/sources")

    def memory(self, request: Request) -> Response:
        rid = request.path_params["rid"]
        ws = request.query_params.get("workspace", "")
        try:
            row = rows.memory_row(self.reads, rid, ws, self.app.cwd)
        except ImprintError as exc:
            return self.error("Record", str(exc), "/sources", 404)
        r = row.record
        info = [
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
        links = []
        source_link = ""
        if r.source:
            source_link = link(
                "/source", "open its source", source=r.source, project=r.project, workspace=ws
            )
        if r.source_type == "memory" or r.chunk_count <= 1:
            links.append(link("/delete", "Delete this record…", id=r.id, workspace=ws))
        else:
            links.append(
                link(
                    "/delete",
                    "Delete its whole source…",
                    source=r.source,
                    project=r.project,
                    workspace=ws,
                )
            )
        body = (
            table(["", ""], [[e(k), e(v)] for k, v in info], cls="kv")
            + f'<pre class="record">{e(r.content)}</pre>'
            + (f"<p>{source_link}</p>" if source_link else "")
            + f'<p class="danger">{" · ".join(links)}</p>'
        )
        return self.page(f"Record {r.id}", body, "/sources")

    def delete_confirm(self, request: Request) -> Response:
        q = request.query_params
        rid, source = q.get("id", ""), q.get("source", "")
        project, ws = q.get("project", ""), q.get("workspace", "")
        if bool(rid) == bool(source):
            return self.error("Delete", "id, source: give exactly one", "/sources")
        what = (
            f"record {rid}" if rid else f"source {shown(source)} ({project or '-'}) and its chunks"
        )
        hidden = "".join(
            f'<input type="hidden" name="{k}" value="{e(v)}">'
            for k, v in (("id", rid), ("source", source), ("project", project), ("workspace", ws))
        )
        body = (
            f"<p>Permanently delete {e(what)}? This cannot be undone.</p>"
            '<form method="post" action="/delete" class="inline" id="delete-form">'
            + self.csrf_input()
            + hidden
            + '<button class="danger">Delete</button> '
            + link("/sources", "cancel")
            + "</form>"
        )
        return self.page("Delete?", body, "/sources")

    async def delete(self, request: Request) -> Response:
        values = await self.form(request)
        if values is None:
            return self.refused()
        try:
            text = await anyio.to_thread.run_sync(
                lambda: rows.delete_records(
                    self.app,
                    values.get("id", ""),
                    values.get("source", ""),
                    values.get("project", ""),
                    values.get("workspace", ""),
                )
            )
        except ImprintError as exc:
            return self.error("Delete", str(exc), "/sources")
        log.info("dashboard.deleted", what=text)
        return self.page(
            "Deleted",
            f'<p class="saved">{e(text)}</p>' + link("/sources", "back to sources"),
            "/sources",
        )


def _int(value: str, name: str) -> int:
    try:
        return int(str(value).strip())
    except ValueError:
        raise ImprintError(f"{name}: {value!r} is not a whole number") from None


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return str(value)


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h} h {m} min" if h else (f"{m} min {s} s" if m else f"{s} s")


async def _not_found(request: Request, exc: Exception) -> Response:
    return HTMLResponse("<!doctype html><title>404</title><p>404: no such page</p>", 404)


async def _server_error(request: Request, exc: Exception) -> Response:
    # The message stays in the owner's log (without request data); the page says nothing more.
    log.error("dashboard.error", path=request.url.path, error=type(exc).__name__)
    return HTMLResponse(
        "<!doctype html><title>500</title><p>500: the page failed; see the owner's log</p>", 500
    )


def build_app(
    runtime: Runtime, guard: Guard, owner: Owner | None = None, cwd: Path | None = None
) -> Starlette:
    """The dashboard as an ASGI app over one started runtime."""
    pages = Pages(runtime, guard, owner or Owner(kind="in-process"), cwd)
    routes = [
        Route("/", pages.overview),
        Route("/search", pages.search),
        Route("/recall", pages.recall_form, methods=["GET"]),
        Route("/recall", pages.recall_run, methods=["POST"]),
        Route("/recall/validate", pages.recall_validate, methods=["POST"]),
        Route("/traces", pages.traces),
        Route("/traces/{rid}", pages.trace),
        Route("/settings", pages.settings, methods=["GET"]),
        Route("/settings", pages.settings_save, methods=["POST"]),
        Route("/sources", pages.sources),
        Route("/source", pages.source),
        Route("/memory/{rid}", pages.memory),
        Route("/delete", pages.delete_confirm, methods=["GET"]),
        Route("/delete", pages.delete, methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    return Starlette(
        routes=routes,
        middleware=[Middleware(GuardMiddleware, guard=guard)],
        exception_handlers={404: _not_found, 500: _server_error, Exception: _server_error},
    )
