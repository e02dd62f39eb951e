"""Every write once, below the tools: store and delete memories, add and end facts, index
text, files and pages, check and repair a workspace. All of it goes through `Writes`.

Like `imprint.reads`, the package exports its gateway; the write functions are imported from
their modules (`imprint.writes.memories`, `.facts`, `.content`, `.repair`).
"""

from imprint.writes.gateway import WRITE_TIMEOUT_SEC, Writes

__all__ = ["WRITE_TIMEOUT_SEC", "Writes"]
