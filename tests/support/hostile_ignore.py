"""Helpers shared by tests (moved unchanged from the test module of the same name)."""

from __future__ import annotations

from pathlib import Path

HOSTILE_RULE = "*a*a*a*a*a*a*a*a*a*a*a*a*b"


def _hostile_folder(root: Path, name_chars: int) -> Path:
    folder = root / "hostile"
    folder.mkdir()
    (folder / ".gitignore").write_text(HOSTILE_RULE + "\n")
    (folder / ("a" * name_chars + ".md")).write_text("# long\n\nthe dunlin probes the sand\n")
    (folder / "kept.md").write_text("# kept\n\nthe knot gathers in flocks\n")
    (folder / ("gone-" + "a" * 12 + "b")).write_text("ignored: twelve a's, then a b\n")
    return folder
