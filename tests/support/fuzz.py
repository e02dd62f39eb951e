"""Hypothesis strategies for hostile arguments to the 17 MCP tools and recall's plans, and
the checks every answer must pass (used by tests/integration/test_fuzz.py).

Every value is JSON the MCP client can send: no lone surrogates (UTF-8 cannot carry them);
NaN and infinities do travel (pydantic writes them as null). URLs never name a host that is
not loopback, so no fuzzed call can leave this computer.
"""

from __future__ import annotations

import hashlib
import math
import sqlite3
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

__all__ = [
    "PARAMS",
    "check_answer",
    "fingerprint",
    "tool_calls",
]

# The tools' parameter names (from tools/list); a refused call's error names one of them.
PARAMS: dict[str, tuple[str, ...]] = {
    "search": (
        "query",
        "project",
        "type",
        "lang",
        "layer",
        "limit",
        "mode",
        "detail",
        "max_chars",
        "workspace",
    ),
    "get_memory": ("id", "workspace"),
    "neighbors": ("id", "k", "max_chars", "workspace"),
    "file_chunks": ("source", "start", "end", "project", "max_chars", "workspace"),
    "file_summary": ("source", "project", "workspace"),
    "list_sources": ("project", "lang", "layer", "limit", "workspace"),
    "kg_query": ("subject", "predicate", "include_ended", "limit", "workspace"),
    "graph_scope": ("scope", "depth", "workspace"),
    "status": ("workspace", "check"),
    "device_context": (),
    "store": ("content", "project", "type", "domains", "topics", "workspace"),
    "delete": ("id", "source", "project", "workspace"),
    "ingest_content": ("name", "content", "project", "workspace"),
    "ingest_url": ("url", "project", "workspace"),
    "ingest_path": ("path", "project", "workspace"),
    "kg_edit": ("action", "subject", "predicate", "object", "fact_id", "source", "workspace"),
    "recall": ("question", "plan", "max_chars", "condense", "workspace"),
}
REQUIRED: dict[str, tuple[str, ...]] = {
    "search": ("query",),
    "get_memory": ("id",),
    "neighbors": ("id",),
    "file_chunks": ("source",),
    "file_summary": ("source",),
    "store": ("content",),
    "ingest_content": ("name", "content"),
    "ingest_url": ("url",),
    "ingest_path": ("path",),
    "kg_edit": ("action",),
    "recall": ("question",),
}
STEP_TOOLS = (
    "search",
    "get_memory",
    "neighbors",
    "file_chunks",
    "file_summary",
    "list_sources",
    "kg_query",
)

