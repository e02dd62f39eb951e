"""Where the timeline's marks go: a lane per memory type, time along the width, a mark per
captured session on the top lane with a line to what it produced, and an arc from each
superseded memory to the one that replaced it. The numbers only; `_timeline.svg` draws them
(a template, so every text in the picture is escaped like the rest of the page)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from imprint.reads.project_memory import ProjectMemory
from imprint.store.records import SESSION_SUMMARY_KIND

__all__ = ["Timeline", "timeline"]

WIDTH = 960
LEFT = 150  # the lane names
RIGHT = 60  # room for the last date
TOP = 30
LANE_H = 30
AXIS_H = 30
TICKS = 6
# One colour per lane, in turn (presentation attributes: the picture needs no CSS).
COLOURS = (
    "#1f6feb",
    "#d1242f",
    "#1a7f37",
    "#8250df",
    "#bf8700",
    "#0a7ea4",
    "#bf3989",
    "#57606a",
    "#953800",
    "#0550ae",
)


@dataclass(frozen=True)
class Dot:
    id: str
    x: float
    y: float
    colour: str
    label: str
    superseded: bool


@dataclass(frozen=True)
class Line:
    x1: float
    y1: float
    x2: float
    y2: float
    label: str = ""


@dataclass(frozen=True)
class Timeline:
    width: int
    height: int
    left: int
    lanes: tuple[tuple[str, float, str], ...]  # name, y, colour
    ticks: tuple[tuple[float, str], ...]  # x, date
    sessions: tuple[Dot, ...]
    produced: tuple[Line, ...]  # session -> memory
    dots: tuple[Dot, ...]
    arcs: tuple[Line, ...]  # superseded -> successor (the control point's height in label)
    caption: str


def _day(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(epoch))


def _tick(epoch: float, span: float) -> str:
    """A tick's date, as fine as the span needs."""
    fmt = "%Y-%m-%d" if span > 3 * 86400 else ("%m-%d %H:%M" if span > 3600 else "%H:%M:%S")
    return time.strftime(fmt, time.gmtime(epoch))


def timeline(page: ProjectMemory) -> Timeline | None:
    """The picture of one page of memories; None when the page has none."""
    items = [it for it in page.items if it.record.kind != SESSION_SUMMARY_KIND]
    summaries = [it for it in page.items if it.record.kind == SESSION_SUMMARY_KIND]
    if not items and not summaries:
        return None
    stamps = [it.record.created_at for it in page.items]
    start, end = min(stamps), max(stamps)
    span = max(end - start, 1.0)
    start -= span * 0.02
    span *= 1.04
    chart = WIDTH - LEFT - RIGHT

    def x(at: float) -> float:
        return round(LEFT + (at - start) / span * chart, 1)

    lane_names = ["sessions", *[s.heading for s in page.sections if s.key != "Session summaries"]]
    lanes = tuple(
        (name, TOP + i * LANE_H + LANE_H / 2, COLOURS[i % len(COLOURS)])
        for i, name in enumerate(lane_names)
    )
    lane_of = {name: (y, colour) for name, y, colour in lanes}
    height = int(TOP + len(lanes) * LANE_H + AXIS_H)
    dots: list[Dot] = []
    where: dict[str, Dot] = {}
    for section in page.sections:
        if section.key == "Session summaries":
            continue
        y, colour = lane_of[section.heading]
        for place, it in enumerate(section.items):
            r = it.record
            # Marks of one lane alternate over three heights, so marks close in time overlap less.
            y_mark = y + (place % 3 - 1) * 6
            label = f"{section.heading}: {r.content[:120]} ({r.id}, {_day(r.created_at)})"
            if it.superseded:
                label += f"; superseded by {it.superseded_by[-1].new}"
            dot = Dot(r.id, x(r.created_at), y_mark, colour, label, it.superseded)
            dots.append(dot)
            where[r.id] = dot
    session_y = lanes[0][1]
    sessions: dict[str, Dot] = {}
    for it in summaries:
        r = it.record
        label = f"session {it.session}: {r.content[:120]} ({_day(r.created_at)})"
        sessions[it.session] = Dot(
            it.session, x(r.created_at), session_y, lanes[0][2], label, False
        )
    produced = tuple(
        Line(sessions[it.session].x, session_y + 6, where[it.record.id].x, where[it.record.id].y)
        for it in items
        if it.session in sessions and it.record.id in where
    )
    arcs = tuple(
        Line(where[k.old].x, where[k.old].y, where[k.new].x, where[k.new].y, f"{k.old} → {k.new}")
        for k in page.links
        if k.old in where and k.new in where
    )
    ticks = tuple(
        (round(LEFT + chart * i / (TICKS - 1), 1), _tick(start + span * i / (TICKS - 1), span))
        for i in range(TICKS)
    )
    shown = len(items) + len(summaries)
    caption = (
        f"{len(items)} memories and {len(summaries)} sessions"
        f" ({page.offset + 1}-{page.offset + shown} of {page.total}, newest first)"
        f", {len(arcs)} supersede links"
    )
    return Timeline(
        width=WIDTH,
        height=height,
        left=LEFT,
        lanes=lanes,
        ticks=ticks,
        sessions=tuple(sessions.values()),
        produced=produced,
        dots=tuple(dots),
        arcs=arcs,
        caption=caption,
    )
