"""What a newer statement says it replaces ("Dramatiq instead of Celery", "from Socket Mode
to the Events API", "pg-ops-1 is retired"): the rule capture links reversals by
(`imprint.capture.keep`) and the briefing leaves a replaced line out by
(`imprint.hooklib.compose`). The standard library only: the hook process lays briefings out.
"""

from __future__ import annotations

import re

__all__ = ["STOP", "names", "replaced_terms"]

# What a newer item says it replaces: "X instead of Y", "rather than Y", "from Y to X",
# "replace Y with X", "no longer Y", "over Y", "away from Y", "Y is being decommissioned":
# the words after the cue, up to three.
REPLACED = re.compile(
    r"(?i)\b(?:instead of|rather than|away from|no longer (?:use|uses|using|on|at|in)|"
    r"replac(?:e|es|ing|ed)|drop(?:ping|ped)?|over)\s+(?:the |a |an |our |using |plain )?"
    r"(`?[\w./@+-]+(?::\d+)?`?(?: (?!to\b|with\b|for\b|because\b|since\b|so\b)[\w./@+-]+){0,2})"
)
FROM_TO = re.compile(r"(?i)\bfrom\s+(?:the |a |an |our )?`?([\w./:@+-]+)(?: [\w./:@+-]+)?`?\s+to\b")
RETIRED = re.compile(
    r"(?i)`?([\w./:@+-]+)`? (?:is|was|has been|are|were) (?:being |now )?(?:decommissioned|"
    r"retired|deprecated|removed|shut down|gone|dropped)"
)
STOP = frozenset(
    {
        "a", "an", "the", "to", "of", "in", "on", "at", "for", "and", "or", "with", "we",
        "i", "it", "is", "are", "be", "this", "that", "our", "us", "use", "using", "now",
        "from", "by", "as", "was", "were", "will", "would", "should", "can", "new", "old",
        "one", "all", "any", "its", "it's", "please", "always", "never", "don't", "do",
        "not", "into", "than", "then", "there", "here", "so",
    }
)  # fmt: skip


def replaced_terms(sentence: str) -> tuple[str, ...]:
    """The named things a sentence says are replaced: "Dramatiq instead of Celery" gives
    ("celery",); "batch size 128 instead of 64" gives ("64",)."""
    found: list[str] = []
    for pattern in (FROM_TO, RETIRED):
        found.extend(m.group(1) for m in pattern.finditer(sentence))
    for match in REPLACED.finditer(sentence):
        found.extend(match.group(1).split())
    out = []
    for term in found:
        term = term.strip("`.,:;()'\"").lower()
        if term in STOP or term in out:
            continue
        if len(term) >= 3 or (term.isdigit() and len(term) >= 2):
            out.append(term)
    return tuple(out)


def names(term: str, text: str) -> bool:
    """Whether `text` names `term` as a word of its own (not inside a longer name)."""
    return re.search(rf"(?<![\w-]){re.escape(term)}(?![\w-])", text.lower()) is not None
