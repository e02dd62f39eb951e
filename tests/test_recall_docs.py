"""What callers read about recall is true with the model path on: tool text and docs."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
from mcp.client import Client

from imprint.actors.lifecycle import Runtime
from imprint.config import Config
from imprint.server import build_server
from imprint.store.embedder import Embedder

REPO = Path(__file__).resolve().parents[1]
TOOLS_PAGE = REPO / "docs" / "tools.md"
LATER = re.compile(r"later[^.\n]{0,40}model path|model path[^.\n]{0,40}later", re.I)


def _recall_description(tmp_path: Path, embedder: Embedder) -> str:
    rt = Runtime(tmp_path / "data", Config(), embedder=embedder).start()
    try:

        async def go() -> str:
            async with Client(build_server(rt, tmp_path)) as client:
                tools = {t.name: t for t in (await client.list_tools()).tools}
                return tools["recall"].description or ""

        return anyio.run(go)
    finally:
        rt.stop()


def test_the_recall_description_says_a_model_answer_is_a_pointer(
    tmp_path: Path, embedder: Embedder
) -> None:
    """The tool text names the model path and says its answer is a pointer, not a fact."""
    text = " ".join(_recall_description(tmp_path, embedder).split())
    assert "a pointer to the cited evidence, not a fact" in text
    assert "recall.llm" in text and "Without a plan (and no model)" in text
    assert not LATER.search(text)


def test_the_tools_page_documents_the_model_path_keys() -> None:
    """docs/tools.md's recall section documents recall.llm, both timeouts and condense; no
    page (nor the README) says the model path comes 'later'."""
    text = TOOLS_PAGE.read_text(encoding="utf-8")
    start = text.index("## recall: several reads in one round trip")
    end = text.find("\n## ", start + 1)
    section = text[start : end if end >= 0 else None]
    for key in ("`recall.llm = true`", "`recall.llm_timeout_sec`", "`recall.step_timeout_sec`"):
        assert key in section, key
    assert "(`condense`, default true)" in section and "`condense=false`" in section
    assert "not a fact" in section
    for page in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        found = LATER.search(page.read_text(encoding="utf-8"))
        assert not found, (page.name, found)
