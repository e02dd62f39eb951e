"""Imprint: a local-first memory server for AI coding assistants."""

__all__ = ["__version__"]

__version__ = "0.1.0"
