"""The code-search benchmark's own checks: its lookup file, its fixture manifest and how it
reads the blocks of a formatted search."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmark import code_search
from imprint.reads.layout import chunk_place
from imprint.store.records import Record
from imprint.types import MemoryId


def test_the_lookup_file_has_thirty_lookups_in_every_style() -> None:
    """At least 30 lookups, each style represented, versions pinned for every project."""
    versions, lookups = code_search.load_lookups(code_search.DEFAULT_QUERIES, None)
    assert len(lookups) >= 30
    assert {lk.style for lk in lookups} == set(code_search.STYLES)
    assert set(versions) == {lk.project for lk in lookups}


def test_the_held_out_file_has_one_lookup_per_project_and_style_and_no_tuned_gold() -> None:
    """4 per style, one per project; no gold symbol of the tuned set, same fixture versions."""
    heldout = code_search.DEFAULT_QUERIES.with_name("code_search_heldout.json")
    versions, lookups = code_search.load_lookups(heldout, None)
    tuned_versions, tuned = code_search.load_lookups(code_search.DEFAULT_QUERIES, None)
    assert versions == tuned_versions
    assert sorted((lk.style, lk.project) for lk in lookups) == sorted(
        (style, project) for style in code_search.STYLES for project in versions
    )
    assert not {lk.symbol for lk in lookups} & {lk.symbol for lk in tuned}


def test_a_bad_lookup_file_is_refused_with_every_problem(tmp_path: Path) -> None:
    """A wrong style and a definition missing from its gold file are both named."""
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "a.py").write_text("def real():\n    pass\n", encoding="utf-8")
    bad = {
        "lookups": [
            {
                "id": "x",
                "style": "vibes",
                "query": "q",
                "gold": {"project": "p", "source": "a.py", "defines": "def real("},
            },
            {
                "id": "y",
                "style": "task",
                "query": "q",
                "gold": {"project": "p", "source": "a.py", "defines": "def gone("},
            },
        ]
    }
    path = tmp_path / "l.json"
    path.write_text(json.dumps(bad), encoding="utf-8")
    with pytest.raises(SystemExit) as err:
        code_search.load_lookups(path, tmp_path)
    assert "x: style 'vibes'" in str(err.value) and "'def gone(' is not in" in str(err.value)


def test_a_fixture_whose_files_changed_is_refused(tmp_path: Path) -> None:
    """FIXTURE.json's sha256 guards the copied sources: an edit after the copy is refused."""
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "a.py").write_text("x = 1\n", encoding="utf-8")
    files, sha = code_search._tree_sha(tmp_path / "p")
    manifest = {"projects": {"p": {"version": "1.0", "files": files, "sha256": sha}}}
    (tmp_path / "FIXTURE.json").write_text(json.dumps(manifest), encoding="utf-8")
    assert code_search.check_fixture(tmp_path, {"p": "1.0"}) == manifest
    (tmp_path / "p" / "a.py").write_text("x = 2\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="the files differ"):
        code_search.check_fixture(tmp_path, {"p": "1.0"})


def test_blocks_are_read_with_or_without_a_symbol_in_the_header() -> None:
    """A header with symbol and lines and one without both give their project and source."""
    rec = Record(
        id=MemoryId("a" * 16),
        content="x",
        project="p",
        source="s/_a.py",
        symbol="A.b",
        line_start=3,
        line_end=9,
    )
    plain = rec.model_copy(update={"symbol": "", "line_start": 0, "line_end": 0, "source": "d.md"})
    text = (
        f"[1] {'a' * 16} | p | {chunk_place(rec)} | note | 0.5000\ndef b(): pass\n"
        f"[2] {'b' * 16} | q | {chunk_place(plain)} | note | 0.4000\nprose\n"
    )
    assert chunk_place(rec) == "s/_a.py#0 A.b L3-9"
    blocks = code_search.shown_blocks(text)
    assert [(p, s) for p, s, _ in blocks] == [("p", "s/_a.py"), ("q", "d.md")]
    assert "def b()" in blocks[0][2] and "prose" not in blocks[0][2]


def test_a_long_packed_symbol_list_is_cut_at_a_name_in_the_header() -> None:
    """Packed symbols past 60 characters end at a whole name and an ellipsis."""
    names = ", ".join(f"Console.method_number_{i}" for i in range(6))
    rec = Record(
        id=MemoryId("a" * 16), content="x", source="c.py", symbol=names, line_start=1, line_end=2
    )
    place = chunk_place(rec)
    assert place.startswith("c.py#0 Console.method_number_0, Console.method_number_1…")
    assert place.endswith(" L1-2") and len(place) < 90
