"""How a member cloud knows a delivery comes from the broker.

``X-Fedbroker-Signature: v1=<hex>`` is HMAC-SHA256 over ``f"{timestamp}.{transfer_id}."`` plus
the body, keyed with the SHA-256 digest of the destination's API key: the broker stores that
digest (never the key) and the member can derive it from its key, so no other secret is needed,
and no member can forge a delivery to another.
"""

from __future__ import annotations

import hashlib
import hmac


def signature(key_sha256_hex: str, timestamp: int, transfer_id: str, body: bytes) -> str:
    message = f"{timestamp}.{transfer_id}.".encode() + body
    digest = hmac.new(bytes.fromhex(key_sha256_hex), message, hashlib.sha256).hexdigest()
    return f"v1={digest}"
