"""Tool schemas as every client reads them: no generated titles, no null in a type."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["portable", "untitled"]

_SUBSCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMAS = ("items", "additionalProperties", "not", "contains")


def untitled(schema: Any) -> Any:
    """A JSON schema without its `title` keywords, written portably. Pydantic titles every
    argument with its own name re-cased ("max_chars" -> "Max Chars") and every tool's
    arguments "<tool>Arguments": about a fifth of tools/list, which every client loads at
    every session start, telling the calling model nothing. Property *names* are kept, so an
    argument called `title` survives. Each property is then `portable`."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: portable(untitled(sub)) for name, sub in value.items()}
        elif key in _SUBSCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: untitled(sub) for name, sub in value.items()}
        elif key in _SUBSCHEMA_LISTS and isinstance(value, list):
            out[key] = [untitled(sub) for sub in value]
        elif key in _SUBSCHEMAS:
            out[key] = untitled(value)
        else:
            out[key] = value
    return out


_NULL = {"type": "null"}


def portable(prop: dict[str, Any]) -> dict[str, Any]:
    """One argument's schema as every client reads it. An optional argument is simply
    optional: pydantic's `T | None = None` (`anyOf: [T, {type: null}]`) is listed as `T`
    with no default, since Gemini CLI rewrites type arrays and puts `null` into enums, and
    the Inspector's portability check refuses them. The tools still accept an explicit
    null (the listed schema is only what clients see). A default that says something
    (not null, not "") is also named in the description, since Codex drops `default`
    before the model sees it; an empty one is dropped: leaving the argument out is the
    same."""
    options = prop.get("anyOf")
    if isinstance(options, list) and _NULL in options:
        rest = [o for o in options if o != _NULL]
        prop = {k: v for k, v in prop.items() if k != "anyOf"}
        if len(rest) == 1 and isinstance(rest[0], dict) and not set(rest[0]) & set(prop):
            prop.update(rest[0])
        else:
            prop["anyOf"] = rest
    if "default" not in prop:
        return prop
    default = prop["default"]
    if default is None or default == "":
        return {k: v for k, v in prop.items() if k != "default"}
    description = prop.get("description", "")
    if "default" not in description:
        shown = default if isinstance(default, str) else json.dumps(default)
        prop = {**prop, "description": f"{description}; default {shown}".lstrip("; ")}
    return prop
