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
    # A list key says what it lists: folders, workspaces, or projects, folders and globs.
    assert (
        "| `redact.keep_secrets_in` | list of str | `[]` | a comma-separated list of workspaces |"
        in text
    )
    lists = "| `hooks.exclude` | list of str | `[]` | a comma-separated list of projects, folders"
    assert lists in text


def test_the_readme_is_a_front_door() -> None:
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines; move detail to docs/"


def _pages() -> list[Path]:
    return [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]


def _prose(page: Path) -> str:
    """A page without its fenced code blocks (a `#` or a link there is code)."""
    return re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)


def anchors(text: str) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation but `-` and `_`
    dropped, spaces as `-`; a repeated one numbered."""
    seen: dict[str, int] = {}
    out = set()
    for heading in re.findall(r"^#{1,6} (.+)$", text, flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def test_every_relative_link_points_at_a_file_and_heading() -> None:
    broken = []
    for page in _pages():
        for target in LINK.findall(_prose(page)):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):
                continue
            rel, _, anchor = unquote(target).partition("#")
            path = (page.parent / rel) if rel else page
            if not path.exists():
                broken.append(f"{page.relative_to(REPO)}: {target}")
            elif anchor and path.suffix == ".md" and anchor not in anchors(_prose(path)):
                broken.append(f"{page.relative_to(REPO)}: {target} (no such heading)")
    assert not broken, broken


def test_anchors_are_read_as_github_writes_them() -> None:
    text = (
        "# Install and locks\n## `search` (team)\n## Inference (tagging and recall's)\n## Ab\n## Ab"
    )
    assert anchors(text) == {
        "install-and-locks",
        "search-team",
        "inference-tagging-and-recalls",
        "ab",
        "ab-1",
    }


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


# A setting named with its default in prose: "`hooks.context_chars` (2,000)", "(600 s)".
DEFAULT_SAID = re.compile(
    r"`([a-z_]+(?:\.[a-z_]+)+)`\s*\((\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)\s*(MiB|MB|s)?"
    r"(?:[ ;)]|,(?!\s*\d))"
)


def defaults_said(text: str) -> list[tuple[str, float]]:
    """Each (key, value) the prose gives as a setting's default, in the key's own unit."""
    out = []
    for key, number, unit in DEFAULT_SAID.findall(text):
        value = float(number.replace(",", ""))
        out.append((key, value * 1_048_576 if unit == "MiB" else value))
    return out


def test_defaults_said_reads_values_and_skips_lists() -> None:
    text = (
        "`a.b` (2,000) and `c.d` (20 MiB), `e.f` (600 s); "
        "`g.h` and `i.j` (1.5, 1 and 1) and `k.l` (`x`)"
    )
    assert defaults_said(text) == [("a.b", 2000.0), ("c.d", 20 * 1_048_576.0), ("e.f", 600.0)]


def test_the_defaults_the_pages_name_are_the_codes() -> None:
    """Every "`key` (value)" in README.md and docs/ names a real key and its default."""
    from imprint.config import Config, get_value

    keys, config = set(all_keys()), Config()
    wrong, seen = [], 0
    for page in _pages():
        for key, value in defaults_said(_prose(page)):
            seen += 1
            if key not in keys:
                wrong.append(f"{page.name}: {key} is no setting")
            elif float(get_value(config, key)) != value:
                wrong.append(
                    f"{page.name}: {key} ({value:g}); the default is {get_value(config, key)}"
                )
    assert seen >= 15 and not wrong, (seen, wrong)
