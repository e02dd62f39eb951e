"""Chunking: section splits per kind, the size bound, overlap, and that no text is lost."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from imprint.ingest.chunking import chunk_text, split_sections

PROPERTY = settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)

# --- markdown -------------------------------------------------------------------------


def test_markdown_splits_at_each_heading() -> None:
    """Markdown starts a new section at every ATX heading, and keeps text before the first."""
    text = "intro line\n# One\nbody one\n## Two\nbody two\n###### Six\nbody six\n"
    assert split_sections(text, "markdown") == [
        "intro line\n",
        "# One\nbody one\n",
        "## Two\nbody two\n",
        "###### Six\nbody six\n",
    ]


def test_markdown_hash_without_space_or_seven_hashes_is_not_a_heading() -> None:
    """`#tag` and `####### x` are not headings, so they do not start a section."""
    text = "# Real\n#hashtag here\n####### seven\nend\n"
    assert split_sections(text, "markdown") == [text]


@pytest.mark.parametrize("fence", ["```", "~~~"])
def test_markdown_does_not_split_inside_a_fenced_code_block(fence: str) -> None:
    """A `# comment` line inside a fenced block is code, not a heading."""
    text = (
        "# Setup\n"
        f"{fence}python\n"
        "# install the package\n"
        "pip install imprint\n"
        f"{fence}\n"
        "# Usage\n"
        "run it\n"
    )
    assert split_sections(text, "markdown") == [
        f"# Setup\n{fence}python\n# install the package\npip install imprint\n{fence}\n",
        "# Usage\nrun it\n",
    ]


def test_markdown_tilde_line_inside_backtick_fence_does_not_end_the_fence() -> None:
    """A ``` block is closed only by ```, so a `~~~` line and a `#` line inside it stay code."""
    text = "# Title\n```\n~~~\n# still code\n```\nafter\n"
    assert split_sections(text, "markdown") == [text]


def test_markdown_chunks_start_at_headings_when_sections_do_not_fit_together() -> None:
    """Sections are packed up to the target, so two that do not fit land in separate chunks."""
    sections = [f"# Part {i}\n" + f"word{i} " * 18 + "\n" for i in range(5)]
    assert all(100 < len(s) < 150 for s in sections)
    chunks = chunk_text("".join(sections), "markdown", target=150, overlap=40)
    assert chunks == [s.strip("\n") for s in sections]


def test_small_markdown_sections_are_packed_into_one_chunk() -> None:
    """Consecutive sections that fit within the target together form a single chunk."""
    text = "# A\nalpha\n# B\nbeta\n# C\ngamma\n"
    assert chunk_text(text, "markdown", target=1200, overlap=150) == [text.strip("\n")]


# --- reStructuredText -------------------------------------------------------------------


def test_rst_splits_at_title_with_underline() -> None:
    """A line followed by an underline at least as long as it starts a section."""
    text = "Title\n=====\n\nbody one\n\nSecond\n------\n\nbody two\n"
    assert split_sections(text, "rst") == [
        "Title\n=====\n\nbody one\n\n",
        "Second\n------\n\nbody two\n",
    ]


def test_rst_overline_stays_with_its_title() -> None:
    """With overline + title + underline, the overline opens the new section."""
    text = "intro text\n\n=========\n Title\n=========\n\nbody\n"
    assert split_sections(text, "rst") == [
        "intro text\n\n",
        "=========\n Title\n=========\n\nbody\n",
    ]


def test_rst_document_starting_with_an_overlined_title_is_one_section() -> None:
    """An overlined title on the first line does not leave an empty or split section behind."""
    text = "=====\nTitle\n=====\n\nbody\n\nNext\n~~~~\n\nmore\n"
    assert split_sections(text, "rst") == [
        "=====\nTitle\n=====\n\nbody\n\n",
        "Next\n~~~~\n\nmore\n",
    ]


def test_rst_underline_shorter_than_title_is_not_a_heading() -> None:
    """An underline shorter than the title text does not make a heading."""
    text = "para\n\nA long title\n===\n\nbody\n"
    assert split_sections(text, "rst") == [text]


# --- code -----------------------------------------------------------------------------


def test_code_splits_at_top_level_definitions_with_decorators_attached() -> None:
    """Code splits before top-level defs/classes; decorators stay with the def below them."""
    text = (
        "import os\n"
        "\n"
        "@cache\n"
        "@retry(times=3)\n"
        "def load():\n"
        "    def inner():\n"
        "        pass\n"
        "    return inner\n"
        "\n"
        "class Store:\n"
        "    @property\n"
        "    def size(self):\n"
        "        return 1\n"
        "\n"
        "async def main():\n"
        "    pass\n"
    )
    assert split_sections(text, "code") == [
        "import os\n\n",
        "@cache\n@retry(times=3)\ndef load():\n"
        "    def inner():\n        pass\n    return inner\n\n",
        "class Store:\n    @property\n    def size(self):\n        return 1\n\n",
        "async def main():\n    pass\n",
    ]


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("function a() {\n  return 1;\n}\n", "function b() {\n  return 2;\n}\n"),
        ("func A() int {\n\treturn 1\n}\n", "func B() int {\n\treturn 2\n}\n"),
        ("fn a() -> u8 {\n    1\n}\n", "pub fn b() -> u8 {\n    2\n}\n"),
    ],
)
def test_code_splits_at_definitions_in_other_languages(first: str, second: str) -> None:
    """JavaScript, Go and Rust top-level definitions each start a section."""
    assert split_sections(first + second, "code") == [first, second]


def test_code_chunks_keep_every_decorator_in_the_chunk_of_its_def() -> None:
    """When decorated functions are chunked separately, each decorator is in its def's chunk."""
    funcs = [
        f"@route('/item/{i}')\n@auth\ndef handler_{i}(request):\n"
        + f"    value = compute_{i}(request)\n" * 3
        + "    return value\n\n"
        for i in range(6)
    ]
    chunks = chunk_text("".join(funcs), "code", target=200, overlap=50)
    assert len(chunks) == 6
    for i in range(6):
        [holder] = [c for c in chunks if f"def handler_{i}(" in c]
        assert holder.startswith(f"@route('/item/{i}')\n@auth\ndef handler_{i}(")


