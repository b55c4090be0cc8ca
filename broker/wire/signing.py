"""How a member cloud knows a delivery comes from the broker, is meant for it, and is new.

A delivery is signed with HTTP Message Signatures (RFC 9421), algorithm ``ed25519``, so that a
member that does not run this code checks it with any RFC 9421 library. The signature (label
:data:`LABEL`, tag :data:`TAG`) covers exactly :data:`COVERED`: the method, the target URI (the
recipient's inbox URL as registered), the body through its ``Content-Digest`` (RFC 9530,
``sha-256``), the content type and every ``X-Fedbroker-*`` header the member stores, among them
``X-Fedbroker-Recipient``, the member the delivery is for. Its parameters carry ``created``,
``expires``, a ``nonce``, the ``keyid`` and ``alg``. A member accepts a delivery only when
:func:`verify_delivery` does (all of these covered, times within bounds), when the recipient
and target URI are its own and when it has not seen the nonce (``member_cloud.delivery``): a
delivery re-posted to another member, replayed later, or signed another way is refused.

Neither side holds the body to sign or verify: the broker signs the digest it computed when it
wrote the payload; a member checks the signature before it reads the body, then hashes the body
as it stores it and keeps it only if it matches the signed digest (:attr:`Verified.sha256`).

The broker's public keys are a JSON Web Key Set (RFC 7517, Ed25519 keys as in RFC 8037,
:func:`key_set`) at :data:`KEYS_PATH`; each key's id (``keyid``, ``kid``) is its RFC 7638
thumbprint. Documents the broker signs (an agreement) are signed by :func:`sign_document` over
their RFC 8785 canonical JSON (:mod:`broker.wire.canonical`). How a party checks all of this
without our code: ``docs/guides/verifying-deliveries.md``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
import secrets
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import http_sf
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from http_message_signatures import (
    HTTPMessageSignaturesException,
    HTTPMessageSigner,
    HTTPMessageVerifier,
    HTTPSignatureKeyResolver,
    algorithms,
)

from broker.wire import headers as h
from broker.wire.canonical import canonical_json, sorted_json

KEYS_PATH = "/.well-known/fedbroker-keys.json"
LABEL = "fedbroker"
TAG = "fedbroker-delivery"
ALGORITHM = algorithms.ED25519.algorithm_id  # "ed25519"
DIGEST_ALGORITHM = "sha-256"
COVERED = (
    "@method",
    "@target-uri",
    h.CONTENT_DIGEST.lower(),
    h.CONTENT_TYPE.lower(),
    h.RECIPIENT.lower(),
    h.TRANSFER.lower(),
    h.SOURCE.lower(),
    h.PURPOSE.lower(),
    h.DECISION.lower(),
    h.FILENAME.lower(),
    h.ANONYMIZED.lower(),
    h.AGREEMENT.lower(),
    h.RETAIN_UNTIL.lower(),
)
PARAMETERS = ("created", "keyid", "alg", "expires", "nonce", "tag")
# A Dataspace Protocol callback (broker.dsp.callbacks): its JSON body through its digest, and
# the member it is for; the target URI holds the consumer's own pid for the conversation.
CALLBACK_TAG = "fedbroker-callback"
CALLBACK_COVERED = (
    "@method",
    "@target-uri",
    h.CONTENT_DIGEST.lower(),
    h.CONTENT_TYPE.lower(),
    h.RECIPIENT.lower(),
)
DOCUMENT_SCHEME = "ed25519-jcs"  # Ed25519 over the document's RFC 8785 canonical JSON
LEGACY_DOCUMENT_SCHEME = "ed25519"  # over sorted_json: agreements signed before RFC 8785
_DOCUMENT_FORMS = {
    DOCUMENT_SCHEME: canonical_json,
    LEGACY_DOCUMENT_SCHEME: lambda document: sorted_json(document).encode(),
}


class SignatureError(ValueError):
    """A signature is missing, malformed, made with an unknown key, or does not match."""


class UnknownKey(SignatureError):
    """The signature names a key id the verifier does not know (yet)."""

    def __init__(self, kid: str):
        super().__init__(f"signed with key {kid!r}, unknown to this member")
        self.kid = kid


# Keys ------------------------------------------------------------------------------------------


def key_id(public: Ed25519PublicKey) -> str:
    """RFC 7638 thumbprint: base64url SHA-256 of the canonical JWK ``{"crv","kty","x"}``."""
    canonical = json.dumps(
        {"crv": "Ed25519", "kty": "OKP", "x": _b64(_raw(public))}, separators=(",", ":")
    )
    return _b64(hashlib.sha256(canonical.encode()).digest())


def jwk(public: Ed25519PublicKey) -> dict[str, str]:
    return {
        "kty": "OKP",
        "crv": "Ed25519",
        "x": _b64(_raw(public)),
        "kid": key_id(public),
        "alg": "EdDSA",
        "use": "sig",
    }


def key_set(publics: Iterable[Ed25519PublicKey]) -> dict:
    """The JSON Web Key Set the broker publishes at :data:`KEYS_PATH`, in the given order."""
    return {"keys": [jwk(public) for public in publics]}


def public_keys(jwks: Mapping) -> dict[str, Ed25519PublicKey]:
    """``kid -> key`` from a JSON Web Key Set; keys that are not Ed25519 are ignored."""
    found = {}
    for entry in jwks.get("keys", []):
        if entry.get("kty") != "OKP" or entry.get("crv") != "Ed25519" or "x" not in entry:
            continue
        try:
            public = Ed25519PublicKey.from_public_bytes(_unb64(entry["x"]))
        except (KeyError, ValueError, TypeError):
            continue
        found[key_id(public)] = public  # the id is recomputed, never taken on trust
    return found


# Deliveries ------------------------------------------------------------------------------------


def content_digest(sha256_hex: str) -> str:
    """The ``Content-Digest`` value (RFC 9530) of a body whose SHA-256 is ``sha256_hex``.

    Examples
    --------
    >>> content_digest(hashlib.sha256(b'{"hello": "world"}').hexdigest())
    'sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:'
    """
    raw = bytes.fromhex(sha256_hex)
    if len(raw) != 32:
        raise ValueError(f"not a SHA-256: {sha256_hex!r}")
    return http_sf.ser({DIGEST_ALGORITHM: raw})


def digest_sha256(value: str) -> str:
    """The hex SHA-256 a ``Content-Digest`` value names; :class:`SignatureError` unless it is
    a Dictionary (RFC 8941) holding exactly one ``sha-256`` byte sequence of 32 bytes."""
    try:
        members = http_sf.parse(value.encode("ascii"), tltype="dictionary")
    except (ValueError, TypeError, UnicodeEncodeError):
        members = None
    digest = members.get(DIGEST_ALGORITHM, (None,))[0] if isinstance(members, dict) else None
    if set(members or ()) != {DIGEST_ALGORITHM} or not isinstance(digest, bytes):
        raise SignatureError(
            f"{h.CONTENT_DIGEST} must be exactly one {DIGEST_ALGORITHM} digest "
            f"(RFC 9530, '{DIGEST_ALGORITHM}=:<base64>:'), not {value!r}"
        )
    if len(digest) != 32:
        raise SignatureError(f"the {DIGEST_ALGORITHM} of {h.CONTENT_DIGEST} is not 32 bytes long")
    return digest.hex()


def new_nonce() -> str:
    """A fresh nonce for one signature: 128 random bits, base64url."""
    return secrets.token_urlsafe(16)


@dataclass(frozen=True)
class Message:
    """A request as the RFC 9421 library reads it: method, URL and header fields (anything with
    ``items()`` giving every field line; a ``dict`` when signing, which adds two fields)."""

    method: str
    url: str
    headers: Any


class _FieldLines:
    """Received field lines, repeated names kept (RFC 9421 joins them with ', ')."""

    def __init__(self, lines: Iterable[tuple[str, str]]):
        self._lines = list(lines)

    def items(self) -> list[tuple[str, str]]:
        return self._lines

    def __iter__(self):
        return iter(dict.fromkeys(name for name, _ in self._lines))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and any(n.lower() == name.lower() for n, _ in self._lines)


class _Keys(HTTPSignatureKeyResolver):
    def __init__(self, public: Callable[[str], Ed25519PublicKey], private=None):
        self._public, self._private = public, private

    def resolve_public_key(self, key_id: str) -> Ed25519PublicKey:
        return self._public(key_id)  # UnknownKey when it does not know it

    def resolve_private_key(self, key_id: str) -> Ed25519PrivateKey:
        return self._private


def sign_delivery(
    key: Ed25519PrivateKey,
    url: str,
    headers: Mapping[str, str],
    *,
    created: int,
    expires: int,
    nonce: str,
) -> dict[str, str]:
    """The ``Signature-Input`` and ``Signature`` of a delivery POSTed to ``url``.

    ``headers`` must hold ``Content-Digest`` and every header of :data:`COVERED` (an absent
    one, or a digest that is not RFC 9530's, raises :class:`SignatureError`); the body itself
    is not needed.

    A delivery as the broker writes them (a plain ``http(s)`` URL, visible ASCII header values,
    a digest in its one spelling) is signed over a signature base written here, the same bytes
    the RFC 9421 library writes, in a tenth of its time (it serializes and checks every
    structured field character by character, twice); anything else is signed by the library.
    Ed25519 signatures are deterministic: both give the same headers, byte for byte.
    """
    return _sign(key, url, headers, created, expires, nonce, TAG, COVERED)


def sign_callback(
    key: Ed25519PrivateKey,
    url: str,
    headers: Mapping[str, str],
    *,
    created: int,
    expires: int,
    nonce: str,
) -> dict[str, str]:
    """The ``Signature-Input`` and ``Signature`` of a protocol callback POSTed to ``url``:
    as a delivery's, tagged :data:`CALLBACK_TAG`, covering :data:`CALLBACK_COVERED`."""
    return _sign(key, url, headers, created, expires, nonce, CALLBACK_TAG, CALLBACK_COVERED)


def _sign(key, url, headers, created, expires, nonce, tag, covered) -> dict[str, str]:
    kid = key_id(key.public_key())
    base = _plain_signature_base(url, headers, created, expires, nonce, kid, tag, covered)
    if base is None:
        return _sign_with_library(key, kid, url, headers, created, expires, nonce, tag, covered)
    lines, parameters = base
    signature = base64.b64encode(key.sign(lines.encode())).decode()
    return {h.SIGNATURE_INPUT: f"{LABEL}={parameters}", h.SIGNATURE: f"{LABEL}=:{signature}:"}


# What the signature base written here covers; anything else goes to the library.
_PLAIN_URL = re.compile(
    r"(?P<origin>https?://[A-Za-z0-9.\-]+(?::[0-9]{1,5})?)"
    r"(?P<path>/[A-Za-z0-9._~!$&'()*+,;=:@/\-]*)?(?P<query>\?[A-Za-z0-9._~!$&'()*+,;=:@/?\-]*)?"
)
_PLAIN_VALUE = re.compile(r"[\x20-\x7e]*")  # visible ASCII and spaces: no line folds
_PLAIN_STRING = re.compile(r"[\x20\x21\x23-\x5b\x5d-\x7e]*")  # an sf-string needing no escape


def _plain_signature_base(
    url: str,
    headers: Mapping[str, str],
    created: int,
    expires: int,
    nonce: str,
    kid: str,
    tag: str,
    covered: Sequence[str],
) -> tuple[str, str] | None:
    """RFC 9421 section 2.5: the signature base of a plain delivery and its serialized
    signature parameters (the ``Signature-Input`` member), or None when the delivery is not
    plain (see :func:`sign_delivery`)."""
    target = _PLAIN_URL.fullmatch(url)
    fields: dict[str, str] = {}
    for name, value in headers.items():
        lower = name.lower()
        if lower in fields or not isinstance(value, str) or not _PLAIN_VALUE.fullmatch(value):
            return None
        fields[lower] = value.strip(" \t")
    if target is None or h.SIGNATURE.lower() in fields or h.SIGNATURE_INPUT.lower() in fields:
        return None
    digest = fields.get(h.CONTENT_DIGEST.lower())
    try:
        if digest is None or content_digest(digest_sha256(digest)) != digest:
            return None
    except (SignatureError, ValueError):
        return None
    if not all(_PLAIN_STRING.fullmatch(text) for text in (kid, nonce, tag, ALGORITHM)):
        return None
    if not all(type(t) is int and 0 <= t < 10**15 for t in (created, expires)):
        return None
    values = {
        "@method": "POST",
        "@target-uri": target["origin"] + (target["path"] or "/") + (target["query"] or ""),
    }
    lines = []
    for component in covered:
        value = values.get(component, fields.get(component))
        if value is None:
            return None  # the library says which header is missing
        lines.append(f'"{component}": {value}')
    listed = " ".join(f'"{component}"' for component in covered)
    parameters = (
        f'({listed});created={created};keyid="{kid}";alg="{ALGORITHM}";expires={expires};'
        f'nonce="{nonce}";tag="{tag}"'
    )
    lines.append(f'"@signature-params": {parameters}')
    return "\n".join(lines), parameters


def _sign_with_library(
    key: Ed25519PrivateKey,
    kid: str,
    url: str,
    headers: Mapping[str, str],
    created: int,
    expires: int,
    nonce: str,
    tag: str,
    covered: Sequence[str],
) -> dict[str, str]:
    message = Message("POST", url, dict(headers))
    signer = HTTPMessageSigner(
        signature_algorithm=algorithms.ED25519, key_resolver=_Keys(None, key)
    )
    try:
        signer.sign(
            message,
            key_id=kid,
            created=datetime.fromtimestamp(created, UTC),
            expires=datetime.fromtimestamp(expires, UTC),
            nonce=nonce,
            label=LABEL,
            tag=tag,
            covered_component_ids=covered,
            use_existing_digest=True,
        )
    except HTTPMessageSignaturesException as error:
        raise SignatureError(f"cannot sign the message: {error}") from None
    return {name: message.headers[name] for name in (h.SIGNATURE_INPUT, h.SIGNATURE)}


@dataclass(frozen=True)
class Verified:
    """A delivery whose signature holds: what it covers, as signed."""

    key_id: str
    created: int
    expires: int
    nonce: str
    fields: dict[str, str]  # lower-case header name -> its value, as signed
    sha256: str  # hex, from the signed Content-Digest: the body must hash to it

    def field(self, name: str) -> str:
        return self.fields[name.lower()]


class _Verifier(HTTPMessageVerifier):
    def validate_created_and_expires(self, sig_input, max_age=None) -> None:
        """Times are checked by :func:`verify_delivery`, with its clock and its bounds."""


def verify_delivery(
    url: str,
    lines: Iterable[tuple[str, str]],
    public_key: Callable[[str], Ed25519PublicKey],
    *,
    now: float,
    tolerance: int,
    max_lifetime: int,
) -> Verified:
    """Check the signature of a delivery POSTed to ``url`` (the verifier's own inbox URL,
    never one taken from the request) with header field ``lines``, the body not needed.

    ``public_key(kid)`` gives the broker's key or raises :class:`UnknownKey`. Accepted only:
    one signature tagged :data:`TAG`, covering exactly :data:`COVERED`, with every one of
    :data:`PARAMETERS`, ``alg="ed25519"``, made at most ``tolerance`` seconds in the future,
    not expired more than ``tolerance`` seconds ago, valid for at most ``max_lifetime``
    seconds. Raises :class:`SignatureError` (:class:`UnknownKey`) otherwise, saying why.
    Recipient and nonce are the caller's to check.
    """
    fields = _FieldLines(lines)
    if h.SIGNATURE_INPUT not in fields or h.SIGNATURE not in fields:
        why = "the delivery is not signed"
        if h.RETIRED_SIGNATURE in fields:
            why = f"{h.RETIRED_SIGNATURE} (the broker's scheme before RFC 9421) is refused"
        raise SignatureError(
            f"{why}: a delivery carries {h.SIGNATURE_INPUT} and {h.SIGNATURE} (HTTP Message "
            f"Signatures, RFC 9421, Ed25519, tag {TAG!r}) by the broker's published keys"
        )
    verifier = _Verifier(signature_algorithm=algorithms.ED25519, key_resolver=_Keys(public_key))
    try:
        results = verifier.verify(Message("POST", url, fields), max_age=None, expect_tag=TAG)
    except HTTPMessageSignaturesException as error:
        if isinstance(error.__cause__, UnknownKey):
            raise error.__cause__ from None
        raise SignatureError(_explained(error)) from None
    if len(results) != 1:
        raise SignatureError(f"the delivery carries {len(results)} signatures tagged {TAG!r}")
    result = results[0]
    signed = {name.strip('"'): value for name, value in result.covered_components.items()}
    covered = [name for name in signed if name != "@signature-params"]
    if covered != list(COVERED):
        missing = [name for name in COVERED if name not in covered]
        extra = [name for name in covered if name not in COVERED]
        raise SignatureError(
            "the signature must cover exactly, in order: "
            + " ".join(COVERED)
            + (f" (missing: {', '.join(missing)})" if missing else "")
            + (f" (not expected: {', '.join(extra)})" if extra else "")
        )
    params = result.parameters
    if absent := [name for name in PARAMETERS if name not in params]:
        raise SignatureError(f"the signature lacks its {', '.join(absent)} parameter(s)")
    if params["alg"] != ALGORITHM:  # the library refuses another alg too: said once more here
        raise SignatureError(f"the signature's alg is {params['alg']!r}, not {ALGORITHM!r}")
    created, expires = int(params["created"]), int(params["expires"])
    if expires <= created or expires - created > max_lifetime:
        raise SignatureError(
            f"the signature holds from {created} to {expires}: at most {max_lifetime} s accepted"
        )
    if created > now + tolerance:
        raise SignatureError(
            f"the signature was made {created - now:.0f} s in the future by this member's clock "
            f"(at most {tolerance} s accepted): a clock to set right"
        )
    if expires < now - tolerance:
        raise SignatureError(
            f"the signature expired {now - expires:.0f} s ago: an old delivery replayed, or a "
            "clock to set right"
        )
    values = {name: value for name, value in signed.items() if not name.startswith("@")}
    return Verified(
        key_id=str(params["keyid"]),
        created=created,
        expires=expires,
        nonce=str(params["nonce"]),
        fields=values,
        sha256=digest_sha256(values[h.CONTENT_DIGEST.lower()]),
    )


def _explained(error: Exception) -> str:
    text = str(error) or type(error).__name__
    if "erification failed" in text or isinstance(error.__cause__, InvalidSignature):
        return (
            f"the {h.SIGNATURE} does not hold (it does not match): a covered header, the digest "
            "or the target URI differs from what the broker signed (another recipient's "
            "delivery, or altered), or the broker did not sign it"
        )
    return f"the {h.SIGNATURE} does not hold: {text}"


# Documents -------------------------------------------------------------------------------------


def sign_document(key: Ed25519PrivateKey, document: object) -> str:
    """``ed25519-jcs=<kid>:<base64url signature>`` over the RFC 8785 form of ``document``."""
    signature = key.sign(canonical_json(document))
    return f"{DOCUMENT_SCHEME}={key_id(key.public_key())}:{_b64(signature)}"


def verify_document(signature: str, document: object, keys: Mapping[str, Ed25519PublicKey]) -> str:
    """Check a :func:`sign_document` signature against ``keys``; returns the key id.

    Scheme ``ed25519`` (agreements signed before RFC 8785: the same keys over
    :func:`~broker.wire.canonical.sorted_json`, which spells each document one way too) is still
    checked in its own form. Raises :class:`UnknownKey` for a key id not in ``keys``,
    :class:`SignatureError` otherwise.
    """
    scheme, _, value = (signature or "").partition("=")
    kid, _, encoded = value.partition(":")
    form = _DOCUMENT_FORMS.get(scheme)
    if form is None or not kid or not encoded:
        raise SignatureError(f"not a {DOCUMENT_SCHEME}=<key id>:<signature> document signature")
    if kid not in keys:
        raise UnknownKey(kid)
    try:
        keys[kid].verify(_unb64(encoded), form(document))
    except (InvalidSignature, ValueError, binascii.Error):
        raise SignatureError("the document does not match its signature") from None
    return kid


def _raw(public: Ed25519PublicKey) -> bytes:
    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
