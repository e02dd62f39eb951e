"""A search's arguments: as its caller asks it (`SearchArgs`: the tool's, the CLI's, the
dashboard's or a recall step's) and resolved against `search.*` once, at the edge
(`Search`, from `SearchArgs.resolve`), with the clamps and checks of the values typed in.
`imprint.reads.search` runs a resolved search.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict

from imprint.config import SearchConfig
from imprint.errors import InputError
from imprint.reads.layout import (
    clamp,
)
from imprint.store.lexical import check_query
from imprint.store.records import RECORD_TYPES, Filters

__all__ = [
    "HINT",
    "MAX_CHARS_RANGE",
    "MODES",
    "SINCE_POOL",
    "Mode",
    "Search",
    "SearchArgs",
    "checked_mode",
    "normalize_max_chars",
    "parse_since",
]

Mode = Literal["hybrid", "semantic", "lexical"]
MODES: tuple[str, ...] = ("hybrid", "semantic", "lexical")

MAX_CHARS_RANGE = (1200, 12000)
HINT = "raise max_chars (up to 12000) or narrow with project, type, lang or layer"
# The candidates each list of a search with `since` asks for, so that older records it drops
# leave newer ones to show.
SINCE_POOL = 150


def normalize_max_chars(max_chars: int) -> int:
    return clamp(max_chars, *MAX_CHARS_RANGE)


def checked_mode(mode: str | None) -> Mode | None:
    """A mode typed in where nothing checked it yet (the CLI, the dashboard)."""
    if mode is not None and mode not in MODES:
        raise InputError(f"mode: {mode!r} is not allowed; one of {', '.join(MODES)}")
    return mode  # type: ignore[return-value]  # one of MODES, checked above


def parse_since(value: str, argument: str = "since") -> float:
    """An ISO date (`2026-11-30`, UTC) or date and time as epoch seconds; 0.0 for empty."""
    text = value.strip() if isinstance(value, str) else ""
    if not text:
        return 0.0
    try:
        if len(text) == 10:
            moment = datetime.combine(date.fromisoformat(text), datetime.min.time())
        else:
            moment = datetime.fromisoformat(text)
    except ValueError as exc:
        msg = f"{argument}: {value!r} is not an ISO date; give YYYY-MM-DD (UTC)"
        raise InputError(msg) from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


class Search(NamedTuple):
    """A search resolved: defaults from `search.*`, query and type checked, limit clamped;
    `since` in epoch seconds (0.0: any age)."""

    mode: Mode
    text: str
    limit: int
    filters: Filters
    include_superseded: bool = False
    since: float = 0.0
    by_chunk: bool = False  # every matching chunk its own hit, not one hit per source


class SearchArgs(BaseModel):
    """A search as its caller asks it: the tool's, the CLI's, the dashboard's arguments or a
    recall step's. `limit` and `mode` None come from `search.limit` and `search.mode`."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    query: str
    project: str = ""
    type: str = ""
    lang: str = ""
    layer: str = ""
    limit: int | None = None
    mode: Mode | None = None
    include_superseded: bool = False
    since: str = ""
    by_chunk: bool = False

    def with_defaults(self, cfg: SearchConfig) -> dict[str, object]:
        """Every argument, the defaults from `search.*` filled in (what tells two recall
        steps apart)."""
        return {
            **self.model_dump(),
            "limit": cfg.limit if self.limit is None else self.limit,
            "mode": cfg.mode if self.mode is None else self.mode,
        }

    def resolve(self, cfg: SearchConfig) -> Search:
        """This search as `search_rows` runs it; raises InputError for a query or type it
        refuses."""
        text = self.query.strip()
        if not text:
            raise InputError("query: must be non-empty text")
        check_query(text, "query")
        if self.type and self.type not in RECORD_TYPES:
            types = ", ".join(RECORD_TYPES)
            raise InputError(f"type: {self.type!r} is not allowed; one of {types}")
        return Search(
            mode=cfg.mode if self.mode is None else self.mode,
            text=text,
            limit=clamp(cfg.limit if self.limit is None else self.limit, 1, 50),
            filters=Filters(project=self.project, type=self.type, lang=self.lang, layer=self.layer),
            include_superseded=self.include_superseded,
            since=parse_since(self.since),
            by_chunk=self.by_chunk,
        )
