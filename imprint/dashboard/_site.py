"""What every page shares: the runtime it reads, the guard's CSRF token, the owner, and
one way to answer with a page, an error or a refusal."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field as dc_field
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from imprint.actors.lifecycle import Runtime
from imprint.dashboard import _rows as rows
from imprint.dashboard._security import CSRF_FIELD, Guard
from imprint.dashboard._templates import TEMPLATES
from imprint.errors import ImprintError
from imprint.workspaces import active_workspace

__all__ = ["Owner", "Site", "whole_number"]


@dataclass
class Owner:
    """The process that owns the data dir and serves this dashboard."""

    kind: str  # daemon, serve --http, or in-process
    pid: int = dc_field(default_factory=os.getpid)
    started_at: float = dc_field(default_factory=time.time)
    clients: Callable[[], int] = lambda: 0


class Site:
    def __init__(self, runtime: Runtime, guard: Guard, owner: Owner, cwd: Path | None) -> None:
        self.runtime = runtime
        self.guard = guard
        self.owner = owner
        self.app = rows.Writes(runtime, cwd)
        self.reads = self.app.reads

    def page(
        self,
        request: Request,
        template: str,
        title: str,
        active: str,
        *,
        status: int = 200,
        **context: Any,
    ) -> Response:
        context.update(
            title=title,
            active=active,
            csrf=self.guard.csrf,
            workspace=active_workspace(self.runtime.data_dir),
        )
        return TEMPLATES.TemplateResponse(request, template, context, status_code=status)

    def error(
        self, request: Request, title: str, message: str, active: str, status: int = 400
    ) -> Response:
        return self.page(request, "error.html", title, active, status=status, message=message)

    async def form(self, request: Request) -> dict[str, str] | None:
        """The posted form, or None when its CSRF token is not this process's."""
        data = await request.form()
        values = {k: str(v) for k, v in data.items() if isinstance(v, str)}
        if not self.guard.csrf_ok(values.get(CSRF_FIELD)):
            return None
        return values

    def refused(self, request: Request) -> Response:
        return self.error(
            request, "Refused", "403: the form's CSRF token is missing or stale", "", 403
        )


def whole_number(value: str, name: str) -> int:
    try:
        return int(str(value).strip())
    except ValueError:
        raise ImprintError(f"{name}: {value!r} is not a whole number") from None
