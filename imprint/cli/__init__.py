"""The `imprint` command line. Results go to stdout; logs and progress go to stderr.

One module per group of commands: `reads` (search, status, recall, trace), `writes`
(ingest, repair), `watch` (watched folders), `processes` (serve, stop, dashboard,
daemon), `settings` (workspace and config), `hooks` (hook, hooks install/uninstall/status),
`capture` (capture --backfill), `archive` (export, import, backup, restore), `sync`
(sync DIR) and `team` (the team store on PostgreSQL); `_app` holds the typer apps and `main`,
`_daemon` the way a command asks a running daemon. The commands are registered here, in the
order `imprint --help` lists them.
"""

from __future__ import annotations

from imprint.cli import (
    archive,
    capture,
    hooks,
    processes,
    reads,
    settings,
    sync,
    team,
    watch,
    writes,
)
from imprint.cli._app import (
    app,
    config_app,
    hooks_app,
    main,
    memory_app,
    team_app,
    version_text,
    workspace_app,
)

__all__ = ["app", "main", "version_text"]

for command in (
    writes.ingest,
    watch.watch,
    reads.search,
    reads.status,
    writes.repair,
    reads.recall,
    processes.serve,
    processes.stop,
    reads.trace,
    processes.dashboard,
    hooks.hook,
    capture.capture,
    archive.export,
):
    app.command()(command)
app.command("import")(archive.import_)
app.command()(archive.backup)
app.command()(archive.restore)
app.command()(sync.sync)
app.command(hidden=True)(processes.daemon)
memory_app.command("restore")(writes.memory_restore)
workspace_app.command("list")(settings.workspace_list)
workspace_app.command("create")(settings.workspace_create)
workspace_app.command("switch")(settings.workspace_switch)
config_app.command("list")(settings.config_list)
config_app.command("get")(settings.config_get)
config_app.command("set")(settings.config_set)
hooks_app.command("install")(hooks.hooks_install)
hooks_app.command("uninstall")(hooks.hooks_uninstall)
hooks_app.command("status")(hooks.hooks_status)
team_app.command("init")(team.team_init)
team_app.command("local")(team.team_local)
team_app.command("audit")(team.team_audit)
