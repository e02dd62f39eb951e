"""How a client's hook starts: `<python> -I -S <this file> EVENT --client NAME`.

What `imprint hooks install` writes into a client's hooks (`hook_command`). `-I` keeps the
user's PYTHON* settings and their own site-packages out; `-S` skips `site` (30-50 ms of
.pth files before the first line: an editable install's finder among them). The folder
holding the `imprint` package goes first on the path, so `imprint.hooks.entry` imports
from this very installation; a path that needs a third-party package adds the
site-packages then (`imprint.hooks._paths`). The console script `imprint hook EVENT` runs
the same entry, through `site`.
"""

from __future__ import annotations

import os
import sys

__all__ = ["main"]


def main() -> None:
    from imprint.hooks.entry import hook_main

    hook_main(sys.argv[1:])


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    main()