# --- size, overlap, no loss ------------------------------------------------------------


def test_empty_or_blank_text_gives_no_chunks() -> None:
    """Text with nothing but whitespace yields no chunks for any kind."""
    for kind in ("markdown", "rst", "code", "text"):
        assert chunk_text("", kind) == []
        assert chunk_text(" \n\n\t\n", kind) == []


def test_long_section_chunks_repeat_the_tail_of_the_previous_chunk() -> None:
    """Each chunk after the first of a long section begins with the end of the one before."""
    text = " ".join(f"sentence{i} ends here." for i in range(200))
    overlap = 80
    chunks = chunk_text(text, "text", target=300, overlap=overlap)
    assert len(chunks) > 5
    whole_words = set(text.split())
    for prev, nxt in itertools.pairwise(chunks):
        # at least half the overlap is repeated, cut at a word start
        assert nxt[: overlap // 2] in prev[-overlap:]
        assert nxt.split()[0] in whole_words


def test_zero_overlap_chunks_concatenate_back_to_the_text() -> None:
    """With overlap 0 a long text is cut into pieces that join back to exactly the input."""
    text = " ".join(f"sentence{i} ends here." for i in range(200))
    chunks = chunk_text(text, "text", target=300, overlap=0)
    assert len(chunks) > 5
    assert "".join(chunks) == text


def test_sections_that_fit_are_not_overlapped() -> None:
    """Overlap applies only inside a long section: short sections are never repeated."""
    sections = [f"# S{i}\n" + " ".join(f"w{i}x{j}" for j in range(30)) + "\n" for i in range(5)]
    chunks = chunk_text("".join(sections), "markdown", target=250, overlap=100)
    words = [w for c in chunks for w in c.split() if w != "#"]
    assert sorted(words) == sorted(w for s in sections for w in s.split() if w != "#")


def test_a_single_word_longer_than_the_target_is_hard_cut_within_the_bound() -> None:
    """Text with no boundary is cut at the target, and nothing exceeds target + overlap."""
    text = "x" * 1000
    chunks = chunk_text(text, "text", target=300, overlap=50)
    assert all(len(c) <= 350 for c in chunks)
    assert chunks[0] == "x" * 300
    assert sum(len(c) for c in chunks) >= 1000


_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=12)
_LINE = st.one_of(
    st.lists(_WORD, min_size=1, max_size=25).map(" ".join),
    st.lists(_WORD, min_size=1, max_size=25).map(". ".join),
    _WORD.map(lambda w: "# " + w),
    _WORD.map(lambda w: "## " + w),
    _WORD.map(lambda w: "@" + w),
    _WORD.map(lambda w: f"def {w}():"),
    _WORD.map(lambda w: f"class {w}:"),
    _WORD.map(lambda w: "    return " + w),
    st.sampled_from(["```", "~~~", "=====", "-----", "", "   ", "~~~~~~~~~~~~"]),
)
_TEXT = st.lists(_LINE, max_size=80).flatmap(
    lambda lines: st.sampled_from(["\n", "\n\n"]).map(lambda sep: sep.join(lines))
)
_KIND = st.sampled_from(["markdown", "rst", "code", "text"])


@PROPERTY
@given(text=_TEXT, kind=_KIND, target=st.integers(60, 1500), overlap=st.integers(0, 400))
def test_chunks_never_exceed_target_plus_overlap(
    text: str, kind: str, target: int, overlap: int
) -> None:
    """No chunk is longer than target + overlap, whatever the kind and text."""
    for chunk in chunk_text(text, kind, target=target, overlap=overlap):
        assert len(chunk) <= target + overlap


@PROPERTY
@given(text=_TEXT, kind=_KIND, target=st.integers(60, 1500), overlap=st.integers(0, 400))
def test_every_word_of_the_input_is_in_some_chunk(
    text: str, kind: str, target: int, overlap: int
) -> None:
    """Chunking loses no text: every whitespace-separated word appears whole in a chunk."""
    chunks = chunk_text(text, kind, target=target, overlap=overlap)
    chunk_words = {w for c in chunks for w in c.split()}
    missing = [w for w in text.split() if w not in chunk_words]
    assert missing == []
    assert all(c.strip() for c in chunks)


@PROPERTY
@given(text=_TEXT, kind=_KIND)
def test_split_sections_rejoins_to_the_input_minus_blank_sections(text: str, kind: str) -> None:
    """split_sections only cuts: its sections, in order, are the input with blank ones dropped."""
    sections = split_sections(text, kind)
    assert all(s.strip() for s in sections)
    assert "".join(sections).split() == text.split()
    # sections are contiguous slices of the input
    pos = 0
    for s in sections:
        found = text.find(s, pos)
        assert found >= pos
        assert text[pos:found].strip() == ""
        pos = found + len(s)
    assert text[pos:].strip() == ""