# Text: every plane, control characters, combining marks, RTL marks, NUL; no surrogates.
odd_chars = st.characters(blacklist_categories=("Cs",))
odd_text = st.text(odd_chars, max_size=40)
tricky = st.sampled_from(
    [
        "",
        " ",
        "\x00",
        "\n\n\n",
        "\t\r\x0b\x0c",
        "\u202e\u200b\ufeff",
        "e\u0301" * 20,
        "🦜" * 30,
        "NULL",
        "None",
        "-1",
        "1e999",
        "NaN",
        "' OR 1=1 --",
        '"; DROP TABLE records; --',
        "title:* OR NEAR(a b)",
        '"unbalanced',
        "a AND",
        "*",
        "^",
        "${HOME}",
        "%s%s%n",
        "{{7*7}}",
        "<script>alert(1)</script>",
        "\\",
        "\udbff".encode("utf-8", "replace").decode(),
    ]
)
huge = st.sampled_from([20_000, 120_000]).flatmap(
    lambda n: st.sampled_from(["x" * n, "é" * (n // 2), ("word " * n)[:n], "\x00" * 2000])
)
plain = st.sampled_from(["heron", "pelican glides", "retry", "sqlite", "birds", "docs/notes.md"])
any_text = st.one_of(plain, plain, tricky, odd_text, huge, st.text(max_size=300))
numbers = st.one_of(
    st.sampled_from([0, -1, 1, 7, 29, 30, 31, 49, 50, 51, 200, 201, 1199, 1200, 12000, 12001]),
    st.sampled_from([2**31, -(2**31), 2**63, -(2**63) - 1, 10**30]),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
)
scalars = st.one_of(st.none(), st.booleans(), numbers, any_text)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=8,
)
# Valid names are few (a write creates its workspace, and each one costs a Chroma client).
workspaces = st.one_of(
    st.sampled_from(["", "", "", "default", "fuzz-a", "nope"]),
    st.sampled_from(["A", "../default", "default/..", "-x", "a" * 41, "fuzz_a", "ws\x00"]),
    any_text.map(lambda s: s + "/"),
)
paths = st.sampled_from(
    [
        "",
        ".",
        "./",
        "..",
        "../..",
        "/",
        "/etc/passwd",
        "/etc/shadow",
        "/proc/self/environ",
        "/dev/zero",
        "/dev/stdin",
        "~",
        "~/.ssh/id_rsa",
        "docs",
        "docs/../../..",
        "docs/notes.md",
        "docs/notes.md/..",
        "link-to-etc",
        "link-to-etc/passwd",
        "link-to-zero",
        "a-fifo",
        "missing.md",
        "\x00",
        "docs\x00/notes.md",
        "x/" * 300,
        "file:///etc/passwd",
        "$HOME",
    ]
)
# Loopback or schemes that open no connection: no fuzzed call reaches another computer.
urls = st.sampled_from(
    [
        "",
        "not a url",
        "file:///etc/passwd",
        "ftp://127.0.0.1/x",
        "javascript:alert(1)",
        "data:text/html,hi",
        "http://127.0.0.1:1/",
        "http://[::1]:1/x",
        "http://localhost:1/",
        "http://127.0.0.1:0/",
        "http://user:pass@127.0.0.1:1/",
        "http://127.0.0.1:99999/",
        "https://127.0.0.1:1/" + "a" * 5000,
        "http://127.0.0.1:1/\x00",
        "HTTP://127.0.0.1:1",
        "http:/127.0.0.1",
        "//127.0.0.1:1/",
    ]
)


def _ids(known: list[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(known),
        st.sampled_from(known),
        any_text,
        st.sampled_from(["fact:1", "file:x"]),
    )


def _good(name: str, known_ids: list[str], sources: list[str]) -> st.SearchStrategy[Any]:
    """Values that are at least the right shape for one parameter (often out of range)."""
    if name in ("limit", "k", "start", "end", "depth"):
        return st.one_of(st.integers(-1, 12), st.integers(0, 60), numbers)
    if name == "max_chars":
        return st.one_of(st.integers(1200, 12000), numbers)
    if name in ("include_ended", "condense"):
        return st.booleans()
    if name == "workspace":
        return workspaces
    if name == "id":
        return _ids(known_ids)
    if name == "source":
        return st.one_of(st.sampled_from(sources), paths, any_text)
    if name == "path":
        return paths
    if name == "url":
        return urls
    if name == "mode":
        return st.one_of(st.sampled_from(["hybrid", "semantic", "lexical", "HYBRID"]), any_text)
    if name == "detail":
        return st.one_of(st.sampled_from(["compact", "full", "Full"]), any_text)
    if name == "action":
        return st.one_of(st.sampled_from(["add", "end", "delete"]), any_text)
    if name == "type":
        return st.one_of(st.sampled_from(["note", "decision", "bug", "nope"]), any_text)
    if name in ("domains", "topics"):
        return st.one_of(st.none(), st.lists(any_text, max_size=5), any_text)
    if name == "scope":
        return st.one_of(
            st.sampled_from(["root", "project:", "topic:x", "chunk:", "source:../..", "x:y"]),
            st.builds(
                lambda p, t: p + t, st.sampled_from(["project:", "source:", "chunk:"]), any_text
            ),
        )
    if name == "fact_id":
        return st.one_of(st.sampled_from(["1", "0", "-1", "999999"]), any_text)
    if name == "plan":
        return plans(known_ids, sources)
    return any_text


def _clean(name: str, known_ids: list[str], sources: list[str]) -> st.SearchStrategy[Any]:
    """A well-formed value for one parameter: clean calls reach the code behind validation."""
    if name in ("limit", "k", "depth"):
        return st.integers(1, 10)
    if name in ("start", "end"):
        return st.integers(-1, 3)
    if name == "max_chars":
        return st.integers(1200, 12000)
    if name == "workspace":
        return st.sampled_from(["", "default"])
    if name == "project":
        return st.sampled_from(["", "birds", "docs"])
    if name in ("lang", "layer", "predicate", "subject", "object"):
        return st.sampled_from(["", "python", "docs", "uses", "imprint", "sqlite"])
    if name == "name":
        return st.sampled_from(["a.md", "notes/b.md", "c.txt"])
    if name in ("query", "question", "content"):
        return st.one_of(plain, st.text(st.characters(codec="utf-8"), min_size=1, max_size=80))
    if name == "id":
        return st.sampled_from(known_ids)
    if name == "source":
        return st.sampled_from(sources)
    if name == "path":
        return st.sampled_from(["docs", "docs/notes.md", ".", "link-to-etc", "a-fifo"])
    if name == "mode":
        return st.sampled_from(["hybrid", "semantic", "lexical"])
    if name == "detail":
        return st.sampled_from(["compact", "full"])
    if name == "action":
        return st.sampled_from(["add", "end"])
    if name == "type":
        return st.sampled_from(["", "note", "decision", "bug"])
    if name in ("domains", "topics"):
        return st.one_of(st.none(), st.lists(st.sampled_from(["birds", "storage"]), max_size=2))
    if name == "scope":
        return st.sampled_from(
            ["root", "project:birds", "source:docs/notes.md", *(f"chunk:{i}" for i in known_ids)]
        )
    if name == "plan":
        step = st.sampled_from(
            [
                {"tool": "search", "args": {"query": "heron"}},
                {"tool": "list_sources", "args": {}},
                {"tool": "kg_query", "args": {"subject": "imprint"}},
                *({"tool": "get_memory", "args": {"id": i}} for i in known_ids),
                *({"tool": "file_summary", "args": {"source": s}} for s in sources),
            ]
        )
        return st.one_of(st.none(), st.lists(step, min_size=1, max_size=4, unique_by=repr))
    return _good(name, known_ids, sources)


def _args(tool: str, known_ids: list[str], sources: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    names = PARAMS[tool]
    required = REQUIRED.get(tool, ())

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        # Some calls are nearly well formed (to reach deep code), others hostile throughout.
        hostility = draw(st.sampled_from([0, 0, 0, 1, 3]))
        args: dict[str, Any] = {}
        for name in names:
            how = draw(st.integers(0, 9))
            if how < 2 and not (hostility == 0 and name in required):
                continue  # omitted: the default, or a missing required argument
            if how < 2 + hostility:
                value = draw(json_values)
                if name == "workspace" and isinstance(value, str):
                    value += "/"  # not a valid name: no new workspace per example
                args[name] = value
            elif hostility == 0:
                args[name] = draw(_clean(name, known_ids, sources))
            else:
                args[name] = draw(_good(name, known_ids, sources))
        if hostility and draw(st.integers(0, 5)) == 0:
            extra = draw(st.sampled_from(["workspace_", "Query", "__class__", "", "limit "]))
            args[extra] = draw(json_values)
        return args

    return build()


def plans(known_ids: list[str], sources: list[str]) -> st.SearchStrategy[Any]:
    """Plans with every kind of mistake, and some good ones."""

    @st.composite
    def step(draw: st.DrawFn) -> Any:
        kind = draw(
            st.sampled_from(["good", "good", "tool", "write", "args", "extra", "shape", "ws"])
        )
        tool = draw(st.sampled_from(STEP_TOOLS))
        args = draw(_args(tool, known_ids, sources))
        args.pop("workspace", None)
        args.pop("max_chars", None)
        if kind == "tool":
            tool = draw(st.one_of(st.sampled_from(["recall", "status", "Search", ""]), any_text))
        elif kind == "write":
            tool = draw(st.sampled_from(["store", "delete", "ingest_path", "kg_edit"]))
        elif kind == "args":
            return {"tool": tool, "args": draw(json_values)}
        elif kind == "extra":
            return {"tool": tool, "args": args, draw(st.text(max_size=6)): draw(json_values)}
        elif kind == "shape":
            return draw(st.one_of(json_values, st.just({"tool": tool}), st.just({"args": {}})))
        elif kind == "ws":
            args["workspace"] = draw(workspaces)
        return {"tool": tool, "args": args}

    steps = st.lists(step(), max_size=10)
    duplicate = steps.map(lambda s: s + s[:1])
    return st.one_of(
        st.none(),
        steps,
        duplicate,
        st.lists(step(), min_size=9, max_size=12),
        any_text,
        st.sampled_from(['[{"tool": "search", "args": {"query": "x"}}]', "[", "{}", "null"]),
        json_values,
    )


def tool_calls(known_ids: list[str], sources: list[str]) -> st.SearchStrategy[tuple[str, Any]]:
    """(tool name, arguments): mostly a dict of fuzzed parameters, sometimes not a dict."""
    names = sorted(PARAMS)
    return st.sampled_from(names).flatmap(
        lambda tool: st.tuples(
            st.just(tool),
            st.sampled_from([False] * 9 + [True]).flatmap(
                lambda empty: st.just({}) if empty else _args(tool, known_ids, sources)
            ),
        )
    )


def check_answer(tool: str, is_error: bool, text: str) -> str | None:
    """What is wrong with one answer, or None: a normal result, or a one-line error that
    names an argument (or the plan's step), never a traceback or internal detail."""
    if "Traceback" in text or 'File "' in text:
        return "a traceback reached the client"
    if not is_error:
        return None
    line = text.strip()
    if not line or "\n" in line:
        return "the error is not one line"
    if len(line) > 1000:
        return f"the error is {len(line)} characters long"
    words = set(PARAMS[tool]) | {"arguments", "plan", "step", "steps"}
    if not any(word in line for word in words):
        return "the error names no argument"
    return None


def fingerprint(data_dir: Path) -> str:
    """A checksum of every workspace's records, sources, facts, journal and Chroma log,
    read from another process without taking any lock the daemon holds."""
    digest = hashlib.sha256()
    root = data_dir / "workspaces"
    for folder in sorted(root.iterdir()) if root.exists() else []:
        digest.update(folder.name.encode())
        db = folder / "imprint.sqlite3"
        if db.exists():
            conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
            try:
                for query in (
                    "SELECT id, content_sha, project, source, type, domains, topics"
                    " FROM records ORDER BY id",
                    "SELECT * FROM sources ORDER BY 1",
                    "SELECT * FROM facts ORDER BY 1",
                    "SELECT COUNT(*) FROM journal",
                ):
                    for row in conn.execute(query):
                        digest.update(repr(row).encode())
            finally:
                conn.close()
        chroma = folder / "chroma" / "chroma.sqlite3"
        if chroma.exists():
            conn = sqlite3.connect(f"file:{chroma}?mode=ro", uri=True, timeout=30)
            try:
                for query in (
                    "SELECT COALESCE(MAX(seq_id), 0) FROM embeddings_queue",
                    "SELECT embedding_id FROM embeddings ORDER BY embedding_id",
                ):
                    for row in conn.execute(query):
                        digest.update(repr(row).encode())
            finally:
                conn.close()
    return digest.hexdigest()


def finite(value: Any) -> bool:
    return not (isinstance(value, float) and not math.isfinite(value))
