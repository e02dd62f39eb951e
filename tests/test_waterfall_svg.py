"""The waterfall picture escapes every name it takes from the log."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from xml.etree import ElementTree

from imprint.dashboard._templates import TEMPLATES
from imprint.trace import build_waterfall, render_svg, svg_picture

T0 = 1_700_000_000.0
SVG = "{http://www.w3.org/2000/svg}"
HOSTILE = "</text><script>alert('x')</script><g onload=\"x\">&amp;"


def _at(t: float, **fields: Any) -> dict[str, Any]:
    return {"timestamp": datetime.fromtimestamp(T0 + t, UTC).isoformat(), **fields}


def _hostile_recall() -> list[dict[str, Any]]:
    """A recall whose tool, actor, read and question names are markup, as a log may hold."""
    return [
        _at(0, event="recall.start", tools=[HOSTILE], timeout_sec=1.0, question=HOSTILE),
        _at(0.05, event="actor.message", message="recall.gather", actor=HOSTILE, run_ms=40.0),
        _at(0.3, event="actor.message", message="recall.step", step=1, actor=HOSTILE, run_ms=99),
        _at(0.2, event="actor.message", message=HOSTILE, step=1, actor="r", run_ms=10.0),
        _at(1.0, event="recall.step.timeout", step=2, tool=HOSTILE),
    ]


def _texts(svg: str) -> tuple[ElementTree.Element, list[str]]:
    root = ElementTree.fromstring(svg)
    return root, [t for el in root.iter() for t in (el.text, *el.attrib.values()) if t]


def test_hostile_names_stay_text_in_the_svg_and_on_the_dashboard() -> None:
    """Markup in step, tool, actor and message names is drawn as text, never as elements:
    `imprint trace --svg`'s file and the dashboard's page both parse with only the picture's
    own elements, the names readable as they were logged."""
    wf = build_waterfall("r-hostile", _hostile_recall())
    dashboard = TEMPLATES.env.get_template("waterfall.svg").render(svg=svg_picture(wf))
    for svg in (render_svg(wf), dashboard):
        root, texts = _texts(svg)
        tags = {el.tag.removeprefix(SVG) for el in root.iter()}
        assert tags == {"svg", "title", "rect", "line", "text", "g"}, tags
        assert not any("onload" in el.attrib for el in root.iter())
        assert any(HOSTILE in t for t in texts)  # the tip and the title, whole
        assert any(t.startswith("step 1 </text><script>") for t in texts)  # the label
        assert "<script>" not in svg and "&amp;amp;" in svg
