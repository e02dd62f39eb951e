"""The local model's refinement of a session summary: one line saying what the session did,
put under the rule-based summary's first line.

Only where the model path is on: `recall.llm` and a tagger provider that runs on this
computer (the same switch recall's model path uses; a remote provider never sees a
transcript), within `capture.REFINE_SEC` (or `recall.llm_timeout_sec`, if shorter). The
rule-based summary is the default and the fallback: a model that is off, late, failing or
answering out of schema leaves it as it is. The model reads the summary (redacted already)
and its line is redacted again before it is kept.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from imprint.actors.inference import CompleteRequest, ask_model
from imprint.errors import ImprintError
from imprint.logs import get_logger
from imprint.providers import is_local
from imprint.redact import redact

if TYPE_CHECKING:
    from imprint.actors.lifecycle import Runtime

__all__ = ["REFINE_SEC", "model_path_on", "refine_summary"]

log = get_logger("imprint.capture")

REFINE_SEC = 20.0  # the capture runs in the background; this bounds its hold on the model
GIST_CHARS = 240
_SCHEMA = {
    "type": "object",
    "properties": {"gist": {"type": "string", "minLength": 10, "maxLength": 400}},
    "required": ["gist"],
    "additionalProperties": False,
}
_SYSTEM = (
    "You summarise a coding session for the developer's memory. From the notes given, write "
    "one sentence (at most 40 words) saying what was done and what was decided or fixed. "
    'Use only what the notes say. Answer as JSON: {"gist": "..."}.'
)


def model_path_on(runtime: Runtime) -> bool:
    cfg = runtime.config
    return cfg.recall.llm and is_local(cfg.tagger.provider, cfg.tagger.base_url)


def refine_summary(runtime: Runtime, summary: str) -> str:
    """`summary` with the model's one line under its first line, or `summary` unchanged."""
    if not model_path_on(runtime):
        return summary
    budget = min(REFINE_SEC, runtime.config.recall.llm_timeout_sec)
    request = CompleteRequest(
        messages=(
            {"role": "system", "content": _SYSTEM},
            {"role": "user", "content": summary},
        ),
        deadline=time.monotonic() + budget,
        json_schema=_SCHEMA,
        max_tokens=120,
        purpose="capture.summary",
    )
    try:
        done = ask_model(runtime.inference(), request)
    except ImprintError as exc:  # the model path failing never fails the capture
        log.warning("capture.summary.model", outcome="error", error=type(exc).__name__)
        return summary
    log.info("capture.summary.model", outcome=str(done.outcome), run_ms=round(done.run_ms))
    if not done.ok or not isinstance(done.data, dict):
        return summary
    gist = " ".join(redact(str(done.data.get("gist", ""))).split())
    if not gist:
        return summary
    if len(gist) > GIST_CHARS:
        gist = gist[: GIST_CHARS - 1].rstrip() + "…"
    head, _, rest = summary.partition("\n")
    return "\n".join(part for part in (head, f"In short: {gist}", rest) if part)
