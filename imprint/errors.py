"""One exception tree. Every message is one line that names the argument and what is allowed."""

__all__ = [
    "ConfigError",
    "DeadlineExceeded",
    "ImprintError",
    "InputError",
    "ModelMissingError",
    "SkippedLate",
    "StoreBusyError",
    "StoreError",
    "WorkspaceError",
]


class ImprintError(Exception):
    """Base of every error Imprint raises on purpose."""


class InputError(ImprintError):
    """A caller's argument is not allowed; nothing was changed."""


class ConfigError(InputError):
    """A configuration key or value is not allowed."""


class WorkspaceError(InputError):
    """A workspace name is malformed or names no workspace."""


class StoreError(ImprintError):
    """The store could not do what was asked."""


class DeadlineExceeded(StoreError):
    """A read got no answer by the deadline of the call that caused it."""


class SkippedLate(DeadlineExceeded):
    """An actor took a message whose deadline had already passed and did not run it."""


class StoreBusyError(StoreError):
    """Another process owns this workspace's embedded store."""


class ModelMissingError(ImprintError):
    """A model file that a setting names is not installed."""
