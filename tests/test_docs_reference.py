"""The docs hold to the code: the generated references equal what the code writes now, the
README stays a front door (<= 150 lines), and every relative link in README.md and docs/
points at a file that exists."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from imprint.config import all_keys, env_name
from imprint.server.reference import COMMAND, REFERENCE_DIR, reference_files

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


@pytest.fixture(scope="module")
def generated() -> dict[Path, str]:
    return reference_files()


def test_the_references_are_written_under_docs(generated: dict[Path, str]) -> None:
    assert REFERENCE_DIR == DOCS / "reference"
    assert {p.name for p in generated} == {"tools.md", "configuration.md"}


@pytest.mark.parametrize("name", ["tools.md", "configuration.md"])
def test_a_committed_reference_equals_what_the_code_generates(
    generated: dict[Path, str], name: str
) -> None:
    """A tool or setting changed without regenerating fails here, naming the command."""
    path = REFERENCE_DIR / name
    committed = path.read_text(encoding="utf-8") if path.exists() else ""
    assert committed == generated[path], (
        f"docs/reference/{name} is out of date with the code; regenerate it: {COMMAND}"
    )


def test_the_tool_reference_names_every_tool_and_argument(generated: dict[Path, str]) -> None:
    """Read from the snapshot the daemon answers with (itself held equal to the live server
    by tests/test_handshake.py): each tool has its section and a row per argument."""
    import json

    from imprint.server.handshake import HANDSHAKE_FILE

    snap = json.loads(HANDSHAKE_FILE.read_text(encoding="utf-8"))
    tools = snap["versions"][snap["latest"]]["tools/list"]["tools"]
    text = generated[REFERENCE_DIR / "tools.md"]
    assert len(tools) >= 17
    for tool in tools:
        start = text.index(f"### `{tool['name']}`\n")
        section = text[start : text.find("\n### ", start + 1)]
        for arg in tool["inputSchema"].get("properties", {}):
            assert f"| `{arg}` |" in section, (tool["name"], arg)


def test_the_configuration_reference_names_every_key_and_its_variable(
    generated: dict[Path, str],
) -> None:
    text = generated[REFERENCE_DIR / "configuration.md"]
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert len(rows) == len(all_keys())
    for key in all_keys():
        assert f"| `{key}` |" in text and f"`{env_name(key)}`" in text, key
    assert "| `search.limit` | int | `10` | int >= 1 and <= 50 |" in text
    live = "| `recall.llm` | bool | `false` | true or false | `IMPRINT_RECALL_LLM` | at once |"
    assert live in text


def test_the_readme_is_a_front_door() -> None:
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines; move detail to docs/"


def _pages() -> list[Path]:
    return [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]


def test_every_relative_link_points_at_a_file() -> None:
    broken = []
    for page in _pages():
        text = page.read_text(encoding="utf-8")
        text = re.sub(r"```.*?```", "", text, flags=re.S)  # links in code blocks are code
        for target in LINK.findall(text):
            if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue
            rel = unquote(target.split("#", 1)[0])
            if not (page.parent / rel).exists():
                broken.append(f"{page.relative_to(REPO)}: {target}")
    assert not broken, broken


def test_the_link_check_finds_a_broken_link(tmp_path: Path) -> None:
    """The pattern reads links and images, and a missing target is caught."""
    text = "see [a](missing.md#x), ![pic](there.png) and [b](https://example.org)"
    (tmp_path / "there.png").write_bytes(b"")
    found = [t for t in LINK.findall(text) if not t.startswith("https:")]
    assert found == ["missing.md#x", "there.png"]
    assert [t for t in found if not (tmp_path / t.split("#")[0]).exists()] == ["missing.md#x"]


def test_the_readme_links_every_docs_page() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for page in sorted(DOCS.glob("*.md")):
        assert f"docs/{page.name}" in readme, page.name
