"""A folder's ignore rules cost time linear in a name (issue 43, medium 4), replayed.

A `.gitignore` of `*a*a*a*a*a*a*a*a*a*a*a*a*b` beside a 40-character name: pathspec's
regular expression backtracked for 50 s on that one check (Python's engine holding the
interpreter lock throughout), so the ingest hung, and in the daemon every other session and
the SIGTERM handler hung with it. Ignore rules now run on a linear matcher
(`imprint.ingest.ignore`) that gives pathspec's answers; a walk has a deadline.
"""

from __future__ import annotations

import random
import time
import warnings
from pathlib import Path

import pathspec
import pytest

from imprint.actors.lifecycle import Runtime
from imprint.errors import InputError
from imprint.ingest import files as files_mod
from imprint.ingest.files import select_files
from imprint.writes.files import ingest_path
from tests.support.hardening import lexical
from tests.support.hostile_ignore import HOSTILE_RULE, _hostile_folder


@pytest.mark.timeout(60)  # before: hours for this name (50 s at 40 characters)
def test_a_hostile_ignore_rule_beside_a_long_name_is_checked_at_once(tmp_path: Path) -> None:
    """The walk of a folder whose `.gitignore` holds the hostile rule, beside a
    60-character name, lists the names the rule does not match and leaves out the one it
    does, as git would."""
    folder = _hostile_folder(tmp_path, 60)
    chosen = select_files(folder)
    assert chosen.git is None  # the walk's own rules, not git's
    assert set(chosen.files) == {".gitignore", "a" * 60 + ".md", "kept.md"}


def test_ignore_rules_answer_as_pathspec_does() -> None:
    """On a seeded corpus of rules (wildcards, ranges, negations, escapes, `**`, folders)
    and paths, every check gives pathspec.GitIgnoreSpec's answer: ignored, kept by a `!`
    rule, or not matched."""
    from imprint.ingest.ignore import IgnoreRules

    pieces = ["a", "b", "*", "?", "/", "**", "[a-b]", "[!a]", "!", "\\*", "]", "[", "x.y", "\\"]
    names = ["a", "b", "ab", "ba", "x.y", "*", "a/b", "b/a", "a/a/b", "ab/ba/", "a/", "a/b/"]
    names += ["[", "]", "!a", "a\\b", "a\nb", " a", "a "]
    rnd = random.Random(43)
    checked = 0
    for _ in range(1500):
        lines = [
            "".join(rnd.choice(pieces) for _ in range(rnd.randint(1, 4)))
            for _ in range(rnd.randint(1, 3))
        ]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # `re` warns of some ranges ("[[" nested sets)
            try:
                spec = pathspec.GitIgnoreSpec.from_lines(lines)
            except Exception:  # a rule pathspec refuses (re.error, ValueError): not compared
                continue
            mine = IgnoreRules.from_lines(lines)
            deeper = [
                "/".join(rnd.choice(["a", "b", "ab", "x.y"]) for _ in range(rnd.randint(1, 4)))
                + rnd.choice(["", "/"])
                for _ in range(4)
            ]
            for name in names + deeper:
                assert mine.check(name) == spec.check_file(name).include, (lines, name)
                checked += 1
    assert checked > 20_000


def test_hostile_rule_costs_linear_time_in_the_name() -> None:
    """Each instruction of the rule is visited at most once per character of the name (so
    ten times the name costs about ten times the work, not the power of the rule's stars):
    counted as instructions visited, not as wall-clock time."""
    from imprint.ingest import ignore

    rules = ignore.IgnoreRules.from_lines([HOSTILE_RULE])
    visits: list[int] = []
    real_add = ignore._Rule._add

    def counting(self, threads, seen, *args):  # type: ignore[no-untyped-def]
        before = len(seen)
        real_add(self, threads, seen, *args)
        visits[-1] += len(seen) - before

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ignore._Rule, "_add", counting)
        for n in (40, 400):
            visits.append(0)
            assert rules.check("a" * n) is None
            assert rules.check("a" * n + "b") is True
    size = len(rules._rules[0].prog)
    for n, seen in zip((40, 400), visits, strict=True):
        assert seen <= 2 * (n + 2) * size, (n, seen, size)  # two checks of n + 1 characters
    assert visits[1] < 12 * visits[0], visits


def test_a_walk_past_its_deadline_is_refused_and_changes_nothing(
    rt: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A walk that runs past its deadline is refused with one line naming the path, and
    nothing is ingested or removed (an earlier ingest of the folder stays whole)."""
    folder = _hostile_folder(tmp_path, 40)
    first = ingest_path(rt, folder, project="p")
    assert first.files == 2
    (folder / "kept.md").unlink()  # a complete walk would remove its chunks
    monkeypatch.setattr(files_mod, "WALK_TIMEOUT_SEC", -1.0)  # every walk is already late
    with pytest.raises(InputError) as refused:
        ingest_path(rt, folder, project="p")
    message = str(refused.value)
    assert message.startswith("path: walking ") and str(folder) in message
    assert "nothing was ingested or removed" in message and "\n" not in message
    assert lexical(rt, "knot")  # still indexed
    with pytest.raises(InputError):
        select_files(folder, deadline=time.monotonic() - 1)
