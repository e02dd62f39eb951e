"""Helpers shared by tests (moved unchanged from the test module of the same name)."""

from __future__ import annotations

from tests.support.daemon import StartDaemon, private_env, serve, shared_tmp  # noqa: F401

_HEAVY = ("typer", "click", "rich", "chromadb", "pykka", "mcp", "pydantic", "structlog", "numpy")


_RECORD_MODULES = """
import atexit, sys
out = sys.argv[1]
def _dump():
    with open(out, "w") as f:
        f.write("\\n".join(sorted(sys.modules)))
atexit.register(_dump)
sys.argv = ["imprint", *sys.argv[2:]]
from imprint.launch import main
main()
"""
