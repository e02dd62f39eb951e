"""The dashboard: a local web page to see and steer the memory (127.0.0.1 only)."""

from imprint.dashboard._browser import open_browser_at, redirect_file
from imprint.dashboard._security import Guard
from imprint.dashboard.app import Owner, build_app
from imprint.dashboard.server import DashboardServer, check_host
from imprint.trace import build_waterfall, read_recall_events, render_svg

__all__ = [
    "DashboardServer",
    "Guard",
    "Owner",
    "build_app",
    "build_waterfall",
    "check_host",
    "open_browser_at",
    "read_recall_events",
    "redirect_file",
    "render_svg",
]
