"""Words as search sees them: identifiers split, a light stem, and the query's content terms.

Both the lexical index (which words a chunk is found by) and the hybrid re-rank (how much of
a query a chunk covers) use these, so `ActorRef.stop`, `actor_ref.stop()` and "stop on an
actor ref" reduce to the same words.
"""

from __future__ import annotations

import functools
import re

__all__ = ["content_terms", "holds_term", "identifier_parts", "stem", "words"]

_TOKEN = re.compile(r"\w+", re.UNICODE)
# One piece of a CamelCase or mixedCase word: an acronym before a capitalised word
# (`HTTP` in `HTTPServer`), a capitalised or lower-case run, another upper-case run, digits.
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
# Function words a developer's question carries that say nothing about which chunk answers.
_STOP = (
    "a about an and are as at be been but by can could did do does for from get got has "
    "have how i if in into is it its me my no not of on or our should so than that the "
    "their them then there these they this to up use using via vs was we what when where "
    "which who why will with would you your"
)
STOPWORDS = frozenset(_STOP.split())
_SUFFIXES = ("ies", "ing", "es", "ed", "s")


def identifier_parts(token: str) -> list[str]:
    """`read_only_hint` -> read, only, hint; `ActorRef` -> Actor, Ref; a plain word -> itself."""
    if _plain(token):
        return [token]
    parts = [p for piece in token.split("_") for p in _CAMEL.findall(piece)]
    return parts if len(parts) > 1 else [token]


def _plain(token: str) -> bool:
    # Fast path: no underscore and no case change after the first letter (most words).
    return "_" not in token and (token[1:].islower() or token.isupper() or token.isdigit())


def words(text: str) -> list[str]:
    """Lower-case words of a text, each identifier followed by its parts when it has several."""
    out: list[str] = []
    for token in _TOKEN.findall(text):
        out.append(token.lower())
        parts = identifier_parts(token)
        if len(parts) > 1:
            out.extend(p.lower() for p in parts)
    return out


def stem(word: str) -> str:
    """A light suffix strip (plural, -ing, -ed): enough for coverage, not a linguist's stem."""
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def content_terms(text: str) -> frozenset[str]:
    """The stemmed words of a text that are neither function words nor single letters."""
    out: set[str] = set()
    for token in set(_TOKEN.findall(text)):  # each distinct token once
        for word in (token, *identifier_parts(token)) if not _plain(token) else (token,):
            low = word.lower()
            if len(low) > 1 and low not in STOPWORDS:
                out.add(stem(low))
    return frozenset(out)


def holds_term(text: str, term: str, lowered: str | None = None) -> bool:
    """Whether `term` (one of `content_terms`) is among the content terms of `text`.

    The same answer as `term in content_terms(text)` without reading every word: a word that
    stems to `term` contains it, so only the words around its occurrences are looked at.
    `lowered` is `text.lower()` when the caller has it (one text, several terms).
    """
    low = text.lower() if lowered is None else lowered
    at = low.find(term)
    while at >= 0:
        match = _WORD_AT.match(text, _word_start(text, at))
        if match and term in _token_terms(match.group()):
            return True
        at = low.find(term, at + len(term))
    return False


_WORD_AT = re.compile(r"\w+")


def _word_start(text: str, at: int) -> int:
    while at > 0 and (text[at - 1].isalnum() or text[at - 1] == "_"):
        at -= 1
    return at


@functools.lru_cache(maxsize=8192)
def _token_terms(token: str) -> frozenset[str]:
    return content_terms(token)
