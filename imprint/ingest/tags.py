"""Deterministic tags from a path and its text: language, layer, kind, type, topics."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import PurePosixPath

__all__ = ["LANGS", "file_kind", "lang_of", "layer_of", "rule_tags", "supported"]

LANGS: dict[str, str] = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdx": "markdown",
    ".rst": "rst",
    ".txt": "text",
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".kt": "kotlin",
    ".swift": "swift",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".hpp": "cpp",
    ".cs": "csharp",
    ".rb": "ruby",
    ".php": "php",
    ".sh": "shell",
    ".bash": "shell",
    ".sql": "sql",
    ".toml": "toml",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".json": "json",
    ".ini": "ini",
    ".cfg": "ini",
    ".html": "html",
    ".css": "css",
    ".scala": "scala",
    ".lua": "lua",
}
_NAMES = {"dockerfile": "docker", "makefile": "make"}
_PROSE = {"markdown", "rst", "text"}
_CONFIG = {"toml", "yaml", "json", "ini"}
_STOP = frozenset(
    (  # noqa: SIM905
        "the a an and or of to in is are be for on with as by this that it its from at "
        "not can you your we our use used using if when then will was were has have "
        "which all any may also more see one two these those how what into than other "
        "each but only same such should must do does out up so no yes new set get"
    ).split()
)


def _name_and_suffix(path: str) -> tuple[str, str]:
    """A path's last part and its suffix as PurePosixPath gives them (".bashrc" and "a."
    have none), by string operations: a rescan asks this of every file listed."""
    name = path.rstrip("/").rsplit("/", 1)[-1]
    dot = name.rfind(".")
    return name, ("" if dot <= 0 or dot == len(name) - 1 else name[dot:])


def lang_of(path: str) -> str:
    """The language a path's suffix names; files without a suffix (LICENSE-MIT) are text."""
    name, suffix = _name_and_suffix(path)
    if not suffix:
        return _NAMES.get(name.lower(), "text")
    return LANGS.get(suffix.lower(), "")


def supported(path: str) -> bool:
    """Dotfiles (.gitignore, .env) are configuration of tools, never memory."""
    return not _name_and_suffix(path)[0].startswith(".") and bool(lang_of(path))


def file_kind(lang: str) -> str:
    """How to chunk: markdown, rst, code or text."""
    if lang in ("markdown", "rst"):
        return lang
    if lang == "text" or lang in _CONFIG:
        return "text"
    return "code"


def layer_of(path: str, lang: str) -> str:
    parts = [p.lower() for p in PurePosixPath(path).parts]
    name = parts[-1] if parts else ""
    if any(p in ("test", "tests", "spec", "__tests__") for p in parts) or name.startswith("test_"):
        return "test"
    if lang in _PROSE or any(p in ("doc", "docs", "documentation") for p in parts):
        return "docs"
    if lang in _CONFIG or name in ("dockerfile", "makefile"):
        return "config"
    return "source"


def _record_type(text: str) -> str:
    lowered = text.lower()
    if re.search(r"\b(we decided|decision:|adr\b|status: accepted)", lowered):
        return "decision"
    if re.search(r"\b(architecture|actor model|component diagram)\b", lowered):
        return "architecture"
    return "note"


def _topics(text: str, limit: int = 5) -> tuple[str, ...]:
    words = re.findall(r"[a-zA-Z][a-zA-Z_]{3,}", text.lower())
    counts = Counter(w for w in words if w not in _STOP)
    return tuple(w for w, _ in counts.most_common(limit))


def rule_tags(path: str, text: str) -> dict[str, object]:
    lang = lang_of(path)
    kind = "doc" if lang in _PROSE else ("config" if lang in _CONFIG else "code")
    return {
        "lang": lang,
        "layer": layer_of(path, lang),
        "kind": kind,
        "type": _record_type(text),
        "topics": _topics(text),
        "domains": (),
    }
