"""The HTTP header names of the federation's wire contract, each written here once.

A delivery (the broker POSTs an approved transfer's bytes to the destination's inbox) carries:

===========================  ===============================================================
``X-Fedbroker-Timestamp``    unix seconds when the broker signed
``X-Fedbroker-Transfer``     transfer id (also ``Idempotency-Key``)
``X-Fedbroker-Source``       source member id
``X-Fedbroker-Purpose``      purpose of the transfer, percent-encoded UTF-8
``X-Fedbroker-Decision``     the decision's status, e.g. ``approved``
``X-Fedbroker-Filename``     the broker's name for the file (``transfer-<id>.csv``)
``X-Fedbroker-Sha256``       hex SHA-256 of the body
``X-Fedbroker-Anonymized``   ``true`` or ``false``
``Content-Type``             the payload's media type
``X-Fedbroker-Agreement``    the agreement the transfer was made under (empty: none)
``X-Fedbroker-Retain-Until`` UTC date and time (ISO 8601) after which the destination deletes
                             the data (empty: no limit), from the agreement and the F-SLA records
``X-Fedbroker-Signature``    ``v5=<key id>:<base64url Ed25519 signature>``
===========================  ===============================================================

The signature covers the headers from the timestamp to ``X-Fedbroker-Retain-Until``; the body is
bound through ``X-Fedbroker-Sha256`` (:mod:`broker.wire.signing`). ``Idempotency-Key`` is also
what a member sends with ``POST /v1/transfers`` so that a retry replays the broker's first decision;
``X-Request-ID`` names a request in both services' answers, problems and logs
(:mod:`broker.wire.request_id`).
"""

from __future__ import annotations

REQUEST_ID = "X-Request-ID"
IDEMPOTENCY_KEY = "Idempotency-Key"
CONTENT_TYPE = "Content-Type"

TIMESTAMP = "X-Fedbroker-Timestamp"
TRANSFER = "X-Fedbroker-Transfer"
SOURCE = "X-Fedbroker-Source"
PURPOSE = "X-Fedbroker-Purpose"
DECISION = "X-Fedbroker-Decision"
FILENAME = "X-Fedbroker-Filename"
SHA256 = "X-Fedbroker-Sha256"
ANONYMIZED = "X-Fedbroker-Anonymized"
AGREEMENT = "X-Fedbroker-Agreement"
RETAIN_UNTIL = "X-Fedbroker-Retain-Until"
SIGNATURE = "X-Fedbroker-Signature"
