"""What the hook process shares with the daemon, on the ground floor and in the standard
library only (a hook starts at every session start and must stay light): the clients and
their events (`events`), the hook settings (`settings`), each hook run's record (`state`),
the capture queue a hook appends to and the daemon drains (`queue`), and the briefing's
layout, which the hook's own cold briefing and the daemon's share (`compose`).

Nothing is exported here: each module is imported by its own name.
"""
