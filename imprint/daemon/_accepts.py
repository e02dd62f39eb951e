"""Which opening requests the SDK would answer exactly as the handshake snapshot says,
decided without MCP (the front runs before MCP's own imports have loaded).

Each check accepts a subset of what the SDK's own validation accepts: a request it turns
down is passed on, and the SDK answers it in its own words. The `_meta` keys are the MCP
spec's (tests/test_handshake.py holds them equal to the SDK's constants).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "CLIENT_CAPABILITIES_KEY",
    "CLIENT_INFO_KEY",
    "LOG_LEVELS",
    "LOG_LEVEL_KEY",
    "PROTOCOL_VERSION_KEY",
    "is_request",
    "legacy_plain_list",
    "modern_version",
    "well_formed_initialize",
]

PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL_KEY = "io.modelcontextprotocol/logLevel"
LOG_LEVELS = frozenset(
    {"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}
)
# Capabilities whose settings are objects of objects (`experimental`, `extensions`) or of
# optional objects (`elicitation`, `sampling`); `roots` takes any object.
_NESTED_CAPABILITIES = frozenset({"elicitation", "experimental", "extensions", "sampling"})
_INFO_TEXT = ("title", "description", "websiteUrl")


def is_request(msg: object) -> bool:
    """A JSON-RPC 2.0 request as the SDK reads one: a string method and an id that is a
    string or an integer (a line with any other id is refused, never answered)."""
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
        return False
    rid = msg.get("id")
    id_ok = isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool))
    params = msg.get("params")
    return (
        id_ok
        and isinstance(msg.get("method"), str)
        and (params is None or isinstance(params, dict))
    )


def well_formed_initialize(params: object) -> bool:
    """What the SDK's own validation of `initialize` params needs; anything else goes to the
    SDK, which answers it in its own words."""
    if not isinstance(params, dict):
        return False
    info = params.get("clientInfo")
    return (
        isinstance(params.get("protocolVersion"), str)
        and isinstance(params.get("capabilities"), dict)
        and isinstance(info, dict)
        and isinstance(info.get("name"), str)
        and isinstance(info.get("version"), str)
    )


def legacy_plain_list(params: object) -> bool:
    """A handshake-era tools/list the SDK answers with the whole list: no params, or only a
    `_meta` without the 2026 envelope (a legacy session refuses that) and with a progress
    token, if any, that is a string or an integer."""
    if params is None:
        return True
    if not isinstance(params, dict) or set(params) - {"_meta"}:
        return False
    meta = params.get("_meta")
    if meta is None:
        return True
    return isinstance(meta, dict) and PROTOCOL_VERSION_KEY not in meta and _token_ok(meta)


def modern_version(params: object, served: dict[str, Any]) -> str | None:
    """The protocol version of a plain 2026-era request (only a `_meta` envelope in its
    params, no cursor) that the SDK accepts as it stands, if `served` has it; else None."""
    if not isinstance(params, dict) or set(params) != {"_meta"}:
        return None
    meta = params["_meta"]
    if not isinstance(meta, dict) or not _token_ok(meta):
        return None
    version = meta.get(PROTOCOL_VERSION_KEY)
    if not isinstance(version, str) or version not in served:
        return None
    if not _capabilities_ok(meta.get(CLIENT_CAPABILITIES_KEY)):
        return None
    if CLIENT_INFO_KEY in meta and not _info_ok(meta[CLIENT_INFO_KEY]):
        return None
    level = meta.get(LOG_LEVEL_KEY)
    return version if level is None or level in LOG_LEVELS else None


def _token_ok(meta: dict[str, Any]) -> bool:
    token = meta.get("progressToken")
    return token is None or isinstance(token, str) or type(token) is int


def _capabilities_ok(caps: object) -> bool:
    if not isinstance(caps, dict):
        return False
    for name, value in caps.items():
        if name == "roots" and not isinstance(value, dict):
            return False
        if name in _NESTED_CAPABILITIES and not (
            isinstance(value, dict) and all(isinstance(v, dict) for v in value.values())
        ):
            return False
    return True


def _info_ok(info: object) -> bool:
    if not isinstance(info, dict) or "icons" in info:
        return False
    if not (isinstance(info.get("name"), str) and isinstance(info.get("version"), str)):
        return False
    return all(info.get(key) is None or isinstance(info[key], str) for key in _INFO_TEXT)
