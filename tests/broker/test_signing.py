"""Delivery signatures: Ed25519 keys from files, published as a JWKS, rotated by adding a key;
deliveries signed with HTTP Message Signatures (RFC 9421), documents over RFC 8785 JSON."""

import base64
import hashlib
import json
import os
import stat
from datetime import UTC, datetime

import http_sf
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from http_message_signatures import HTTPMessageSigner, MappingKeyResolver, algorithms

from broker.cli import main
from broker.delivery.keyring import KeyRing, generate
from broker.wire.signing import (
    COVERED,
    Message,
    SignatureError,
    UnknownKey,
    content_digest,
    digest_sha256,
    key_id,
    public_keys,
    sign_document,
    verify_delivery,
    verify_document,
)

URL = "http://fr.example:8101/inbox"
NOW = 1_800_000_000
BODY = b"Age,Disease\n30,flu\n"
HEADERS = {
    "Content-Type": "text/csv",
    "Content-Digest": content_digest(hashlib.sha256(BODY).hexdigest()),
    "X-Fedbroker-Recipient": "fr-research",
    "X-Fedbroker-Transfer": "t-1",
    "X-Fedbroker-Source": "sn-hospital",
    "X-Fedbroker-Purpose": "research",
    "X-Fedbroker-Decision": "approved",
    "X-Fedbroker-Filename": "transfer-t-1.csv",
    "X-Fedbroker-Anonymized": "false",
    "X-Fedbroker-Agreement": "",
    "X-Fedbroker-Retain-Until": "",
}


def signed(ring, url=URL, created=NOW, lifetime=300, nonce="n-0123456789abcdef", **changes):
    """The header lines of a delivery signed by ``ring``, with ``changes`` made after signing."""
    headers = dict(HEADERS)
    headers |= ring.sign_delivery(
        url, headers, created=created, expires=created + lifetime, nonce=nonce
    )
    for name, value in changes.items():
        name = name.replace("_", "-")
        headers = {k: v for k, v in headers.items() if k.lower() != name.lower()}
        if value is not None:
            headers[name] = value
    return list(headers.items())


def check(ring_or_keys, lines, url=URL, now=NOW, tolerance=60, max_lifetime=900):
    keys = ring_or_keys if isinstance(ring_or_keys, dict) else public_keys(ring_or_keys.jwks())

    def public_key(kid):
        if kid not in keys:
            raise UnknownKey(kid)
        return keys[kid]

    return verify_delivery(
        url, lines, public_key, now=now, tolerance=tolerance, max_lifetime=max_lifetime
    )


@pytest.fixture
def ring(tmp_path):
    return KeyRing.load(tmp_path, create=True)


