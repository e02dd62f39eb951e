"""Watched folders: a folder registered with the daemon stays indexed as it changes.

`folders` (the persisted list, checked on the way in), `watcher` (one folder: file events
from `watchfiles`, debounced into batches, each batch one ingest of what changed) and `host`
(the daemon's set of watchers, its answers to `imprint watch`, the rows `status` and the
dashboard show).
"""

from imprint.watch.folders import WatchedFolder, load_folders, save_folders, watch_file
from imprint.watch.host import WatchHost, format_watch, watch_rows
from imprint.watch.watcher import FolderWatcher, WatchRow

__all__ = [
    "FolderWatcher",
    "WatchHost",
    "WatchRow",
    "WatchedFolder",
    "format_watch",
    "load_folders",
    "save_folders",
    "watch_file",
    "watch_rows",
]
