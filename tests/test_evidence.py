"""The budgeted evidence format: numbered blocks at one excerpt width, a counted remainder."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from imprint.reads.layout import MIN_EXCERPT, Block, clip, escape_field, one_line, render_blocks

PROPERTY = settings(
    max_examples=200,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
HINT = "narrow the query or raise max_chars"
FOOTER = re.compile(r"^\((\d+) more (result|results) hidden by max_chars=(\d+); (.*)\)$")


@dataclass
class Rendered:
    """An output taken apart: shown (block, excerpt) pairs in order, and the footer line."""

    shown: list[tuple[Block, str]]
    footer: str | None


def parse(out: str, prelude: list[str], blocks: list[Block]) -> Rendered:
    """Split `head \\n\\n [n] meta \\n excerpt (\\n\\n ...) [\\n\\n (footer)]` into its parts."""
    head = "\n".join(prelude)
    rest = out
    if head:
        assert rest.startswith(head)
        rest = rest[len(head) :]
        if rest:
            assert rest.startswith("\n\n")
            rest = rest[2:]
    lines = rest.split("\n") if rest else []
    shown: list[tuple[Block, str]] = []
    i = 0
    while (
        i < len(lines)
        and len(shown) < len(blocks)
        and lines[i] == f"[{len(shown) + 1}] {escape_field(blocks[len(shown)].meta)}"
    ):
        assert i + 1 < len(lines), "a block has a provenance line but no excerpt line"
        shown.append((blocks[len(shown)], lines[i + 1]))
        i += 2
        if i < len(lines):
            assert lines[i] == "", "blocks are separated by one blank line"
            i += 1
    remaining = lines[i:]
    assert len(remaining) <= 1, f"unexpected lines after the blocks: {remaining!r}"
    footer = remaining[0] if remaining else None
    if footer is not None:
        assert footer.startswith("(")
        assert "more result" in footer
    return Rendered(shown, footer)


def hidden_count(footer: str | None) -> int:
    if footer is None:
        return 0
    match = FOOTER.match(footer)
    assert match, footer
    return int(match.group(1))


@st.composite
def contents(draw: st.DrawFn, spaces: bool = True) -> str:
    """Block content: short arbitrary text, or long text of a given length (cheap to draw)."""
    if draw(st.booleans()):
        return draw(st.text(max_size=40))
    length = draw(st.one_of(st.integers(0, 3000), st.sampled_from([299, 300, 301, 600])))
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    alphabet = "abcdefgh  \n\t…" if spaces else "abcdefgh…"
    return "".join(rng.choices(alphabet, k=length))


_META = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n"), max_size=120
)
_PRELUDE = st.lists(
    st.text(alphabet="abcdefghij :=,0123456789", min_size=1, max_size=120), max_size=3
)


@st.composite
def cases(draw: st.DrawFn, spaces: bool = True) -> tuple[list[str], list[Block], int, int]:
    blocks = draw(
        st.lists(st.builds(Block, meta=_META, content=contents(spaces=spaces)), max_size=12)
    )
    return draw(_PRELUDE), blocks, draw(st.integers(1200, 12000)), draw(st.integers(0, 5))


def render(case: tuple[list[str], list[Block], int, int]) -> tuple[str, Rendered]:
    prelude, blocks, max_chars, extra = case
    out = render_blocks(prelude, blocks, max_chars, hint=HINT, extra_hidden=extra)
    return out, parse(out, prelude, blocks)


def clipped(block: Block, excerpt: str) -> bool:
    return excerpt != one_line(block.content)


@PROPERTY
@given(case=cases())
def test_output_never_exceeds_max_chars(case: tuple[list[str], list[Block], int, int]) -> None:
    """The rendered text is never longer than max_chars."""
    out, _ = render(case)
    assert len(out) <= case[2]


@PROPERTY
@given(case=cases())
def test_shown_plus_hidden_is_the_total(case: tuple[list[str], list[Block], int, int]) -> None:
    """Every result is either shown or counted as hidden (extra_hidden included)."""
    _, blocks, _, extra = case
    _, parsed = render(case)
    assert len(parsed.shown) + hidden_count(parsed.footer) == len(blocks) + extra


@PROPERTY
@given(case=cases())
def test_hidden_line_present_iff_something_is_hidden(
    case: tuple[list[str], list[Block], int, int],
) -> None:
    """The '(N more results …)' line appears exactly when N > 0, and states N."""
    _, blocks, max_chars, extra = case
    _, parsed = render(case)
    hidden = len(blocks) + extra - len(parsed.shown)
    if hidden == 0:
        assert parsed.footer is None
    else:
        assert parsed.footer is not None
        match = FOOTER.match(parsed.footer)
        assert match, parsed.footer
        assert int(match.group(1)) == hidden
        assert match.group(2) == ("result" if hidden == 1 else "results")
        assert int(match.group(3)) == max_chars
        assert match.group(4) == HINT


@PROPERTY
@given(case=cases())
def test_shown_excerpts_are_prefixes_of_their_content(
    case: tuple[list[str], list[Block], int, int],
) -> None:
    """An excerpt is the one-line content, or a prefix of it ending in an ellipsis."""
    _, parsed = render(case)
    for block, excerpt in parsed.shown:
        text = one_line(block.content)
        if excerpt != text:
            assert excerpt.endswith("…")
            assert text.startswith(excerpt[:-1])


@PROPERTY
@given(case=cases())
def test_all_shown_excerpts_share_one_width(
    case: tuple[list[str], list[Block], int, int],
) -> None:
    """Clipped excerpts are all exactly the common width; unclipped ones are no longer."""
    _, parsed = render(case)
    cut = {len(e) for b, e in parsed.shown if clipped(b, e)}
    assert len(cut) <= 1, f"clipped excerpts have different lengths: {sorted(cut)}"
    if cut:
        [width] = cut
        assert all(len(e) <= width for _, e in parsed.shown)


@PROPERTY
@given(case=cases(spaces=False))
def test_width_is_at_least_the_minimum_unless_all_contents_are_shorter(
    case: tuple[list[str], list[Block], int, int],
) -> None:
    """Excerpts are never clipped below 300 characters (contents without spaces)."""
    _, parsed = render(case)
    for block, excerpt in parsed.shown:
        if clipped(block, excerpt):
            assert len(excerpt) >= MIN_EXCERPT


def test_clip_marks_a_cut_with_an_ellipsis_inside_the_width() -> None:
    """clip keeps short text and cuts long text to the width, ending in '…'."""
    assert clip("short", 10) == "short"
    assert clip("abcdefghij", 10) == "abcdefghij"
    assert clip("abcdefghijk", 10) == "abcdefghi…"
    assert len(clip("x" * 500, 300)) == 300


def test_a_cut_just_after_a_space_still_fills_the_common_width() -> None:
    """Two clipped excerpts have the same length even when one cut lands after a space."""
    blocks = [
        Block(meta="a", content="x" * 2000),
        Block(meta="b", content="x" * 591 + " " + "y" * 2000),
    ]
    # fixed = len("[1] a\n") + len("[2] b\n") + len("\n\n") = 14; width = (1200 - 14) // 2 = 593,
    # so block b is cut after its 592nd character, which is the space.
    out = render_blocks([], blocks, 1200, hint=HINT)
    parsed = parse(out, [], blocks)
    assert [len(e) for _, e in parsed.shown] == [593, 593]


def test_one_line_collapses_whitespace() -> None:
    """Runs of whitespace, newlines included, become single spaces; ends are trimmed."""
    assert one_line("  a\n\n b\t\tc  ") == "a b c"


def test_many_long_blocks_show_some_and_count_the_rest() -> None:
    """Twenty 5000-char results at 1200 chars: the ones shown get >= 300 chars, the rest counted."""
    blocks = [Block(meta=f"src/f{i}.py:1-40", content="word " * 1000) for i in range(20)]
    out = render_blocks(["search: q"], blocks, 1200, hint=HINT)
    parsed = parse(out, ["search: q"], blocks)
    shown = len(parsed.shown)
    assert 1 <= shown <= 3
    assert parsed.footer == f"({20 - shown} more results hidden by max_chars=1200; {HINT})"
    assert len(out) <= 1200


def test_one_hidden_result_uses_the_singular() -> None:
    """With exactly one hidden result the footer says 'result', not 'results'."""
    blocks = [Block(meta="a", content="x")]
    out = render_blocks([], blocks, 1200, hint=HINT, extra_hidden=1)
    assert out.endswith(f"\n\n(1 more result hidden by max_chars=1200; {HINT})")


def test_everything_fits_when_the_budget_allows() -> None:
    """Short results within the budget are all shown in full, with no footer."""
    blocks = [Block(meta=f"m{i}", content=f"content number {i}") for i in range(5)]
    out = render_blocks(["head"], blocks, 4000, hint=HINT)
    expected = "head\n\n" + "\n\n".join(f"[{i + 1}] m{i}\ncontent number {i}" for i in range(5))
    assert out == expected


def test_no_blocks_gives_only_the_prelude() -> None:
    """With no results and nothing hidden the output is the prelude alone."""
    assert render_blocks(["line one", "line two"], [], 1200, hint=HINT) == "line one\nline two"
