"""The broker's logs: JSON lines, each naming the request it was written for.

Logs are JSON lines (``python-json-logger``): ``time``, ``level``, ``logger``, ``message``,
``request_id`` and the record's extra fields. The request id is the one
:mod:`broker.wire.request_id` keeps while a request is served (``X-Request-ID``).
"""

from __future__ import annotations

import logging

from pythonjsonlogger.json import JsonFormatter

from broker.wire.probes import quiet_probes
from broker.wire.request_id import current


class _RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = current.get()
        return True


def configure_logging(level: int = logging.INFO) -> None:
    """JSON lines on stderr for every logger (uvicorn's included), each with its request id;
    health probes answered 2xx write none (:class:`broker.wire.probes.QuietProbes`)."""
    handler = logging.StreamHandler()
    handler.addFilter(_RequestIdFilter())
    handler.setFormatter(
        JsonFormatter(
            "{asctime}{levelname}{name}{message}{request_id}",
            style="{",
            rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
    quiet_probes()
