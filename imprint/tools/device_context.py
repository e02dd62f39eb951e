"""device_context: this computer, the data dir, the embedder and the inference provider."""

from __future__ import annotations

import os
import platform
import shutil
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer

from imprint.providers import is_local
from imprint.providers.local import bundled_gguf
from imprint.tools._app import READ, App, run_tool, tool
from imprint.workspaces import active_workspace, list_workspaces

__all__ = ["device_row", "format_device", "register"]


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


def device_row(app: App) -> dict[str, Any]:
    rt = app.runtime
    tagger = rt.config.tagger
    local = is_local(tagger.provider, tagger.base_url)
    model_path = tagger.local.model_path
    if tagger.provider == "local" and not model_path:
        model_path = str(bundled_gguf() or "")
    state = rt.inference_state()
    return {
        "os": f"{platform.system()} {platform.release()} ({platform.machine()})",
        "python": platform.python_version(),
        "cores": os.cpu_count() or 0,
        "memory_gib": round(_memory_bytes() / 2**30, 1),
        "gpu": _gpu(),
        "data_dir": str(rt.data_dir),
        "workspaces": ", ".join(list_workspaces(rt.data_dir)) or "(none yet)",
        "active_workspace": active_workspace(rt.data_dir),
        "store": rt.config.store.chroma_url or "embedded Chroma",
        "embedder": f"all-MiniLM-L6-v2 int8 ONNX, {rt.config.embedding.threads} threads",
        "inference_provider": tagger.provider,
        "inference_local": local,
        "recall_model_path": "on" if (rt.config.recall.llm and local) else "off",
        "model_file": model_path or "(none set)",
        "model_file_exists": bool(model_path) and Path(model_path).expanduser().is_file(),
        "model_loaded": state["loaded"],
        "model_load_seconds": state["load_seconds"],
        "working_directory": str(app.cwd),
    }


def format_device(row: dict[str, Any]) -> str:
    return "\n".join(f"{k}: {v}" for k, v in row.items())


def register(server: MCPServer, app: App) -> None:
    @tool(server, "device_context", READ)
    async def device_context() -> str:
        """This computer and server: OS, cores, memory, GPU, data dir, workspaces, store,
        embedder, inference provider and whether it is local (so recall can use a model),
        model file and state."""
        return format_device(await run_tool(device_row, app))
