"""LLM tagging: with `tagger.llm` on, the model names a record's type, domains and topics.

The request goes through the one InferenceActor under a JSON schema and `tagger.timeout_sec`.
Any failure (no model, timeout, output that breaks the schema) falls back to the
deterministic tags; records say which tagged them (`tagged_by`: model or rules).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from imprint.actors.inference import CompleteRequest, ask_model
from imprint.logs import get_logger
from imprint.redact import redact
from imprint.store.records import RECORD_TYPES

if TYPE_CHECKING:
    from imprint.actors.lifecycle import Runtime

__all__ = ["TAG_SCHEMA", "ModelTags", "model_tags"]

log = get_logger("imprint.tagging")

TAG_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "type": {"enum": list(RECORD_TYPES)},
        "domains": {
            "type": "array",
            "items": {"type": "string", "maxLength": 30},
            "maxItems": 3,
        },
        "topics": {
            "type": "array",
            "items": {"type": "string", "maxLength": 30},
            "maxItems": 5,
        },
    },
    "required": ["type", "domains", "topics"],
    "additionalProperties": False,
}
# Fixed and first, so a local model reuses its evaluated state across calls.
SYSTEM = (
    "You label notes kept by a software developer. Reply with JSON only: "
    '{"type": one of ' + ", ".join(RECORD_TYPES) + ', "domains": up to 3 broad areas, '
    '"topics": up to 5 specific topics}. Lower-case words.'
)
MAX_INPUT_CHARS = 2000


class ModelTags(BaseModel):
    model_config = ConfigDict(frozen=True)

    type: str
    domains: tuple[str, ...]
    topics: tuple[str, ...]


def _words(values: list[str], limit: int) -> tuple[str, ...]:
    cleaned = (" ".join(v.lower().split())[:30] for v in values)
    return tuple(dict.fromkeys(v for v in cleaned if v))[:limit]


def model_tags(runtime: Runtime, text: str, source: str = "") -> ModelTags | None:
    """Tags from the model, or None (tagging off, or any failure: rules apply)."""
    cfg = runtime.config.tagger
    if not cfg.llm:
        return None
    head = f"Source: {source}\n\n" if source else ""
    request = CompleteRequest(
        messages=(
            {"role": "system", "content": SYSTEM},
            # The provider may be a service elsewhere, and tags need no secret: it reads the
            # text as the write gateway will store it, redacted.
            {"role": "user", "content": head + redact(text[:MAX_INPUT_CHARS])},
        ),
        deadline=time.monotonic() + cfg.timeout_sec,
        json_schema=TAG_SCHEMA,
        max_tokens=96,
        purpose="tag",
    )
    try:
        result = ask_model(runtime.inference(), request)
    except Exception as exc:  # tagging is best-effort: rules always work
        log.warning("tagging.failed", reason=type(exc).__name__, detail=str(exc))
        return None
    if not result.ok or not isinstance(result.data, dict):
        log.warning("tagging.fallback", outcome=result.outcome, detail=result.detail)
        return None
    data = result.data
    return ModelTags(
        type=str(data["type"]),
        domains=_words(list(data.get("domains", [])), 3),
        topics=_words(list(data.get("topics", [])), 5),
    )
