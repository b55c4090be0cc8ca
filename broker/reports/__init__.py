"""Reports people look at: a measurement report or a transfer decision as one HTML page.

Pure: report dicts in, an HTML string out (no web framework, no database). The plots are drawn
by matplotlib into inline SVG and the page is a Jinja2 template, both from the optional
``reports`` extra; without them :class:`ReportUnavailable` says what to install.

- :mod:`broker.reports.verdict`: the verdict in words (no third-party library).
- :mod:`broker.reports.figures`: the numbers each plot draws (no third-party library).
- :mod:`broker.reports.charts`: the plots (matplotlib).
- :mod:`broker.reports.page`: the page (Jinja2).
"""

from broker.reports.page import ReportUnavailable, analysis_page, require, transfer_page

__all__ = ["ReportUnavailable", "analysis_page", "require", "transfer_page"]
