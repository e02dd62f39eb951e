"""benchmark/team_lookups.py: its lookup file, and its core (ingest, carry into PostgreSQL,
search both stores, recall on the team store) on a tiny generated corpus, so it cannot rot."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest

from benchmark import team_lookups
from benchmark._common import DEFAULT_CORPUS

TOPICS = {
    "kitchen": {
        "kettle.md": "# Copper kettle\n\nBoil water in the copper kettle on a low flame; "
        "descale the kettle with vinegar every month so limescale never builds up.\n",
        "bread.md": "# Sourdough bread\n\nFeed the sourdough starter with rye flour, let the "
        "dough rise overnight in a cool larder, then bake it in a cast-iron pot.\n",
    },
    "workshop": {
        "bicycle.md": "# Bicycle chain\n\nClean the bicycle chain with a degreaser, dry it, "
        "and lubricate every link with chain oil before a long ride in the rain.\n",
        "lathe.md": "# Wood lathe\n\nTurn a bowl on the wood lathe: mount the blank on the "
        "faceplate, sharpen the gouge, and keep the tool rest close to the wood.\n",
    },
}
LOOKUPS = """\
# tiny: two tune, two held
kitchen | kettle.md | how do I remove limescale from the copper kettle
workshop | bicycle.md | lubricate the bicycle chain before riding in the rain
kitchen | bread.md | feed the sourdough starter and bake the bread in a pot
workshop | lathe.md | turning a bowl on the wood lathe with a gouge
"""


def test_the_committed_lookups_are_120_with_80_to_tune() -> None:
    lookups = team_lookups.load_lookups(team_lookups.LOOKUPS)
    assert len(lookups) == 120
    assert [lk.half for lk in lookups] == ["tune"] * 80 + ["held"] * 40
    assert {p for lk in lookups for p, _ in lk.gold} == set(team_lookups.PROJECTS)


def test_every_gold_source_is_a_file_of_the_corpus() -> None:
    if not DEFAULT_CORPUS.is_dir():
        pytest.skip(f"no corpus at {DEFAULT_CORPUS}")
    missing = [
        f"{lk.n}: {p}/{s}"
        for lk in team_lookups.load_lookups(team_lookups.LOOKUPS)
        for p, s in lk.gold
        if not (DEFAULT_CORPUS / p / s).is_file()
    ]
    assert missing == []


def test_a_bad_line_or_a_repeated_question_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "lookups.txt"
    path.write_text("kitchen | kettle.md\nkitchen | a.md | q\nworkshop | b.md | q\n")
    with pytest.raises(SystemExit) as exc:
        team_lookups.load_lookups(path)
    assert "lookup 1: want `project | source[, source] | question`" in str(exc.value)
    assert "a question repeats" in str(exc.value)


def test_block_headers_give_project_and_source_in_order() -> None:
    text = (
        'search "q" (hybrid): 2 results\n\n[1] 0123456789abcdef | pykka | docs/a.md#2 +#3 | '
        "doc | 2026-12-06 | 0.5\nexcerpt\n\n[2] fedcba9876543210 | pykka | README.md#0 | doc | "
        "2026-12-06 | 0.4\nexcerpt"
    )
    pairs = team_lookups.shown_pairs(text)
    assert pairs == [("pykka", "docs/a.md"), ("pykka", "README.md")]
    assert team_lookups.rank_of(pairs, (("pykka", "README.md"),)) == 2
    assert team_lookups.rank_of(pairs, (("pykka", "x.md"),)) is None


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_core_carries_a_tiny_corpus_and_finds_it_in_both_stores(tmp_path: Path) -> None:
    """Ingested locally, carried with its vectors into PostgreSQL, the same records in both;
    each distinct question finds its file first in both stores; a recall on the team store
    within its budgets names its gold file; the table and README render."""
    pytest.importorskip("psycopg")
    corpus = tmp_path / "corpus"
    for project, files in TOPICS.items():
        for name, text in files.items():
            (corpus / project).mkdir(parents=True, exist_ok=True)
            (corpus / project / name).write_text(text)
    (tmp_path / "lookups.txt").write_text(LOOKUPS)
    lookups = team_lookups.load_lookups(tmp_path / "lookups.txt", tune=2)
    recall = team_lookups.RecallCase(
        "the kettle and the lathe",
        [
            {"tool": "search", "args": {"query": "descale the kettle"}},
            {"tool": "list_sources", "args": {"project": "workshop"}},
        ],
        ("workshop", "lathe.md"),
        1200,
    )
    # The cluster's folder outside pytest's tmp_path: as root, the server runs as a user of
    # its own, and a pytest starting beside this one makes its base folder 0700 again.
    work = Path(tempfile.mkdtemp(prefix="imprint-team-lookups-test-"))
    try:
        res = team_lookups.measure(corpus, sorted(TOPICS), lookups, work, recalls=[recall])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    assert res.store["records"] == res.store["team_records"] >= 4
    assert {part: res.figures[part]["local"]["lookups"] for part in ("tune", "held")} == {
        "tune": 2,
        "held": 2,
    }
    ranks = {(r["n"], store): r[store]["rank"] for r in res.lookups for store in ("local", "team")}
    assert ranks == {(n, store): 1 for n in range(1, 5) for store in ("local", "team")}
    (checked,) = res.recalls
    assert checked["within_chars"] and checked["within_deadline"] and checked["gold_named"]
    assert not checked["error"] and checked["step_errors"] == 0
    assert "top-1 gap (local - team), all 4: 0" in team_lookups.table(res)
    json.dumps(res.lookups)  # what publish writes is plain JSON
    assert "| # | part | question | local | team |" in team_lookups.readme(res, "cmd")
