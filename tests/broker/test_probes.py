"""Health probes stay out of the access log; a busy port is found before a server starts."""

import logging
import socket

import pytest

from broker.wire.probes import QuietProbes, port_in_use


def access_record(path: str, status: int) -> logging.LogRecord:
    """A record as uvicorn's access logger makes it."""
    return logging.LogRecord(
        "uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5000", "GET", path, "1.1", status), None,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("path", "status", "kept"),
    [
        ("/livez", 200, False),
        ("/readyz", 200, False),
        ("/readyz?verbose=1", 200, False),
        ("/readyz", 503, True),  # a failing probe keeps its one line
        ("/v1/transfers", 200, True),
        ("/livez/x", 404, True),
    ],
)
def test_successful_probes_write_no_access_line(path, status, kept):
    assert QuietProbes().filter(access_record(path, status)) is kept


def test_other_records_pass():
    record = logging.LogRecord("uvicorn.error", logging.INFO, __file__, 1, "started", (), None)
    assert QuietProbes().filter(record) is True


def test_a_listening_port_is_in_use_and_a_closed_one_is_not():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert port_in_use("127.0.0.1", port)
    assert not port_in_use("127.0.0.1", port)