def test_key_ids_are_rfc7638_thumbprints():
    """RFC 8037, appendix A.3: the thumbprint of its example Ed25519 key."""
    jwks = {
        "keys": [
            {"kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}
        ]
    }
    [(kid, public)] = public_keys(jwks).items()
    assert kid == "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k" == key_id(public)


def test_a_first_key_is_made_when_asked_and_kept_private(tmp_path):
    with pytest.raises(SignatureError, match="no signing key"):
        KeyRing.load(tmp_path / "keys")
    ring = KeyRing.load(tmp_path / "keys", create=True)
    [path] = (tmp_path / "keys").glob("*.pem")
    assert path.stem == ring.active_id
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_the_newest_key_signs_and_every_key_is_published(tmp_path):
    old = generate(tmp_path)
    os.utime(old, (1, 1))  # older
    new = generate(tmp_path)
    ring = KeyRing.load(tmp_path)
    assert ring.active_id == new.stem
    assert [k["kid"] for k in ring.jwks()["keys"]] == [new.stem, old.stem]
    keys = public_keys(json.loads(json.dumps(ring.jwks())))
    assert check(keys, signed(ring)).key_id == new.stem


def test_a_delivery_signature_is_rfc9421_with_everything_the_member_checks(ring):
    lines = dict(signed(ring))
    [(label, (components, params))] = http_sf.parse(
        lines["Signature-Input"].encode(), tltype="dictionary"
    ).items()
    assert label == "fedbroker"
    assert [name for name, _ in components] == list(COVERED)
    assert params == {
        "created": NOW,
        "keyid": ring.active_id,
        "alg": "ed25519",
        "expires": NOW + 300,
        "nonce": "n-0123456789abcdef",
        "tag": "fedbroker-delivery",
    }
    [(_, (raw, _))] = http_sf.parse(lines["Signature"].encode(), tltype="dictionary").items()
    assert isinstance(raw, bytes) and len(raw) == 64  # an Ed25519 signature
    verified = check(ring, signed(ring))
    assert verified.sha256 == hashlib.sha256(BODY).hexdigest()
    assert verified.field("X-Fedbroker-Recipient") == "fr-research"
    assert (verified.created, verified.expires, verified.nonce) == (
        NOW,
        NOW + 300,
        "n-0123456789abcdef",
    )


@pytest.mark.parametrize(
    "change",
    [
        {"X-Fedbroker-Recipient": "ng-lab"},
        {"X-Fedbroker-Source": "ng-lab"},
        {"X-Fedbroker-Retain-Until": "2099-01-01T00:00:00Z"},
        {"X-Fedbroker-Agreement": "a-2"},
        {"Content-Type": "text/html"},
        {"Content-Digest": content_digest(hashlib.sha256(b"other").hexdigest())},
    ],
)
def test_a_changed_covered_header_breaks_the_signature(ring, change):
    with pytest.raises(SignatureError, match="does not hold"):
        check(ring, signed(ring, **change))


def test_a_signature_holds_for_its_target_uri_only(ring):
    """Another member's inbox URL, or this one spelt otherwise, is another target URI."""
    for url in ("http://ng.example:8101/inbox", "http://fr.example:8101/inbox/", URL + "?x=1"):
        with pytest.raises(SignatureError, match="does not hold"):
            check(ring, signed(ring), url=url)


def test_an_unknown_key_is_reported_as_such(ring, tmp_path):
    other = KeyRing.load(tmp_path / "other", create=True)
    with pytest.raises(UnknownKey):
        check(other, signed(ring))


@pytest.mark.parametrize(
    ("created", "lifetime", "message"),
    [
        (NOW - 400, 300, "expired 100 s ago"),
        (NOW + 61, 300, "61 s in the future"),
        (NOW, 901, "at most 900 s accepted"),
    ],
)
def test_times_are_bounded(ring, created, lifetime, message):
    with pytest.raises(SignatureError, match=message):
        check(ring, signed(ring, created=created, lifetime=lifetime))


def test_times_within_the_tolerance_pass(ring):
    check(ring, signed(ring, created=NOW - 350))  # expired 50 s ago: within 60 s
    check(ring, signed(ring, created=NOW + 60))


def _signed_by_hand(ring, covered, extra=None, **params):
    """A signature made with the broker's own key but covering ``covered`` (the library used
    directly: it shows the verifier's rule, whoever holds the key)."""
    headers = dict(HEADERS) | (extra or {})
    message = Message("POST", URL, headers)
    signer = HTTPMessageSigner(
        signature_algorithm=algorithms.ED25519,
        key_resolver=MappingKeyResolver(
            public_keys={}, private_keys={ring.active_id: ring.keys[-1]}
        ),
    )
    defaults = dict(
        created=datetime.fromtimestamp(NOW, UTC),
        expires=datetime.fromtimestamp(NOW + 300, UTC),
        nonce="n-0123456789abcdef",
        tag="fedbroker-delivery",
    )
    signer.sign(
        message,
        key_id=ring.active_id,
        label="fedbroker",
        covered_component_ids=covered,
        use_existing_digest=True,
        **(defaults | params),
    )
    return list(headers.items())


def test_a_signature_covering_less_or_more_is_refused(ring):
    fewer = [name for name in COVERED if name != "x-fedbroker-recipient"]
    with pytest.raises(SignatureError, match="missing: x-fedbroker-recipient"):
        check(ring, _signed_by_hand(ring, fewer))
    without_digest = [name for name in COVERED if name != "content-digest"]
    with pytest.raises(SignatureError, match="missing: content-digest"):
        check(ring, _signed_by_hand(ring, without_digest))
    more = [*COVERED, "x-fedbroker-extra"]
    lines = _signed_by_hand(ring, more, {"X-Fedbroker-Extra": "1"})
    with pytest.raises(SignatureError, match="not expected: x-fedbroker-extra"):
        check(ring, lines)
    reordered = [COVERED[1], COVERED[0], *COVERED[2:]]
    with pytest.raises(SignatureError, match="cover exactly, in order"):
        check(ring, _signed_by_hand(ring, reordered))


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"nonce": None}, "lacks its nonce"),
        ({"expires": None}, "lacks its expires"),
        ({"tag": "another-application"}, "No signatures found matching"),
        ({"tag": None}, "No signatures found matching"),
    ],
)
def test_a_signature_without_its_parameters_is_refused(ring, params, message):
    with pytest.raises(SignatureError, match=message):
        check(ring, _signed_by_hand(ring, COVERED, **params))


