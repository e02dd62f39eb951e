"""Typed observations from a captured turn, by rule: what a session decided, fixed, asked to
be kept, learnt about the project's world, and left broken.

Five kinds, each a memory of its own type (`RECORD_TYPE`):

- decision: what was chosen ("we'll use X", "let's go with X", "decided to", "switch to"),
  from the user's or the assistant's words, with the reason where the next sentence gives
  one ("because ...");
- fix: a fix stated as done ("Fixed: ...", "the fix was", "root cause", "was caused by"),
  with the files the turn edited;
- preference: a standing instruction of the user's ("from now on", "always", "never",
  "prefer", "don't");
- fact: the world changed ("moved to", "is now on", "since 2026-11-15", "no longer",
  "renamed to"), valid from the date the sentence names, else the turn's;
- open problem: an error no later call got past by the end of what was captured.

Precision comes first (a wrong memory is worse than a missing one): questions, plans ("I'll
fix", "let me"), hypotheticals ("if", "should we", "maybe") and text quoting code are left
out. All text here is redacted already. Each observation also names what it replaces ("X
instead of Y", "from Y to X", "no longer Y"), which `imprint.capture.session` uses to find
the older memory it supersedes.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

from imprint._replaced import STOP as _STOP
from imprint._replaced import replaced_terms
from imprint.capture.transcript import ToolCall, Turn

__all__ = [
    "KIND",
    "OPEN_KIND",
    "RECORD_TYPE",
    "Observation",
    "content_words",
    "error_words",
    "observe_turn",
    "open_problem",
    "replaced_terms",
    "subject_words",
    "values",
]

# The memory type each observation is stored as (`imprint.store.records.RECORD_TYPES`).
RECORD_TYPE = {
    "decision": "decision",
    "fix": "bug",
    "preference": "preference",
    "fact": "finding",
    "open": "bug",
}
KIND = "observation"  # the record kind of what capture extracted (a stored memory: `memory`)
OPEN_KIND = "open-problem"  # an open problem's kind: a briefing section of its own
OBSERVATION_CHARS = 320

_EDIT_TOOLS = {"Edit", "Write", "MultiEdit", "apply_patch", "write_file", "replace", "edit"}
_SENTENCE = re.compile(r"(?<=[.!;])\s+(?=[A-Z0-9\"'`(])|\n+")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
# Markdown emphasis and headings; a single underscore is an identifier's (max_pool_size).
_MARKUP = re.compile(r"\*\*|__(?=\w)|(?<=\w)__|^#+\s*")
# What opens a reply without saying anything: "OK, ", "Agreed. ", "Understood: ".
_FILLER = re.compile(
    r"(?i)^(?:(?:ok(?:ay)?|agreed|understood|noted|got it|sure|done|yes|right|thanks|"
    r"good|great|actually|on reflection|also|and|so|fyi)\b[,.:!]?\s*)+"
)

_NOT_STATED = re.compile(
    r"(?i)(?:\?|^\s*(?:if|when|whether|should|could|would|can|do|does|did|is|are|maybe|"
    r"perhaps|consider|what|which|how|why)\b|\b(?:should we|could we|shall we|do you want|"
    r"would you like|i(?:'d| would) suggest|we could|you could|might want|not sure|"
    r"let me|i'll (?:fix|look|check|try|investigate|run)|i will (?:fix|look|check|try)|"
    r"going to (?:fix|look|check|try)|trying to|need to fix|to fix (?:this|it)|"
    r"not (?:yet )?fixed|still (?:fail|broken|happen))\b)"
)
# "we'll <verb>" and "let's <verb>" state a choice only with a verb of choosing or of how
# things are done from now on; "let's add a test", "let's check" are steps, not decisions.
_CHOOSING = (
    r"(?:use|go with|switch|keep|stick with|adopt|move|version|pin|drop|send|store|generate|"
    r"support|deploy|replace|migrate|standardi[sz]e|put|run \S+ (?:on|in|as)|take|retry|"
    r"compress|render|cache|stop using|require|default|host|serve|ship|write \S+ in|"
    r"encrypt|split|limit)\b"
)
_DECISION = re.compile(
    r"(?i)\b(?:(?:we|i)(?:'ve| have)? decided|decision(?: is|:)|decided (?:to|on|that)|"
    rf"we(?:'ll| will|'re going to| are going to) {_CHOOSING}|"
    rf"let'?s {_CHOOSING}|"
    r"(?:we're |we are |i'm )?going with|we (?:chose|picked|settled on|standardi[sz]ed on)|"
    r"(?:^|\. )(?:use|go with) \S+ (?:instead of|rather than)|"
    r"switch(?:ing|ed)? (?:\S+ ){0,5}(?:from \S+ )?to\b|we(?:'re| are) switching|"
    r"replac(?:e|ing|ed) \S+(?: \S+){0,3} with\b)"
)
_FIX = re.compile(
    r"(?i)(?:^fix(?:ed)?\s*:|\b(?:the fix (?:is|was)|fixed (?:it|this|the|by|a|an|in)|"
    r"this fixes|that fixes|now fixed|is fixed|root cause|was caused by|"
    r"the (?:bug|problem|issue|failure|error) was|resolved (?:it |this )?by)\b)"
)
# A change the assistant says it made, and how ("I've modified the git log command to use
# the range base..branch instead of just branch"): a fix when the turn edited files.
_CHANGED = re.compile(
    r"(?i)^(?:i|we)(?:'ve| have) (?:modified|changed|updated|rewritten|reworked|adjusted) "
    r"(?:\S+ ){1,8}?(?:to (?:use|only|pass|return|read|call|accept|include|skip|check)|"
    r"so (?:that )?(?:it|they)|instead of)\b"
)
# What a stated change does, said in the next sentence ("This will now only show ...").
_EFFECT = re.compile(r"(?i)^(?:this|that|it) (?:will now|now|means|ensures|way)\b")
_PREFERENCE = re.compile(
    r"(?i)(?:\bfrom now on\b|\bgoing forward\b|\bin (?:the )?future\b|"
    r"^(?:please,? )?(?:always|never|don'?t|do not|avoid|prefer)\b|"
    r"\bi (?:prefer|'d prefer|would prefer|like|want) (?:\S+ ){0,6}(?:over|instead|rather)\b|"
    r"\bi prefer\b|\b(?:always|never) (?:use|write|run|add|put|call|commit|push|format|name|"
    r"keep|include|mention|ask|prefix|sign|squash|rebase|touch|edit|change)\b)"
)
# A value a fact can name: a host, a URL, a path, an identifier with digits or dashes.
_VALUE = r"(?:[a-z][\w-]*\.[\w.-]+|[\w-]+://\S+|\S*\d\S*|[a-z]+-[\w-]+|/[\w/.-]+)"
_FACT = re.compile(
    r"(?i)\b(?:(?:has |have |was |were )?(?:moved|migrated|relocated) (?:from \S+ )?to|"
    r"(?:is|are) now (?:on|at|in|called|hosted|served|running|deployed|pinned|owned|"
    r"handled|behind|\S+ed\b)|now (?:lives|runs|points|resides|sits|listens) (?:on|at|in|to)|"
    r"no longer (?:\S+ ){0,3}(?:on|at|in|uses?|exists?|runs?|supported|available)|"
    r"(?:has been |was |got )?renamed (?:\S+ ){0,3}to|(?:lives|runs) on \S+ since|"
    r"since \d{4}-\d{2}-\d{2}|"
    rf"(?:runs|lives|is hosted|is served|are served|is delivered|are delivered|listens) "
    rf"(?:on|at|to|from) (?:port \d+ on )?`?{_VALUE})"
)
_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_REASON = re.compile(r"(?i)^(?:because|since|so that|that way|the reason|this is because|as )")
_CODE_LIKE = re.compile(r"[{};]\s*$|^\s*(?:def|class|import|from|return|\$|>>>)\s")
_WORD = re.compile(r"[a-z0-9][a-z0-9._+-]*[a-z0-9]|[a-z0-9]")


@dataclass(frozen=True)
class Observation:
    """One thing a turn settled; `at` is when it was said (epoch seconds)."""

    kind: str  # decision | fix | preference | fact | open
    text: str
    at: float
    files: tuple[str, ...] = ()
    replaces: tuple[str, ...] = field(default=())  # the things it says it replaces


def _clean(sentence: str) -> str:
    one = " ".join(_MARKUP.sub("", _BULLET.sub("", sentence)).split()).strip(" -:")
    bare = _FILLER.sub("", one)
    return bare[:1].upper() + bare[1:] if bare else one


def _sentences(text: str) -> list[str]:
    out = []
    for line in text.split("\n"):
        pieces = _SENTENCE.split(line)
        for n, raw in enumerate(pieces):
            # A ";" the line goes on after ("...; I'll update config.xml") ends a clause, not
            # a line of code: only a line's last ";" can be code's.
            clean = _clean(raw.rstrip().removesuffix(";") if n < len(pieces) - 1 else raw)
            if clean:
                out.append(clean)
    return out


def _stated(sentence: str) -> bool:
    return (
        12 <= len(sentence) <= 400
        and not _NOT_STATED.search(sentence)
        and not _CODE_LIKE.search(sentence)
    )


def _clip(text: str) -> str:
    return text if len(text) <= OBSERVATION_CHARS else text[: OBSERVATION_CHARS - 1] + "…"


def _word_set(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _STOP]


def values(text: str) -> set[str]:
    """The parts of the values a sentence names (hosts, URLs, identifiers): `pg-staging-3`
    gives {"pg", "staging"} (digits apart: they are what changes)."""
    parts: set[str] = set()
    for value in re.findall(_VALUE, text.lower()):
        for part in re.split(r"[.:/@_-]+|\d+", value):
            if len(part) >= 2 and part not in _STOP and part not in ("https", "http", "www"):
                parts.add(part)
    return parts


def content_words(text: str) -> set[str]:
    return set(_word_set(text))


def subject_words(text: str) -> tuple[str, ...]:
    """The content words of what a fact sentence is about: the words before its verb ("the
    staging database moved to ..." gives ("staging", "database"))."""
    cut = _FACT.search(text)
    head = text[: cut.start()] if cut else text
    head = re.sub(r"(?i)^since \d{4}-\d{2}-\d{2},?\s*", "", head)
    return tuple(w for w in _word_set(head) if not w.isdigit())[-4:]


def _dated(sentence: str, at: float) -> float:
    match = _DATE.search(sentence)
    if match is None:
        return at
    try:
        day = datetime(int(match[1]), int(match[2]), int(match[3]), tzinfo=UTC).timestamp()
    except ValueError:
        return at
    return day if 0 < day <= (at or time.time()) + 86_400 else at


def _edited(tools: list[ToolCall]) -> tuple[str, ...]:
    files: list[str] = []
    for call in tools:
        if call.name not in _EDIT_TOOLS or call.is_error:
            continue
        for key in ("file_path", "path", "notebook_path"):
            value = call.input.get(key)
            if isinstance(value, str) and value and value not in files:
                files.append(value)
        patch = call.input.get("input") or call.input.get("patch")
        if isinstance(patch, str):
            for m in re.finditer(r"^\*\*\* (?:Update|Add) File: (.+)$", patch, re.MULTILINE):
                if m.group(1) not in files:
                    files.append(m.group(1).strip())
    return tuple(files[:6])


def _with_reason(sentences: list[str], index: int) -> str:
    text = sentences[index]
    if index + 1 < len(sentences) and _REASON.match(sentences[index + 1]):
        text = f"{text} {sentences[index + 1]}"
    return text


def _with_effect(sentences: list[str], index: int) -> str:
    text = sentences[index]
    if index + 1 < len(sentences) and _EFFECT.match(sentences[index + 1]):
        text = f"{text} {sentences[index + 1]}"
    return text


def observe_turn(turn: Turn, at: float = 0.0) -> list[Observation]:
    """The observations one turn states, in the order it states them."""
    when = turn.at or at or time.time()
    found: list[Observation] = []
    seen: set[str] = set()

    def keep(kind: str, text: str, files: tuple[str, ...] = (), day: float = 0.0) -> None:
        text = _clip(text)
        key = " ".join(_word_set(text))
        if key in seen:
            return
        seen.add(key)
        found.append(Observation(kind, text, day or when, files, replaced_terms(text)))

    prompt = _sentences(turn.prompt) if turn.prompt else []
    for i, sentence in enumerate(prompt):
        if not _stated(sentence):
            continue
        if _PREFERENCE.search(sentence):
            keep("preference", _with_reason(prompt, i))
        elif _DECISION.search(sentence):
            keep("decision", _with_reason(prompt, i))
        elif _FACT.search(sentence):
            keep("fact", sentence, day=_dated(sentence, when))
    files = _edited(turn.tools)
    for text in turn.texts:
        said = _sentences(text)
        for i, sentence in enumerate(said):
            if not _stated(sentence):
                continue
            if _FIX.search(sentence):
                keep("fix", _with_reason(said, i), files)
            elif files and _CHANGED.search(sentence):
                keep("fix", _with_effect(said, i), files)
            elif _DECISION.search(sentence):
                keep("decision", _with_reason(said, i))
            elif _FACT.search(sentence):
                keep("fact", sentence, day=_dated(sentence, when))
    return found


_TOOL_HEAD = re.compile(r"^[\w.:-]+: ")
_EXIT_NOISE = re.compile(r"\s*(?:\(exit code -?\d+\)|Exit Code: -?\d+)\s*$", re.IGNORECASE)


def error_words(error: str) -> set[str]:
    """The words that name an error (its message, not the tool that printed it)."""
    return {w for w in _word_set(_TOOL_HEAD.sub("", error)) if len(w) >= 4 and not w.isdigit()}


def open_problem(error: str, at: float) -> Observation | None:
    """The open problem an error no later call got past leaves, as an observation."""
    line = _EXIT_NOISE.sub("", _TOOL_HEAD.sub("", " ".join(error.split())))
    if len(line) < 8:
        return None
    return Observation("open", _clip(f"Unresolved: {line}"), at)
