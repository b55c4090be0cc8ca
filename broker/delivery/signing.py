"""How a member cloud knows a delivery comes from the broker, unaltered.

``X-Fedbroker-Signature: v2=<hex>`` is HMAC-SHA256 keyed with the SHA-256 digest of the
destination's API key (the broker stores that digest, never the key; the member derives it from
its key), over the delivery's metadata headers, one per line, then the body::

    timestamp, transfer id, source, purpose, decision, filename, sha256, anonymized, content type

Each element is the header value exactly as sent (purpose and filename percent-encoded), so
nothing about a delivery can be changed on the way without breaking the signature. Known limit:
whoever can read the broker's ``members`` table can sign for every member; an asymmetric broker
key would remove that.
"""

from __future__ import annotations

import hashlib
import hmac

SIGNED_HEADERS = (
    "X-Fedbroker-Timestamp",
    "X-Fedbroker-Transfer",
    "X-Fedbroker-Source",
    "X-Fedbroker-Purpose",
    "X-Fedbroker-Decision",
    "X-Fedbroker-Filename",
    "X-Fedbroker-Sha256",
    "X-Fedbroker-Anonymized",
    "Content-Type",
)


def signature(key_sha256_hex: str, headers: dict[str, str], body: bytes) -> str:
    message = "".join(f"{headers.get(name, '')}\n" for name in SIGNED_HEADERS).encode() + body
    digest = hmac.new(bytes.fromhex(key_sha256_hex), message, hashlib.sha256).hexdigest()
    return f"v2={digest}"
