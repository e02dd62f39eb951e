"""The dashboard's Jinja2 templates, autoescaped, served through Starlette's template support.

Two choices keep the pages the bytes they were before the templates: a `{{ }}` value is
escaped the way `html.escape` spells it (`&#x27;`, `&quot;`; markupsafe writes `&#39;`,
`&#34;`), and a line break in a template with the indentation after it is layout, not output
(a space that must begin a line is written `{{ " " }}`).
"""

from __future__ import annotations

import re
import time
from typing import Any
from urllib.parse import urlencode

from jinja2 import ChoiceLoader, Environment, PackageLoader, StrictUndefined
from jinja2.ext import Extension
from starlette.templating import Jinja2Templates

from imprint._shown import shown
from imprint.dashboard._security import CSRF_FIELD
from imprint.trace.waterfall import escaped

__all__ = ["NAV", "TEMPLATES", "ago", "duration", "href", "stamp"]

NAV = (
    ("/", "Overview"),
    ("/memory", "Memory"),
    ("/search", "Search"),
    ("/recall", "Recall"),
    ("/traces", "Traces"),
    ("/settings", "Settings"),
    ("/sources", "Sources"),
)
_LAYOUT = re.compile(r"\n[ \t]*")


class _JoinLines(Extension):
    """Templates are indented for people; the pages come out on one line."""

    def preprocess(self, source: str, name: str | None, filename: str | None = None) -> str:
        return _LAYOUT.sub("", source)


def href(path: str, params: dict[str, Any]) -> str:
    """`path` with the parameters that are set (a link's text may be escaped for showing;
    its parameters keep the real value)."""
    query = urlencode({k: v for k, v in params.items() if v not in ("", None)})
    return path + (f"?{query}" if query else "")


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


def duration(seconds: float) -> str:
    seconds = int(seconds)
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h} h {m} min" if h else (f"{m} min {s} s" if m else f"{s} s")


def _environment() -> Environment:
    env = Environment(
        # The trace package's templates too: a page draws a recall's waterfall from the same
        # `waterfall.svg` that `imprint trace --svg` writes.
        loader=ChoiceLoader(
            [
                PackageLoader("imprint.dashboard", "templates"),
                PackageLoader("imprint.trace", "templates"),
            ]
        ),
        autoescape=True,
        finalize=escaped,
        undefined=StrictUndefined,
        extensions=[_JoinLines],
    )
    env.filters.update(shown=shown, stamp=stamp, ago=ago, duration=duration)
    env.globals.update(href=href, nav=NAV, csrf_field=CSRF_FIELD)
    return env


TEMPLATES = Jinja2Templates(env=_environment())
