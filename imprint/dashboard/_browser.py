"""Open the browser on the dashboard without putting its one-time token on a command line.

A browser started with the URL shows it in `/proc/<pid>/cmdline`, which every local user
can read, and whoever redeems the token first gets the session. So, as Jupyter does, the
browser gets a local file instead: 0600, in a 0700 folder under the data dir's run folder,
redirecting to the URL. Only the owner can read it; it is removed when `imprint dashboard`
exits, and one a crashed run left behind is removed at the next `--open` (its token has
expired by then).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
import webbrowser
from html import escape
from pathlib import Path

from imprint._fs import private_dir
from imprint.dashboard._security import TOKEN_TTL_SEC

__all__ = ["browser_dir", "open_browser_at", "redirect_file"]

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="refresh" content="0;url={url}">
<title>Imprint dashboard</title>
</head>
<body><p><a href="{url}">Open the Imprint dashboard</a></p></body>
</html>
"""


def browser_dir(data_dir: Path) -> Path:
    return private_dir(data_dir / "run" / "browser")


def redirect_file(data_dir: Path, url: str, *, now: float | None = None) -> Path:
    """A new 0600 page that sends the browser on to `url`; stale ones are removed first."""
    folder = browser_dir(data_dir)
    now = time.time() if now is None else now
    for old in folder.glob("open-*.html"):
        with contextlib.suppress(OSError):
            if now - old.stat().st_mtime > TOKEN_TTL_SEC:
                old.unlink()
    fd, name = tempfile.mkstemp(prefix="open-", suffix=".html", dir=folder)  # 0600
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(PAGE.format(url=escape(url, quote=True)))
    return Path(name)


def open_browser_at(data_dir: Path, url: str) -> Path:
    """Open the web browser on a redirect file for `url`; the caller removes the file."""
    page = redirect_file(data_dir, url)
    webbrowser.open(page.as_uri())
    return page
