"""The signature base the broker writes itself for plain deliveries gives the same
``Signature-Input`` and ``Signature`` as the RFC 9421 library, byte for byte (Ed25519 is
deterministic), on any mix of header values, URLs and names; and what it does not cover goes
to the library, which refuses what it must."""

import hashlib
import re

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.wire import signing
from broker.wire.signing import (
    COVERED,
    SignatureError,
    content_digest,
    key_id,
    sign_callback,
    sign_delivery,
    verify_delivery,
)
from tests import rfc9421

KEY = Ed25519PrivateKey.generate()
KID = key_id(KEY.public_key())
DIGEST = content_digest(hashlib.sha256(b"Age\n30\n").hexdigest())
NAMES = [c for c in COVERED if not c.startswith("@")]


def _headers(values: list[str], capitalized: bool = True) -> dict[str, str]:
    names = [n.title() if capitalized else n for n in NAMES]
    headers = dict(zip(names, values, strict=False))
    headers["Content-Digest" if capitalized else "content-digest"] = DIGEST
    return headers


def _by_library(
    url,
    headers,
    created=1_800_000_000,
    expires=1_800_000_300,
    nonce="n-1",
    tag=signing.TAG,
    covered=COVERED,
):
    return signing._sign_with_library(KEY, KID, url, headers, created, expires, nonce, tag, covered)


_TEXT = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=20)
_URL = st.sampled_from(
    [
        "http://127.0.0.1:8302/inbox",
        "https://fr.example/inbox",
        "https://fr.example",
        "http://fr.example:8101/a/b/?x=1&y=a:b",
        "http://fr.example/x?",
        "HTTP://fr.example/inbox",  # the library's: an upper-case scheme
        "http://fr.example/a%20b",  # the library's: a percent escape
        "http://[::1]:8000/inbox",  # the library's: an IPv6 literal
    ]
)


@settings(max_examples=200, deadline=None)
@given(
    url=_URL,
    values=st.lists(
        _TEXT | st.sampled_from([" a ", "\tb", "é", "a\r\n b"]),
        min_size=len(NAMES),
        max_size=len(NAMES),
    ),
    capitalized=st.booleans(),
)
def test_the_same_headers_as_the_library(url, values, capitalized):
    headers = _headers(values, capitalized)
    try:
        expected = _by_library(url, headers)
    except SignatureError:
        with pytest.raises(SignatureError):
            sign_delivery(
                KEY, url, headers, created=1_800_000_000, expires=1_800_000_300, nonce="n-1"
            )
        return
    found = sign_delivery(
        KEY, url, headers, created=1_800_000_000, expires=1_800_000_300, nonce="n-1"
    )
    assert found == expected


def test_a_plain_delivery_verifies_by_the_broker_and_by_the_rfcs_alone():
    url = "http://127.0.0.1:8302/inbox"
    headers = _headers([f"value {i}" for i in range(len(NAMES))])
    written = signing._plain_signature_base(url, headers, 1, 2, "n", KID, signing.TAG, COVERED)
    assert written is not None  # the fast path, not the library
    signed = headers | sign_delivery(
        KEY, url, headers, created=1_800_000_000, expires=1_800_000_300, nonce="n-1"
    )
    verified = verify_delivery(
        url,
        signed.items(),
        {KID: KEY.public_key()}.__getitem__,
        now=1_800_000_010,
        tolerance=60,
        max_lifetime=900,
    )
    assert verified.nonce == "n-1" and verified.field("X-Fedbroker-Recipient") == "value 2"
    jwks = signing.key_set([KEY.public_key()])
    checked = rfc9421.verify("POST", url, list(signed.items()), jwks, signing.TAG)
    assert checked.params["nonce"] == "n-1"


@pytest.mark.parametrize(
    "change",
    [
        lambda h: h.pop("X-Fedbroker-Recipient"),  # a covered header missing
        lambda h: h.update({"Content-Digest": "sha-256=:AAAA:"}),  # not a SHA-256
        lambda h: h.update({"Content-Digest": "md5=:AAAA:"}),
    ],
)
def test_what_the_library_refuses_is_refused(change):
    headers = _headers([f"value {i}" for i in range(len(NAMES))])
    change(headers)
    with pytest.raises(SignatureError, match=re.escape("cannot sign the message")):
        sign_delivery(KEY, "http://127.0.0.1:8302/inbox", headers, created=1, expires=2, nonce="n")


@settings(max_examples=100, deadline=None)
@given(url=_URL, values=st.lists(_TEXT, min_size=len(NAMES), max_size=len(NAMES)))
def test_a_callback_is_signed_as_the_library_signs_it(url, values):
    """Protocol callbacks take the same written base, under their own tag and components."""
    headers = _headers(values)
    expected = _by_library(url, headers, tag=signing.CALLBACK_TAG, covered=signing.CALLBACK_COVERED)
    found = sign_callback(
        KEY, url, headers, created=1_800_000_000, expires=1_800_000_300, nonce="n-1"
    )
    assert found == expected
