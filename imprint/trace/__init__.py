"""What the JSON log says about recalls: read once (`log`), shown as `imprint trace`'s tables
(`show`) and as the waterfall the dashboard and `imprint trace --svg` draw (`waterfall`)."""

from imprint.trace.log import (
    MODEL_PHASES,
    Event,
    model_outcome,
    read_events,
    read_outcome,
    read_recall_events,
)
from imprint.trace.show import load_recalls, render_trace
from imprint.trace.waterfall import (
    Bar,
    RecallSummary,
    SvgPicture,
    Waterfall,
    build_waterfall,
    recall_summaries,
    render_svg,
    svg_picture,
    write_svg,
)

__all__ = [
    "MODEL_PHASES",
    "Bar",
    "Event",
    "RecallSummary",
    "SvgPicture",
    "Waterfall",
    "build_waterfall",
    "load_recalls",
    "model_outcome",
    "read_events",
    "read_outcome",
    "read_recall_events",
    "recall_summaries",
    "render_svg",
    "render_trace",
    "svg_picture",
    "write_svg",
]
