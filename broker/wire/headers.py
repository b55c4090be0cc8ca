"""The HTTP header names of the federation's wire contract, each written here once.

A delivery (the broker POSTs an approved transfer's bytes to the destination's inbox) carries:

============================  ==============================================================
``Content-Type``              the payload's media type
``Content-Digest``            the body's SHA-256 (RFC 9530): ``sha-256=:<base64>:``
``X-Fedbroker-Recipient``     the destination member id: whom the delivery is for
``X-Fedbroker-Transfer``      transfer id (also ``Idempotency-Key``)
``X-Fedbroker-Source``        source member id
``X-Fedbroker-Purpose``       purpose of the transfer, percent-encoded UTF-8
``X-Fedbroker-Decision``      the decision's status, e.g. ``approved``
``X-Fedbroker-Filename``      the broker's name for the file (``transfer-<id>.csv``),
                              percent-encoded UTF-8
``X-Fedbroker-Anonymized``    ``true`` or ``false``
``X-Fedbroker-Agreement``     the agreement the transfer was made under (empty: none)
``X-Fedbroker-Retain-Until``  UTC date and time (ISO 8601) after which the destination deletes
                              the data (empty: no limit), from the agreement and the F-SLA
                              records
``Signature-Input``           what the signature covers, when it was made, until when it holds,
                              its nonce and key (HTTP Message Signatures, RFC 9421)
``Signature``                 the broker's Ed25519 signature (RFC 9421)
============================  ==============================================================

The signature covers the request's method and target URI (the recipient's inbox URL), every
header above but the two signature headers, and so the body through its ``Content-Digest``
(:mod:`broker.wire.signing`). ``X-Fedbroker-Signature`` was the broker's own scheme before RFC
9421; a member refuses it. ``Idempotency-Key`` is also what a member sends with
``POST /v1/transfers`` so that a retry replays the broker's first decision; ``X-Request-ID``
names a request in both services' answers, problems and logs (:mod:`broker.wire.request_id`).
"""

from __future__ import annotations

from datetime import UTC, datetime

REQUEST_ID = "X-Request-ID"
IDEMPOTENCY_KEY = "Idempotency-Key"
CONTENT_TYPE = "Content-Type"
CONTENT_LENGTH = "Content-Length"
CONTENT_DIGEST = "Content-Digest"
SIGNATURE_INPUT = "Signature-Input"
SIGNATURE = "Signature"

RECIPIENT = "X-Fedbroker-Recipient"
TRANSFER = "X-Fedbroker-Transfer"
SOURCE = "X-Fedbroker-Source"
PURPOSE = "X-Fedbroker-Purpose"
DECISION = "X-Fedbroker-Decision"
FILENAME = "X-Fedbroker-Filename"
ANONYMIZED = "X-Fedbroker-Anonymized"
AGREEMENT = "X-Fedbroker-Agreement"
RETAIN_UNTIL = "X-Fedbroker-Retain-Until"
RETIRED_SIGNATURE = "X-Fedbroker-Signature"  # the scheme before RFC 9421: refused


def retain_until(moment: datetime | None) -> str:
    """The ``X-Fedbroker-Retain-Until`` value: UTC, ISO 8601 to the second (empty: no limit).

    Examples
    --------
    >>> retain_until(datetime(2026, 11, 27, 9, 30, 15, 500, tzinfo=UTC))
    '2026-11-27T09:30:15Z'
    >>> retain_until(None)
    ''
    """
    return "" if moment is None else moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
