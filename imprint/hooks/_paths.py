"""The third-party packages, for a hook process started without them.

`imprint hooks install` writes hooks that start Python with `-I -S` (`imprint.hooks.launcher`):
no `site`, so none of the 30-50 ms of .pth files, editable-install finders and
site-packages set-up before the hook's first line. The capture hand-off needs only the
standard library; a path that needs more (the daemon's start lock, the store's records)
adds the site-packages first, here. The standard library only.
"""

from __future__ import annotations

import sys

__all__ = ["with_site_packages"]

_added = False


def with_site_packages() -> None:
    """Add the interpreter's site-packages (and run their .pth files) when this process
    started without them (`python -S`); nothing otherwise. Idempotent."""
    global _added
    if _added or not sys.flags.no_site:
        return
    import site

    site.main()
    _added = True
