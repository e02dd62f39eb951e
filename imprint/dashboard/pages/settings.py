"""Settings: every key with its value, where it comes from, what is allowed and whether a
change needs a restart; a key that is not a secret and not set by the environment is
edited in place and lands in config.toml."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from imprint import config as cfg
from imprint.config import LIVE_KEYS
from imprint.dashboard._site import Site
from imprint.errors import ImprintError
from imprint.logs import get_logger

__all__ = ["LIVE_KEYS", "routes"]

log = get_logger("imprint.dashboard")
SECRET_SUFFIXES = ("api_key",)


@dataclass(frozen=True)
class KeyRow:
    key: str
    shown: str
    where: str
    allowed: str
    restart: str
    edit: str  # "env", "secret" or "form"
    value: str = ""
    error: str = ""


def _secret(key: str) -> bool:
    return key.endswith(SECRET_SUFFIXES)


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return str(value)


def _row(site: Site, saved: cfg.Config, key: str, error_key: str, error: str) -> KeyRow:
    root = site.runtime.data_dir
    origin = cfg.key_origin(root, key)
    value = cfg.get_value(saved, key)
    now = cfg.get_value(site.runtime.config, key)
    secret = _secret(key)
    live = key in LIVE_KEYS
    restart = "no (applies at once)" if live else "yes"
    if not secret and value != now:
        restart = "yes: saved, not yet in use" if not live else restart
    edit = "env" if origin == "env" else ("secret" if secret else "form")
    return KeyRow(
        key=key,
        shown=("set" if value else "not set") if secret else _show(value),
        where=f"env {cfg.env_name(key)}" if origin == "env" else origin,
        allowed=cfg.describe_allowed(key),
        restart=restart,
        edit=edit,
        value=_show(value) if edit == "form" else "",
        error=error if edit == "form" and key == error_key else "",
    )


def routes(site: Site) -> list[Route]:
    def page(
        request: Request, message: str = "", error_key: str = "", error: str = "", status: int = 200
    ) -> Response:
        root = site.runtime.data_dir
        context: dict[str, Any] = {"message": message, "error": error}
        try:
            saved = cfg.load_config(root)
        except ImprintError as exc:
            context.update(load_error=exc, message="", error="")
        else:
            groups: dict[str, list[KeyRow]] = {}
            for key in cfg.all_keys():
                row = _row(site, saved, key, error_key, error)
                groups.setdefault(key.split(".")[0], []).append(row)
            context.update(load_error=None, groups=groups, path=cfg.config_path(root))
        return site.page(
            request, "settings.html", "Settings", "/settings", status=status, **context
        )

    def settings(request: Request) -> Response:
        saved = request.query_params.get("saved", "")
        return page(request, f"saved {saved}" if saved in cfg.all_keys() else "")

    async def settings_save(request: Request) -> Response:
        values = await site.form(request)
        if values is None:
            return site.refused(request)
        key, raw = values.get("key", ""), values.get("value", "")
        root = site.runtime.data_dir
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
            return page(request, error_key=key, error=message, status=400)
        if key in LIVE_KEYS:
            group, name = key.split(".")
            setattr(getattr(site.runtime.config, group), name, stored)
        log.info("dashboard.setting.saved", key=key)
        return RedirectResponse(f"/settings?saved={key}#{key}", status_code=303)

    return [
        Route("/settings", settings, methods=["GET"]),
        Route("/settings", settings_save, methods=["POST"]),
    ]
