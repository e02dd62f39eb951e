"""Helpers shared by tests (moved unchanged from the test module of the same name)."""

from __future__ import annotations

import secrets
import string


def _github_token() -> str:
    """A fresh fake key in GitHub's classic token format (never a committed literal)."""
    alphabet = string.ascii_letters + string.digits
    return "gh" + "p_" + "".join(secrets.choice(alphabet) for _ in range(36))


def _aws_key() -> str:
    return (
        "AK" + "IA" + "".join(secrets.choice(string.ascii_uppercase + "234567") for _ in range(16))
    )
