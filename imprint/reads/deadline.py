"""`imprint.actors.deadline` by its old address: the hook's briefing, the session capture
and the imports (being moved in parallel work) still import it from here."""

from imprint.actors.deadline import Deadline, Done, Pending, call_deadline

__all__ = ["Deadline", "Done", "Pending", "call_deadline"]
