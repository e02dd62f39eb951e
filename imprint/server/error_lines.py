"""Errors as a client gets them: one short line, whatever size the refused value had."""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError

__all__ = ["MAX_ERROR_CHARS", "SHOWN_CHARS", "bounded", "one_line", "shown"]

SHOWN_CHARS = 80
# Pydantic names the member of a union it tried ("list[dict[str,any]]", "str"): not an argument.
_UNION_MEMBER = re.compile(r"^(str|int|float|bool|none|.*[\[\]].*)$")


def shown(value: Any) -> str:
    """A refused value as the error shows it: its repr, clipped, so a 100 KB argument does
    not come back as a 100 KB error."""
    text = repr(value)
    if len(text) <= SHOWN_CHARS:
        return text
    return f"{text[: SHOWN_CHARS - 1]}… ({len(text)} characters)"


_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
MAX_ERROR_CHARS = 600


def bounded(message: str) -> str:
    """An error as the client gets it: one line, each quoted value clipped as `shown`
    clips it, at most MAX_ERROR_CHARS. Many errors quote the refused argument, and a
    client can send megabytes; the error must still be one short line."""
    text = " ".join(message.split())

    def clip(match: re.Match[str]) -> str:
        quoted = match.group()
        if len(quoted) <= SHOWN_CHARS:
            return quoted
        return f"{quoted[: SHOWN_CHARS - 1]}… ({len(quoted)} characters)"

    text = _QUOTED.sub(clip, text)
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 1] + "…"


def one_line(exc: ValidationError) -> str:
    """The first argument error as `name: given value is not allowed; what is`."""
    err = exc.errors()[0]
    loc = [p for i, p in enumerate(err["loc"]) if i == 0 or not _UNION_MEMBER.match(str(p))]
    name = ".".join(str(p) for p in loc) or "arguments"
    if err["type"] == "missing":
        return f"{name}: required"
    given = err.get("input")
    return f"{name}: {shown(given)} is not allowed; {err['msg'].rstrip('.')}"
