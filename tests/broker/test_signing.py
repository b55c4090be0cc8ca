"""Delivery signatures: Ed25519 keys from files, published as a JWKS, rotated by adding a key."""

import base64
import hashlib
import json
import os
import stat

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from broker.cli import main
from broker.delivery.keyring import KeyRing, generate
from broker.wire.signing import (
    SignatureError,
    UnknownKey,
    key_id,
    public_keys,
    verify,
    verify_document,
)

HEADERS = {
    "X-Fedbroker-Transfer": "t-1",
    "Content-Type": "text/csv",
    "X-Fedbroker-Sha256": hashlib.sha256(b"body").hexdigest(),
}


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
    signature = ring.sign(HEADERS)
    keys = public_keys(json.loads(json.dumps(ring.jwks())))
    assert verify(signature, HEADERS, keys) == new.stem


def test_verification_refuses_changes_unknown_keys_and_other_schemes(tmp_path):
    ring = KeyRing.load(tmp_path, create=True)
    keys = public_keys(ring.jwks())
    signature = ring.sign(HEADERS)
    other_body = {**HEADERS, "X-Fedbroker-Sha256": hashlib.sha256(b"other body").hexdigest()}
    with pytest.raises(SignatureError, match="does not match"):
        verify(signature, other_body, keys)
    with pytest.raises(SignatureError, match="does not match"):
        verify(signature, {**HEADERS, "content-type": "text/html"}, keys)
    with pytest.raises(UnknownKey):
        verify(signature, HEADERS, {})
    with pytest.raises(SignatureError, match="only v5"):
        verify("v2=" + "0" * 64, HEADERS, keys)


def test_v5_signs_the_headers_alone_and_binds_the_body_by_its_sha256(tmp_path):
    """RFC 9421 binds a body through Content-Digest (RFC 9530); v5 through X-Fedbroker-Sha256."""
    ring = KeyRing.load(tmp_path, create=True)
    value = ring.sign(HEADERS)
    scheme, _, rest = value.partition("=")
    kid, _, encoded = rest.partition(":")
    assert (scheme, kid) == ("v5", ring.active_id)
    lines = ["", "t-1", "", "", "", "", hashlib.sha256(b"body").hexdigest(), "", "text/csv"]
    lines += ["", ""]  # no agreement, no retention limit
    message = "".join(f"{line}\n" for line in lines).encode()  # SIGNED_HEADERS' order
    raw = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
    ring.keys[-1].public_key().verify(raw, message)  # raises if it does not verify


@pytest.mark.parametrize("digest", [None, "", "ab", "A" * 64, "g" * 64, "a" * 65])
def test_there_is_no_v5_signature_without_the_bodys_sha256(tmp_path, digest):
    ring = KeyRing.load(tmp_path, create=True)
    headers = {k: v for k, v in HEADERS.items() if k != "X-Fedbroker-Sha256"}
    if digest is not None:
        headers["X-Fedbroker-Sha256"] = digest
    with pytest.raises(ValueError, match="64 lower-case hex digits"):
        ring.sign(headers)
    # a v5 value signed over such headers anyway (by hand) does not verify either
    forged = f"v5={ring.active_id}:" + "A" * 86
    with pytest.raises(SignatureError, match="64 lower-case hex digits"):
        verify(forged, headers, public_keys(ring.jwks()))


@pytest.mark.parametrize("scheme", ["v3", "v4"])
def test_an_earlier_scheme_is_refused_with_a_message_naming_v5(tmp_path, scheme):
    ring = KeyRing.load(tmp_path, create=True)
    old = f"{scheme}=" + ring.sign(HEADERS).removeprefix("v5=")
    with pytest.raises(SignatureError, match=rf"no v5= value \(it offers {scheme}\): only v5"):
        verify(old, HEADERS, public_keys(ring.jwks()))


def test_the_agreement_and_the_retention_limit_are_signed(tmp_path):
    ring = KeyRing.load(tmp_path, create=True)
    keys = public_keys(ring.jwks())
    headers = {
        **HEADERS,
        "X-Fedbroker-Agreement": "a-1",
        "X-Fedbroker-Retain-Until": "2027-01-01T00:00:00Z",
    }
    signature = ring.sign(headers)
    assert verify(signature, headers, keys) == ring.active_id
    for name, value in [("X-Fedbroker-Agreement", ""), ("X-Fedbroker-Retain-Until", "2099-01-01")]:
        with pytest.raises(SignatureError, match="does not match"):
            verify(signature, {**headers, name: value}, keys)


def test_a_signed_document_is_checked_against_the_published_keys(tmp_path):
    ring = KeyRing.load(tmp_path, create=True)
    keys = public_keys(ring.jwks())
    document = {"id": "a-1", "terms": {"purpose": "research", "min_k": 5}, "note": "é"}
    signature = ring.sign_document(document)
    assert signature.startswith(f"ed25519={ring.active_id}:")
    assert verify_document(signature, {**document}, keys) == ring.active_id
    with pytest.raises(SignatureError, match="does not match"):
        verify_document(signature, {**document, "terms": {"purpose": "research", "min_k": 2}}, keys)
    with pytest.raises(UnknownKey):
        verify_document(signature, document, {})
    with pytest.raises(SignatureError, match="not a ed25519"):
        verify_document("v5=" + signature.partition("=")[2], document, keys)


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
