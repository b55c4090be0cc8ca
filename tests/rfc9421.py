"""An independent signer and verifier of the broker's deliveries, from the RFCs' text alone.

It shares no code with ``broker/`` or ``member_cloud/`` and uses no HTTP-signature library: the
standard library and ``cryptography`` (for Ed25519) only, as a party in another country would
start from. What it follows:

- RFC 8941 (Structured Field Values), for ``Signature-Input``, ``Signature`` and
  ``Content-Digest``: the subset they use (dictionaries of inner lists of strings with integer
  and string parameters, and of byte sequences);
- RFC 9421 (HTTP Message Signatures) section 2.5, the signature base: one line
  ``"<component>": <value>`` per covered component, a field's value being its field lines
  trimmed and joined by ``", "``, then ``"@signature-params": <the inner list, serialized>``,
  lines separated by LF, no final LF; section 2.2 for ``@method``, ``@target-uri``,
  ``@authority`` and ``@path``; section 3.3.6 for ``ed25519``;
- RFC 9530 (Digest Fields), ``Content-Digest: sha-256=:<base64 of the body's SHA-256>:``;
- RFC 8037 and RFC 7638: an Ed25519 JWK and its thumbprint, the key id.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

_KEY = re.compile(r"[a-z*][a-z0-9_\-.*]*")
_TOKEN = re.compile(r"[A-Za-z*][A-Za-z0-9!#$%&'*+\-.^_`|~:/]*")
_INTEGER = re.compile(r"-?[0-9]{1,15}")


class Refused(Exception):
    pass


class _Reader:
    """RFC 8941 section 4.2, as far as these three fields need."""

    def __init__(self, text: str):
        self.text, self.at = text, 0

    def peek(self) -> str:
        return self.text[self.at : self.at + 1]

    def take(self, char: str) -> None:
        if self.peek() != char:
            raise Refused(f"expected {char!r} at {self.at} in {self.text!r}")
        self.at += 1

    def spaces(self) -> None:
        while self.peek() == " ":
            self.at += 1

    def match(self, pattern: re.Pattern) -> str:
        found = pattern.match(self.text, self.at)
        if not found:
            raise Refused(f"unexpected {self.text[self.at :]!r}")
        self.at = found.end()
        return found.group()

    def string(self) -> str:
        self.take('"')
        out = []
        while True:
            char = self.peek()
            self.at += 1
            if char == "":
                raise Refused("unterminated string")
            if char == "\\":
                out.append(self.peek())
                self.at += 1
            elif char == '"':
                return "".join(out)
            else:
                out.append(char)

    def bare_item(self):
        char = self.peek()
        if char == '"':
            return self.string()
        if char == ":":
            self.at += 1
            end = self.text.index(":", self.at)
            raw = base64.b64decode(self.text[self.at : end], validate=True)
            self.at = end + 1
            return raw
        if char == "?":
            self.at += 1
            return self.match(re.compile("[01]")) == "1"
        if char == "-" or char.isdigit():
            return int(self.match(_INTEGER))
        return self.match(_TOKEN)

    def parameters(self) -> dict:
        params = {}
        while self.peek() == ";":
            self.at += 1
            self.spaces()
            name = self.match(_KEY)
            params[name] = True
            if self.peek() == "=":
                self.at += 1
                params[name] = self.bare_item()
        return params

    def member(self):
        if self.peek() == "(":
            self.at += 1
            items = []
            while True:
                self.spaces()
                if self.peek() == ")":
                    self.at += 1
                    break
                items.append((self.bare_item(), self.parameters()))
            return items, self.parameters()
        return self.bare_item(), self.parameters()

    def dictionary(self) -> dict:
        members = {}
        while self.at < len(self.text):
            name = self.match(_KEY)
            if self.peek() == "=":
                self.at += 1
                members[name] = self.member()
            else:
                members[name] = (True, self.parameters())
            self.spaces()
            if self.at < len(self.text):
                self.take(",")
                self.spaces()
        return members


def parse_dictionary(text: str) -> dict:
    """An RFC 8941 Dictionary: name -> (value, parameters); an inner list's value is a list of
    (item, parameters)."""
    return _Reader(text).dictionary()


def _serialize_params(params: dict) -> str:
    out = []
    for name, value in params.items():
        if value is True:
            out.append(f";{name}")
        elif isinstance(value, int):
            out.append(f";{name}={value}")
        else:
            escaped = value.replace("\\", "\\\\").replace('"', '\\"')
            out.append(f';{name}="{escaped}"')
    return "".join(out)


def signature_params(components: list[str], params: dict) -> str:
    """The ``@signature-params`` value: the inner list serialized (RFC 8941 section 4.1.1.1)."""
    return "(" + " ".join(f'"{name}"' for name in components) + ")" + _serialize_params(params)


def signature_base(
    components: list[str], params: dict, method: str, target_uri: str, fields: dict[str, str]
) -> bytes:
    """RFC 9421 section 2.5. ``fields``: lower-case field name -> its combined value."""
    url = urlsplit(target_uri)
    derived = {
        "@method": method.upper(),
        "@target-uri": target_uri,
        "@authority": url.netloc.lower(),
        "@path": url.path or "/",
    }
    lines = []
    for name in components:
        if name.startswith("@"):
            value = derived[name]
        elif name in fields:
            value = fields[name]
        else:
            raise Refused(f"covered field {name!r} is not in the message")
        lines.append(f'"{name}": {value}')
    lines.append(f'"@signature-params": {signature_params(components, params)}')
    return "\n".join(lines).encode("ascii")


def combined(lines: list[tuple[str, str]]) -> dict[str, str]:
    """Field lines by lower-case name, trimmed and joined by ', ' (RFC 9421 section 2.1)."""
    values: dict[str, list[str]] = {}
    for name, value in lines:
        values.setdefault(name.lower(), []).append(value.strip(" \t"))
    return {name: ", ".join(parts) for name, parts in values.items()}


def thumbprint(jwk: dict) -> str:
    """RFC 7638: SHA-256 of the required members (crv, kty, x for OKP), in that order."""
    canonical = json.dumps(
        {"crv": jwk["crv"], "kty": jwk["kty"], "x": jwk["x"]}, separators=(",", ":")
    )
    return (
        base64.urlsafe_b64encode(hashlib.sha256(canonical.encode()).digest()).rstrip(b"=").decode()
    )


def ed25519_key(jwk: dict) -> Ed25519PublicKey:
    """RFC 8037 section 2: kty OKP, crv Ed25519, x the raw public key, base64url."""
    if (jwk.get("kty"), jwk.get("crv")) != ("OKP", "Ed25519"):
        raise Refused(f"not an Ed25519 key: {jwk}")
    return Ed25519PublicKey.from_public_bytes(base64.urlsafe_b64decode(jwk["x"] + "=="))


@dataclass
class Checked:
    label: str
    components: list[str]
    params: dict
    fields: dict[str, str]
    body_sha256: bytes


def verify(
    method: str, target_uri: str, lines: list[tuple[str, str]], jwks: dict, tag: str
) -> Checked:
    """Verify the signature tagged ``tag``, by a key of ``jwks`` whose RFC 7638 thumbprint is
    its keyid, over ``target_uri`` (the verifier's own inbox URL); raises :class:`Refused`."""
    fields = combined(lines)
    inputs = parse_dictionary(fields["signature-input"])
    signatures = parse_dictionary(fields["signature"])
    chosen = [label for label, (_, params) in inputs.items() if params.get("tag") == tag]
    if len(chosen) != 1:
        raise Refused(f"expected one signature tagged {tag!r}, found {len(chosen)}")
    [label] = chosen
    items, params = inputs[label]
    components = [name for name, _ in items]
    if params.get("alg") != "ed25519":
        raise Refused(f"alg is {params.get('alg')!r}")
    keys = {thumbprint(jwk): jwk for jwk in jwks["keys"]}
    if params.get("keyid") not in keys:
        raise Refused(f"unknown keyid {params.get('keyid')!r}")
    base = signature_base(components, params, method, target_uri, fields)
    raw, _ = signatures[label]
    try:
        ed25519_key(keys[params["keyid"]]).verify(raw, base)
    except Exception as error:
        raise Refused(f"the signature does not verify: {type(error).__name__}") from None
    digest = parse_dictionary(fields["content-digest"])
    if "content-digest" not in components or set(digest) != {"sha-256"}:
        raise Refused("the body is not bound by a signed sha-256 Content-Digest")
    return Checked(label, components, params, fields, digest["sha-256"][0])


def sign(
    key,
    key_id: str,
    method: str,
    target_uri: str,
    lines: list[tuple[str, str]],
    components: list[str],
    params: dict,
    label: str = "fedbroker",
) -> dict[str, str]:
    """``Signature-Input`` and ``Signature`` by an Ed25519 private ``key``: the same signature
    base as :func:`verify` builds, signed (RFC 9421 section 3.1). ``params`` in their order,
    ``keyid`` added first unless given."""
    params = {"keyid": key_id} | params if "keyid" not in params else params
    base = signature_base(components, params, method, target_uri, combined(lines))
    raw = base64.b64encode(key.sign(base)).decode()
    return {
        "Signature-Input": f"{label}={signature_params(components, params)}",
        "Signature": f"{label}=:{raw}:",
    }


def content_digest(body: bytes) -> str:
    """RFC 9530: ``sha-256=:<base64 of the body's SHA-256>:``."""
    return "sha-256=:" + base64.b64encode(hashlib.sha256(body).digest()).decode() + ":"
