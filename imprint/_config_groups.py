"""Configuration groups below `imprint.config` (which re-exports them): the base every group
shares, and the groups of the hooks, of rolling backups and of redaction. Kept apart only to keep
`imprint/config.py` within 500 lines; `imprint.config` is where keys are read and set."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["BackupConfig", "HookTimeoutsConfig", "HooksConfig", "RedactConfig", "TeamConfig"]


class _Group(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True, frozen=False)


_EVERY_HOURS = "the daemon backs up into {data dir}/backups this often (hours); 0 = off"


def _hook_ms(default: int, what: str) -> Any:
    return Field(default=default, ge=50, le=60_000, description=f"ms {what} may take")


class BackupConfig(_Group):
    every_hours: float = Field(default=0.0, ge=0.0, le=8760.0, description=_EVERY_HOURS)
    keep: int = Field(default=7, ge=1, le=1000, description="rolling backups kept; older removed")


class HookTimeoutsConfig(_Group):
    session_start: int = _hook_ms(1500, "the session-start hook")
    prompt_submit: int = _hook_ms(300, "the prompt-submit hook")
    capture: int = _hook_ms(300, "a capture hook (its hand-off)")


class HooksConfig(_Group):
    context_chars: int = Field(
        default=2000, ge=200, le=20_000, description="the session-start briefing's budget"
    )
    prompt_submit: bool = Field(
        default=False, description="add memories relevant to each prompt (hooks install)"
    )
    timeout_ms: HookTimeoutsConfig = Field(default_factory=HookTimeoutsConfig)
    exclude: list[str] = Field(
        default_factory=list,
        description="projects or folders no hook briefs or captures (names, paths, globs)",
    )


class TeamConfig(_Group):
    """`imprint serve --http --database` (the team server); each key is also its option."""

    database: str = Field(
        default="", max_length=2000, description="PostgreSQL URL of the team store; empty = off"
    )
    issuer: str = Field(default="", max_length=2000, description="OAuth issuer URL of the tokens")
    resource: str = Field(
        default="", max_length=2000, description="this server's resource URL (the tokens' aud)"
    )
    teams_claim: str = Field(
        default="groups",
        min_length=1,
        max_length=100,
        description="the token claim naming the caller's teams",
    )
    host: str = Field(
        default="127.0.0.1", max_length=255, description="the team server's listen address"
    )


class RedactConfig(_Group):
    enabled: bool = Field(
        default=True,
        description="every write (store, kg_edit, ingest, import, sync) redacts secrets first",
    )
    keep_secrets_in: list[str] = Field(
        default_factory=list,
        description="workspaces whose writes keep secrets as given, for secrets stored on "
        "purpose (captured transcripts are redacted all the same)",
    )
