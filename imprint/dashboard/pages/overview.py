"""Overview: the owner, the inference device, each workspace's counts and the background
work its store needs (re-index, re-embedding) with its progress, the last backup, running
ingests, and per client its last capture and hook failures."""

from __future__ import annotations

import time
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from imprint.dashboard import _rows as rows
from imprint.dashboard._site import Site
from imprint.dashboard._templates import duration
from imprint.errors import ImprintError
from imprint.reads.hook_report import client_hooks
from imprint.reads.status import upkeep
from imprint.workspaces import active_workspace, list_workspaces
from imprint.writes.backup import last_backup

__all__ = ["routes"]

STALE_SEC = 7 * 86400


def routes(site: Site) -> list[Route]:
    def overview(request: Request) -> Response:
        rt = site.runtime
        now = time.time()
        owner = site.owner
        device = rows.device_row(rt, cwd=site.app.cwd)
        cards = [
            ("owner", f"{owner.kind} (pid {owner.pid})"),
            ("uptime", duration(now - owner.started_at)),
            ("connected clients", owner.clients()),
            ("data dir", rt.data_dir),
            ("inference provider", device["inference_provider"]),
            ("runs on this computer", "yes" if device["inference_local"] else "no"),
            ("recall model path", device["recall_model_path"]),
            ("model", device.get("model_file") or device.get("model") or "-"),
            ("model loaded", "yes" if device["model_loaded"] else "no"),
            ("model busy", device.get("model_busy", "no")),
        ]
        workspaces: list[dict[str, Any]] = []
        for ws in list_workspaces(rt.data_dir):
            try:
                st = rows.status_row(site.reads, ws)
            except ImprintError as exc:
                workspaces.append({"name": ws, "error": exc})
                continue
            workspaces.append({"name": ws, "error": None, "status": st, "upkeep": upkeep(st)})
        return site.page(
            request,
            "overview.html",
            "Overview",
            "/",
            cards=cards,
            workspaces=workspaces,
            active_ws=active_workspace(rt.data_dir),
            ingests=rows.running_ingests(rt.data_dir),
            watched=rows.watch_rows(rt.data_dir),
            hooks=client_hooks(rt.data_dir),
            backup=last_backup(rt.data_dir),
            backup_config=rt.config.backup,
            now=now,
            stale_sec=STALE_SEC,
        )

    return [Route("/", overview)]
