"""The device row: this computer, the data dir, the embedder and the inference provider."""

from __future__ import annotations

import os
import platform
import shutil
import time
from pathlib import Path
from typing import Any

from imprint.actors.lifecycle import Runtime
from imprint.config import TaggerConfig, secret_state
from imprint.providers import effective_base_url, is_local
from imprint.providers.local import bundled_gguf
from imprint.workspaces import active_workspace, list_workspaces

__all__ = ["device_row"]


def _memory_bytes() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def _gpu() -> str:
    if shutil.which("nvidia-smi") or Path("/proc/driver/nvidia").exists():
        return "NVIDIA (driver present)"
    if platform.system() == "Darwin" and platform.machine() == "arm64":
        return "Apple silicon (Metal)"
    return "none found"


def _busy(state: dict[str, Any]) -> str:
    since = state.get("busy_since")
    if since is None:
        return "no"
    at = time.strftime("%H:%M:%S", time.gmtime(since))
    return (
        f"yes: {state.get('busy_with') or 'a request'} since {at} UTC ({time.time() - since:.1f} s)"
    )


def _model(tagger: TaggerConfig) -> dict[str, Any]:
    """What the provider runs: a file on this computer for `local`, else a model name at a URL."""
    if tagger.provider == "none":
        return {"model": "(no provider)"}
    if tagger.provider == "local":
        path = tagger.local.model_path or str(bundled_gguf() or "")
        return {
            "model_file": path or "(none set)",
            "model_file_exists": bool(path) and Path(path).expanduser().is_file(),
        }
    return {
        "model": tagger.model or "(none set: tagger.model)",
        "base_url": effective_base_url(tagger.provider, tagger.base_url) or "(none set)",
    }


def device_row(runtime: Runtime, workspace: str = "", cwd: Path | None = None) -> dict[str, Any]:
    """This computer, the data dir, the embedder and the inference provider; `cwd`: the
    session's working directory (default: the process's)."""
    ws = runtime.resolve(workspace)  # an unknown workspace is the usual one-line error
    tagger = runtime.config.tagger
    local = is_local(tagger.provider, tagger.base_url)
    state = runtime.inference_state()  # never waits on the model, even mid-prompt
    embedder = runtime.embedder().describe()
    return {
        "os": f"{platform.system()} {platform.release()} ({platform.machine()})",
        "python": platform.python_version(),
        "cores": os.cpu_count() or 0,
        "memory_gib": round(_memory_bytes() / 2**30, 1),
        "gpu": _gpu(),
        "data_dir": str(runtime.data_dir),
        "workspaces": ", ".join(list_workspaces(runtime.data_dir)) or "(none yet)",
        "active_workspace": active_workspace(runtime.data_dir),
        "workspace": ws,
        "store": runtime.config.store.chroma_url or "embedded Chroma",
        "embedder": f"{embedder['name']}, {runtime.config.embedding.threads} threads",
        "embedder_file": embedder["file"],
        "embedder_precision": embedder["precision"],
        "embedder_dimension": embedder["dimension"],
        "inference_provider": tagger.provider,
        "inference_api_key": secret_state(runtime.config, "tagger.api_key"),
        "inference_local": local,
        "recall_model_path": "on" if (runtime.config.recall.llm and local) else "off",
        **_model(tagger),
        "model_loaded": state["loaded"],
        "model_load_seconds": state["load_seconds"],
        "model_busy": _busy(state),
        "working_directory": str((cwd or Path(os.getcwd())).resolve()),
    }
