"""FTS5 query building and the BM25 ranking: the query caps, the quoting that makes user text
inert, and the bound that keeps an any-of-the-words query's cost from growing with the store."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence

from imprint.errors import InputError
from imprint.store.records import Filters
from imprint.store.schema import filter_clause
from imprint.store.text import identifier_parts
from imprint.types import MemoryId

__all__ = [
    "MAX_QUERY_CHARS",
    "MAX_QUERY_TERMS",
    "TERM_DOC_BUDGET",
    "bm25_ranking",
    "check_query",
    "fts_phrase",
    "fts_terms",
    "last_rowid",
    "rare_words",
]

_WORD = re.compile(r"\w+", re.UNICODE)
# The any-of-the-words BM25 query ranks every record holding any word, so its cost grows with
# the store. Above this many records it keeps the query's rarest words, while the records
# holding them add up to at most this many; common words (which BM25 weighs least) go.
TERM_DOC_BUDGET = 5000
# bm25() first counts every record holding each of its terms, so in such a store it ranks
# only words held by at most TERM_DOC_BUDGET records. The exact phrase (a phrase of common
# words may be in many records) and a query whose every word is over the budget take their
# newest matches instead, unscored: newest first is the order FTS5 walks, so LIMIT ends it.
MAX_QUERY_CHARS = 2000
MAX_QUERY_TERMS = 200


def check_query(text: str, argument: str) -> str:
    """A query within the caps (a 3.9 MB query once took 42 s), or a one-line InputError."""
    if len(text) > MAX_QUERY_CHARS:
        raise InputError(
            f"{argument}: {len(text)} characters; at most {MAX_QUERY_CHARS} (ask in fewer words)"
        )
    terms = len(_WORD.findall(text))
    if terms > MAX_QUERY_TERMS:
        raise InputError(
            f"{argument}: {terms} terms; at most {MAX_QUERY_TERMS} (ask in fewer words)"
        )
    return text


def fts_terms(query: str) -> str:
    """Any of the query's words, each quoted so FTS5 syntax in user text is inert.

    A CamelCase word also matches its parts as a phrase, so `readOnlyHint` finds text that
    writes `read_only_hint` or "read only hint" (the tokenizer already splits at `_` and `.`);
    a snake_case word also matches its parts run together, so `actor_ref` finds `ActorRef`
    (and a symbol path `ActorRef.tell` is a phrase of `actorref` and `tell` to the index).
    """
    terms = []
    for word in _WORD.findall(query):
        parts = identifier_parts(word)
        if len(parts) > 1 and "_" not in word:
            terms.append(f'("{word}" OR "{" ".join(parts)}")')
        elif len(parts) > 1:
            terms.append(f'("{word}" OR "{"".join(parts)}")')
        else:
            terms.append(f'"{word}"')
    return " OR ".join(terms)


def fts_phrase(query: str) -> str:
    words = _WORD.findall(query)
    return '"' + " ".join(words) + '"' if len(words) > 1 else ""


def last_rowid(conn: sqlite3.Connection) -> int:
    """The store's size, as the budget counts it (rowids only grow)."""
    return int(conn.execute("SELECT max(rowid) FROM records").fetchone()[0] or 0)


def rare_words(conn: sqlite3.Connection, words: Sequence[str], last: int) -> tuple[list[str], bool]:
    """The words worth an any-of-the-words query (see `SqliteReader.rare_words`; `last`:
    `last_rowid(conn)`), and whether what it kept is over the budget (every word was)."""
    if last <= TERM_DOC_BUDGET or not words:
        return list(words), False
    counted: dict[str, int] = {}
    for word in dict.fromkeys(words):
        counted[word] = conn.execute(
            "SELECT count(*) FROM (SELECT rowid FROM records_fts WHERE records_fts MATCH ? "
            "LIMIT ?)",
            [f'"{word}"', TERM_DOC_BUDGET + 1],
        ).fetchone()[0]
    kept: set[str] = set()
    total = 0
    for word in sorted(counted, key=lambda w: (counted[w], -len(w))):
        if total and total + counted[word] > TERM_DOC_BUDGET:
            break
        kept.add(word)
        total += counted[word]
    return [w for w in words if w in kept], total > TERM_DOC_BUDGET


def bm25_ranking(
    conn: sqlite3.Connection, query: str, limit: int, filters: Filters, *, phrase_only: bool
) -> tuple[list[tuple[MemoryId, float]], int]:
    """The BM25 ranking `SqliteReader.match` gives, and how many of its first hits hold the
    exact phrase."""
    where, params = filter_clause(filters)
    extra = f" AND {where}" if where else ""
    joined = (
        "FROM records_fts JOIN records r ON r.rowid = records_fts.rowid "
        f"WHERE records_fts MATCH ?{extra}"
    )
    matched = f"SELECT r.id AS id, bm25(records_fts) AS rank {joined}"
    newest = f"SELECT r.id, 0.0 {joined}"
    # Unfiltered, the ranking is read from the FTS index alone and only the rows kept
    # are joined for their ids (joined first, every matching row was: a third of the
    # time when a common word matches most records).
    scored = (
        "SELECT records_fts.rowid, bm25(records_fts) AS rank FROM records_fts "
        "WHERE records_fts MATCH ?"
    )
    pool = matched if where else scored
    by_id = "SELECT r.id, f.rank FROM ({}) AS f CROSS JOIN records AS r ON r.rowid = f.rowid"
    last = last_rowid(conn)
    large = last > TERM_DOC_BUDGET
    seen: dict[MemoryId, float] = {}
    phrased = -1  # the words' turn comes after the phrase's: the hits seen by then
    exprs = (fts_phrase(query),) if phrase_only else (fts_phrase(query), None)
    for expr in exprs:
        if expr is None:
            phrased = len(seen)
        if len(seen) >= limit:
            continue
        unscored = large
        if expr is None:  # counted only when the phrase left room
            words, unscored = rare_words(conn, _WORD.findall(query), last)
            expr = fts_terms(" ".join(words)) if words else ""
        if not expr:
            continue
        if unscored:
            sql = f"{newest} ORDER BY records_fts.rowid DESC LIMIT ?"
            args = [expr, *params, limit]
        else:
            ranked = f"{pool} ORDER BY rank LIMIT ?"
            args = [expr, *params, limit]
            if large:  # a CamelCase word's parts, uncounted, may still be common
                ranked = (
                    f"SELECT * FROM ({pool} ORDER BY records_fts.rowid DESC LIMIT ?) "
                    "ORDER BY rank LIMIT ?"
                )
                args = [expr, *params, TERM_DOC_BUDGET, limit]
            sql = ranked if where else by_id.format(ranked)
        for rid, rank in conn.execute(sql, args):
            if rid not in seen:
                seen[MemoryId(rid)] = 0.0 - float(rank)  # not -0.0 for the phrase's
    if phrased < 0:
        phrased = len(seen)
    return list(seen.items())[:limit], min(phrased, limit)
