"""Page layout and small HTML helpers; every value is escaped where it is put in."""

from __future__ import annotations

import time
from collections.abc import Iterable
from html import escape
from typing import Any
from urllib.parse import urlencode

from imprint._shown import shown

__all__ = ["NAV", "ago", "e", "field", "layout", "link", "select", "stamp", "table"]

NAV = (
    ("/", "Overview"),
    ("/search", "Search"),
    ("/recall", "Recall"),
    ("/traces", "Traces"),
    ("/settings", "Settings"),
    ("/sources", "Sources"),
)


def e(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def link(path: str, text: Any, **params: Any) -> str:
    """A link whose text shows bidi, zero-width and control characters as escapes (it is
    often a file name); the parameters keep the real value."""
    query = urlencode({k: v for k, v in params.items() if v not in ("", None)})
    href = path + (f"?{query}" if query else "")
    return f'<a href="{e(href)}">{e(shown(text))}</a>'


def stamp(epoch: float | None) -> str:
    if not epoch:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(epoch))


def ago(epoch: float | None, now: float | None = None) -> str:
    if not epoch:
        return "never"
    seconds = max(0.0, (now or time.time()) - epoch)
    for size, unit in ((86400, "d"), (3600, "h"), (60, "min")):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit} ago"
    return f"{seconds:.0f} s ago"


def field(name: str, label: str, value: Any = "", *, kind: str = "text", extra: str = "") -> str:
    return (
        f'<label>{e(label)} <input type="{kind}" name="{e(name)}" value="{e(value)}"{extra}>'
        "</label>"
    )


def select(name: str, label: str, options: Iterable[str], chosen: str) -> str:
    opts = "".join(
        f'<option value="{e(o)}"{" selected" if o == chosen else ""}>{e(o or "any")}</option>'
        for o in options
    )
    return f'<label>{e(label)} <select name="{e(name)}">{opts}</select></label>'


def table(head: Iterable[str], rows: Iterable[Iterable[str]], *, cls: str = "") -> str:
    """Cells are HTML already (escape them with e() where they are built)."""
    heads = list(head)
    ths = "".join(f"<th>{h}</th>" for h in heads)
    thead = f"<thead><tr>{ths}</tr></thead>" if any(heads) else ""
    trs = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    klass = f' class="{e(cls)}"' if cls else ""
    return f"<table{klass}>{thead}<tbody>{trs}</tbody></table>"


def layout(title: str, body: str, *, active: str, csrf: str, workspace: str = "") -> str:
    current = ' class="active"'
    nav = "".join(
        f'<a href="{path}"{current if path == active else ""}>{e(name)}</a>' for path, name in NAV
    )
    ws = f'<span class="ws">workspace: {e(workspace)}</span>' if workspace else ""
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f"<title>Imprint · {e(title)}</title>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="csrf-token" content="{e(csrf)}">'
        '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">'
        '<link rel="stylesheet" href="/static/style.css">'
        '<script src="/static/app.js" defer></script>'
        "</head><body>"
        f'<header><span class="brand">Imprint</span><nav>{nav}</nav>{ws}</header>'
        f"<main><h1>{e(title)}</h1>{body}</main>"
        "</body></html>"
    )
