"""Reports people look at: a measurement report, a transfer decision or the federation overview
as one HTML page.

Pure: report dicts in, an HTML string out (no web framework, no database). The plots are drawn
by matplotlib into inline SVG and the page is a Jinja2 template, both from the optional
``reports`` extra; without them :class:`ReportUnavailable` says what to install.

- :mod:`broker.reports.verdict`: the verdict in words (no third-party library).
- :mod:`broker.reports.figures`: the numbers each plot draws (no third-party library).
- :mod:`broker.reports.charts`: the plots (matplotlib).
- :mod:`broker.reports.page`: the page (Jinja2).
- :mod:`broker.reports.overview`: the federation overview's page.

Explained in ``docs/guides/member-clouds.md``.
"""

from broker.reports.overview import overview_page
from broker.reports.page import (
    PAGE_HEADERS,
    ReportUnavailable,
    analysis_page,
    require,
    transfer_page,
)

__all__ = [
    "PAGE_HEADERS",
    "ReportUnavailable",
    "analysis_page",
    "overview_page",
    "require",
    "transfer_page",
]
