"""One canonical JSON form, so that equal documents hash equally wherever the broker hashes them.

Keys sorted, no blanks, non-ASCII written as is (UTF-8). The audit chain is hashed in this form
and the broker signs agreements in it (a member cloud checks them), so changing it would make
every stored chain and signature fail its check: it is written here once, on the wire.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(document: Any) -> str:
    """``document`` as canonical JSON text.

    Examples
    --------
    >>> canonical_json({"b": 1, "a": ["é", None]})
    '{"a":["é",null],"b":1}'
    """
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256_of(document: Any, prefix: str = "") -> str:
    """Hex SHA-256 of ``prefix`` followed by the canonical JSON of ``document``."""
    return hashlib.sha256((prefix + canonical_json(document)).encode()).hexdigest()
