"""What the broker and the member clouds share about health probes and where they listen.

:class:`QuietProbes` keeps uvicorn's access log free of the health probes a supervisor sends
every few seconds (``/livez``, ``/readyz`` answered 2xx): a probe that fails keeps its one line.
:func:`port_in_use` lets a server refuse a busy port with one line before it starts.
"""

from __future__ import annotations

import errno
import logging
import socket

PROBE_PATHS = frozenset({"/livez", "/readyz"})


class QuietProbes(logging.Filter):
    """Drops uvicorn's access record of a probe answered 2xx (its arguments: client address,
    method, path, HTTP version, status)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if not isinstance(args, tuple) or len(args) < 5:
            return True
        path, status = str(args[2]).split("?", 1)[0], args[4]
        return not (path in PROBE_PATHS and isinstance(status, int) and 200 <= status < 300)


def quiet_probes() -> None:
    """Install :class:`QuietProbes` on uvicorn's access logger (once)."""
    access = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, QuietProbes) for f in access.filters):
        access.addFilter(QuietProbes())


def port_in_use(host: str, port: int) -> bool:
    """Whether another process listens on ``host:port`` (binding it fails as busy)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind((host, port))
        except OSError as error:
            return error.errno == errno.EADDRINUSE
    return False
