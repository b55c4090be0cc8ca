"""Delivery signatures: Ed25519 keys from files, published as a JWKS, rotated by adding a key."""

import json
import os
import stat

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from broker.cli import main
from broker.delivery.keyring import KeyRing, generate
from broker.wire.signing import SignatureError, UnknownKey, key_id, public_keys, verify

HEADERS = {"X-Fedbroker-Transfer": "t-1", "Content-Type": "text/csv", "X-Fedbroker-Sha256": "ab"}


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
    signature = ring.sign(HEADERS, b"body")
    keys = public_keys(json.loads(json.dumps(ring.jwks())))
    assert verify(signature, HEADERS, b"body", keys) == new.stem


def test_verification_refuses_changes_unknown_keys_and_other_schemes(tmp_path):
    ring = KeyRing.load(tmp_path, create=True)
    keys = public_keys(ring.jwks())
    signature = ring.sign(HEADERS, b"body")
    with pytest.raises(SignatureError, match="does not match"):
        verify(signature, HEADERS, b"other body", keys)
    with pytest.raises(SignatureError, match="does not match"):
        verify(signature, {**HEADERS, "content-type": "text/html"}, b"body", keys)
    with pytest.raises(UnknownKey):
        verify(signature, HEADERS, b"body", {})
    with pytest.raises(SignatureError, match="only v3"):
        verify("v2=" + "0" * 64, HEADERS, b"body", keys)


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
