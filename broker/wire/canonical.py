"""Canonical JSON: one spelling per document, so that equal documents hash and sign equally.

Two forms, each written here once, each with what depends on it:

- :func:`canonical_json` is the JSON Canonicalization Scheme, RFC 8785 (JCS): keys sorted by
  their UTF-16 code units, no blanks, UTF-8, numbers written as ECMAScript writes them (``1.0``
  is ``1``). Any language has an implementation, so a member that does not run this code can
  rebuild the bytes. The broker signs agreements in it (:mod:`broker.wire.signing`) and hashes
  the audit chain in it (rule ``rfc8785``, :mod:`broker.audit.service`).
- :func:`sorted_json` is the form the broker used before: Python's ``json.dumps`` with keys
  sorted, no blanks, UTF-8. It differs from JCS on numbers (``1.0``, ``1e-07``) and on keys
  outside the Basic Multilingual Plane. It stays what :func:`sha256_of` hashes (the identity
  of a transfer request, a reference's files, an F-SLA record: hashes stored earlier must keep
  matching), and it checks what was hashed or signed in it before JCS: audit entries of rule
  ``sorted-json`` and agreement signatures of scheme ``ed25519``.

Changing either would make every stored chain, signature or identity in it fail its check.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import rfc8785


def canonical_json(document: Any) -> bytes:
    """``document`` in the JSON Canonicalization Scheme (RFC 8785), as UTF-8 bytes.

    Raises ``ValueError`` for what JCS cannot write: NaN, infinities, integers beyond
    +-(2**53 - 1) (I-JSON, RFC 7493), keys that are not strings.

    Examples
    --------
    >>> canonical_json({"b": 1.0, "a": ["é", None, 1e-7]}).decode()
    '{"a":["é",null,1e-7],"b":1}'
    """
    try:
        return rfc8785.dumps(document)
    except rfc8785.CanonicalizationError as error:
        raise ValueError(f"not representable in RFC 8785 canonical JSON: {error}") from None


def sorted_json(document: Any) -> str:
    """``document`` in the broker's earlier form: keys sorted, no blanks, non-ASCII as is.

    Examples
    --------
    >>> sorted_json({"b": 1.0, "a": ["é", None, 1e-7]})
    '{"a":["é",null,1e-07],"b":1.0}'
    """
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256_of(document: Any, prefix: str = "") -> str:
    """Hex SHA-256 of ``prefix`` followed by :func:`sorted_json` of ``document``: an identity
    that must stay equal to the one stored when the document was first seen."""
    return hashlib.sha256((prefix + sorted_json(document)).encode()).hexdigest()