def test_the_retired_scheme_is_refused_by_name(ring):
    lines = [(k, v) for k, v in signed(ring) if k not in ("Signature", "Signature-Input")]
    old = [*lines, ("X-Fedbroker-Signature", f"v5={ring.active_id}:" + "A" * 86)]
    with pytest.raises(SignatureError, match=r"X-Fedbroker-Signature .* is refused"):
        check(ring, old)
    with pytest.raises(SignatureError, match="not signed"):
        check(ring, lines)


@pytest.mark.parametrize(
    "value",
    [
        "",
        "sha-256=abc",  # not a byte sequence
        "sha-512=:" + base64.b64encode(bytes(64)).decode() + ":",  # not the digest we sign
        "sha-256=:" + base64.b64encode(bytes(31)).decode() + ":",
        "sha-256=:"
        + base64.b64encode(bytes(32)).decode()
        + ":, sha-512=:"
        + base64.b64encode(bytes(64)).decode()
        + ":",
    ],
)
def test_a_content_digest_is_one_sha256(value):
    with pytest.raises(SignatureError, match=r"Content-Digest|32 bytes"):
        digest_sha256(value)


def test_the_content_digest_is_rfc9530s():
    """RFC 9530, section 2: the example body and its sha-256 Content-Digest."""
    digest = hashlib.sha256(b'{"hello": "world"}').hexdigest()
    assert content_digest(digest) == "sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:"
    assert digest_sha256(content_digest(digest)) == digest


def test_a_signed_document_is_checked_against_the_published_keys(ring):
    keys = public_keys(ring.jwks())
    document = {"id": "a-1", "terms": {"purpose": "research", "min_k": 5}, "note": "é"}
    signature = ring.sign_document(document)
    assert signature.startswith(f"ed25519-jcs={ring.active_id}:")
    assert verify_document(signature, {**document}, keys) == ring.active_id
    with pytest.raises(SignatureError, match="does not match"):
        verify_document(signature, {**document, "terms": {"purpose": "research", "min_k": 2}}, keys)
    with pytest.raises(UnknownKey):
        verify_document(signature, document, {})
    with pytest.raises(SignatureError, match="not a ed25519-jcs"):
        verify_document("v5=" + signature.partition("=")[2], document, keys)


def test_documents_are_signed_over_rfc8785_json(ring):
    """The signed bytes are RFC 8785's: 1.0 is written 1, keys sorted by UTF-16 code units
    (U+1F600 sorts before U+FB01 in UTF-16, after it by code point)."""
    document = {"max_t": 1.0, "\ufb01": 1, "\U0001f600": 2}
    signature = ring.sign_document(document)
    raw = base64.urlsafe_b64decode(signature.rpartition(":")[2] + "==")
    expected = '{"max_t":1,"\U0001f600":2,"\ufb01":1}'.encode()
    ring.keys[-1].public_key().verify(raw, expected)  # raises if the bytes differ


def test_an_agreement_signed_before_rfc8785_still_verifies_in_its_own_form(ring):
    """Scheme ed25519 signed Python's sorted JSON: 1.0 stays 1.0. It checks in that form only."""
    document = {"id": "a-0", "terms": {"max_t": 1.0}}
    legacy = json.dumps(document, sort_keys=True, separators=(",", ":")).encode()
    encoded = base64.urlsafe_b64encode(ring.keys[-1].sign(legacy)).rstrip(b"=").decode()
    keys = public_keys(ring.jwks())
    assert verify_document(f"ed25519={ring.active_id}:{encoded}", document, keys)
    with pytest.raises(SignatureError, match="does not match"):  # not over the RFC 8785 form
        verify_document(f"ed25519-jcs={ring.active_id}:{encoded}", document, keys)
    jcs = sign_document(ring.keys[-1], document)
    with pytest.raises(SignatureError, match="does not match"):
        verify_document("ed25519=" + jcs.partition("=")[2], document, keys)


def test_a_folder_holding_another_kind_of_key_is_refused(tmp_path):
    (tmp_path / "rsa.pem").write_text(
        "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n"
    )
    with pytest.raises(SignatureError, match="not a readable PEM private key"):
        KeyRing.load(tmp_path)


def test_fedbroker_keys_generate(tmp_path, capsys):
    assert main(["keys", "generate", str(tmp_path)]) == 0
    [path] = tmp_path.glob("*.pem")
    assert path.stem in capsys.readouterr().out
    assert isinstance(KeyRing.load(tmp_path).keys[0], Ed25519PrivateKey)
