"""Helpers shared by tests (moved unchanged from the test module of the same name)."""

from __future__ import annotations

DUMMY_KEY = "dummy"  # the clients need a key; the loopback model reads none
