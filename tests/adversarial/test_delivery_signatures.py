"""Signatures that bind too little: a real broker delivers to real member clouds, and a member
that received a delivery tries to use it elsewhere or again.

fr-bravo and fr-charlie are member clouds (the product's own app, on uvicorn), registered at the
suite's broker. Every delivery is recorded as it arrives at fr-bravo (headers and body, before
the member cloud reads them), so the tests replay exactly what the broker sent. The verdict is
each member's inbox: what it stored, through its own API. The delivery is also checked by an
independent RFC 9421 verifier (tests/rfc9421.py: the RFCs' text, no product code).
"""

from __future__ import annotations

import base64
import hashlib
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from broker.wire.signing import sign_delivery
from member_cloud.config import MemberSettings
from member_cloud.main import create_app as create_member
from tests import rfc9421
from tests.conftest import FIXTURES, REPO
from tests.servers import ServerThread, free_port

TAG = "fedbroker-delivery"
QI = {"quasi_identifiers": "Age,Gender", "sensitive": "Disease"}


@dataclass
class Recorder:
    """ASGI wrapper of a member cloud: records each ``POST /inbox`` as it arrived (header
    lines, body, the member's answer); ``lose`` answers makes the next ones look lost to the
    broker (503 sent back after the member cloud answered)."""

    app: object
    posts: list[tuple[list[tuple[str, str]], bytes, int]] = field(default_factory=list)
    lose: int = 0

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or (scope["method"], scope["path"]) != ("POST", "/inbox"):
            return await self.app(scope, receive, send)
        chunks, status = [], []
        lose, self.lose = self.lose > 0, max(self.lose - 1, 0)

        async def received():
            message = await receive()
            if message["type"] == "http.request":
                chunks.append(message.get("body", b""))
            return message

        async def sent(message):
            if message["type"] == "http.response.start":
                status.append(message["status"])
                if lose:
                    message = {**message, "status": 503}
            await send(message)

        await self.app(scope, received, sent)
        lines = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
        self.posts.append((lines, b"".join(chunks), status[0]))


@dataclass
class Member:
    id: str
    url: str
    recorder: Recorder
    server: ServerThread

    @property
    def inbox_url(self) -> str:
        return f"{self.url}/inbox"

    def inbox(self) -> list[str]:
        return [entry["transfer_id"] for entry in httpx.get(self.inbox_url, timeout=10).json()]

    def meta(self, transfer_id: str) -> dict:
        return httpx.get(f"{self.inbox_url}/{transfer_id}/meta", timeout=10).json()

    def post(self, lines, body) -> httpx.Response:
        return httpx.post(self.inbox_url, content=body, headers=lines, timeout=10)


def _start(broker, member_id: str, tmp: Path) -> Member:
    port = free_port()
    broker.register(member_id, "FR", f"http://127.0.0.1:{port}/inbox")
    settings = MemberSettings(
        id=member_id,
        jurisdiction="FR",
        port=port,
        api_key=broker.keys[member_id],
        broker_url=broker.url,
        data_dir=tmp / member_id,
        start_attempts=1,
    )
    recorder = Recorder(create_member(settings))
    server = ServerThread(recorder, port).start()
    return Member(member_id, server.url, recorder, server)


@pytest.fixture(scope="module")
def members(broker, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("signed-members")
    suffix = uuid.uuid4().hex[:6]
    bravo = _start(broker, f"fr-bravo-{suffix}", tmp)
    charlie = _start(broker, f"fr-charlie-{suffix}", tmp)
    yield bravo, charlie
    bravo.server.stop()
    charlie.server.stop()


def _deliver_to(broker, member: Member) -> tuple[str, list[tuple[str, str]], bytes]:
    """An approved SN transfer to ``member``: its id and the POST that stored it."""
    data = (FIXTURES / "patients_published.csv").read_bytes()
    answer = broker.send(data, "patients.csv", destination=member.id, **QI)
    assert answer["status"] == "approved", answer["rules"]
    transfer_id = answer["id"]
    deadline = time.monotonic() + 10

    def recorded() -> bool:  # the inbox stores it before the recorder has noted the POST
        marker = ("x-fedbroker-transfer", transfer_id)
        return any(marker in post[0] for post in member.recorder.posts)

    while transfer_id not in member.inbox() or not recorded():
        assert time.monotonic() < deadline, broker.transfer(transfer_id)["delivery"]
        time.sleep(0.02)
    [(lines, body, status)] = [
        post for post in member.recorder.posts if ("x-fedbroker-transfer", transfer_id) in post[0]
    ]
    assert status == 201
    return transfer_id, lines, body


def test_a_real_delivery_verifies_with_an_independent_rfc9421_verifier(broker, members):
    """What a member in another country, with other code, checks: the broker's JWKS fetched
    over HTTP, the RFC 7638 thumbprint as key id, the signature base built from the RFC's text,
    the body's SHA-256 against the signed Content-Digest, and the recipient."""
    bravo, _ = members
    transfer_id, lines, body = _deliver_to(broker, bravo)
    jwks = httpx.get(f"{broker.url}/.well-known/fedbroker-keys.json", timeout=10).json()

    checked = rfc9421.verify("POST", bravo.inbox_url, lines, jwks, tag=TAG)

    assert checked.params["alg"] == "ed25519"
    assert {"created", "expires", "nonce", "keyid"} <= set(checked.params)
    assert 0 < checked.params["expires"] - checked.params["created"] <= 900
    assert checked.components[:4] == ["@method", "@target-uri", "content-digest", "content-type"]
    assert checked.fields["x-fedbroker-recipient"] == bravo.id
    assert checked.fields["x-fedbroker-transfer"] == transfer_id
    assert checked.body_sha256 == hashlib.sha256(body).digest()
    assert "x-fedbroker-signature" not in checked.fields  # the former scheme is not sent
    for url in (f"{members[1].url}/inbox", broker.url + "/inbox"):
        with pytest.raises(rfc9421.Refused):  # bound to this inbox URL
            rfc9421.verify("POST", url, lines, jwks, tag=TAG)


def test_a_delivery_reposted_to_another_member_is_refused_and_nothing_is_stored(broker, members):
    bravo, charlie = members
    transfer_id, lines, body = _deliver_to(broker, bravo)

    as_received = charlie.post(lines, body)
    assert as_received.status_code == 403, as_received.text
    assert as_received.json()["type"] == "urn:fedbroker:problem:not-for-this-member"
    readdressed = [
        (name, charlie.id if name == "x-fedbroker-recipient" else value) for name, value in lines
    ]
    answer = charlie.post(readdressed, body)
    assert answer.status_code == 401, answer.text  # the recipient and the inbox URL are signed
    assert transfer_id not in charlie.inbox()
    assert charlie.inbox() == []


def test_the_same_delivery_posted_again_later_is_a_replay(broker, members):
    bravo, _ = members
    transfer_id, lines, body = _deliver_to(broker, bravo)
    first = bravo.meta(transfer_id)

    replay = bravo.post(lines, body)

    assert replay.status_code == 401, replay.text
    assert replay.json()["type"] == "urn:fedbroker:problem:replayed-delivery"
    assert bravo.inbox().count(transfer_id) == 1
    assert bravo.meta(transfer_id)["received_at"] == first["received_at"]


def test_the_brokers_own_retry_is_signed_anew_and_stored_once(broker, members):
    """The member stores the delivery but its answer is lost: the broker retries, with a new
    nonce, and the member answers already_received. Exactly one inbox entry, delivered."""
    bravo, _ = members
    bravo.recorder.lose = 1
    data = (FIXTURES / "patients_published.csv").read_bytes()
    answer = broker.send(data, "patients.csv", destination=bravo.id, **QI)
    transfer_id = answer["id"]
    deadline = time.monotonic() + 15
    while broker.transfer(transfer_id)["delivery"]["status"] != "delivered":
        assert time.monotonic() < deadline, broker.transfer(transfer_id)["delivery"]
        time.sleep(0.05)
    posts = [p for p in bravo.recorder.posts if ("x-fedbroker-transfer", transfer_id) in p[0]]
    assert [status for _, _, status in posts] == [201, 200]
    nonces = [rfc9421.combined(lines)["signature-input"] for lines, _, _ in posts]
    assert nonces[0] != nonces[1]
    assert bravo.inbox().count(transfer_id) == 1
    assert broker.transfer(transfer_id)["delivery"]["attempts"] == 2


@pytest.mark.parametrize(
    "strip", ["content-digest", "x-fedbroker-recipient", "x-fedbroker-retain-until"]
)
def test_a_real_delivery_with_a_component_stripped_from_its_signature_is_refused(
    broker, members, strip
):
    """Someone on the way removes a component from Signature-Input (and the header): the
    signature no longer holds, and a signature that covers less is refused anyway."""
    bravo, _ = members
    transfer_id, lines, body = _deliver_to(broker, bravo)
    combined = rfc9421.combined(lines)
    stripped_input = combined["signature-input"].replace(f'"{strip}" ', "")
    tampered = [
        (name, stripped_input if name == "signature-input" else value)
        for name, value in lines
        if name != strip
    ]
    tampered = [(n, v) for n, v in tampered if n != "x-fedbroker-transfer"]
    tampered.append(("x-fedbroker-transfer", str(uuid.uuid4())))  # not already received
    answer = bravo.post(tampered, body)
    assert answer.status_code in (401, 403), answer.text
    assert bravo.inbox().count(transfer_id) == 1


def test_the_retired_v5_header_alone_is_refused(broker, members):
    bravo, _ = members
    _, lines, body = _deliver_to(broker, bravo)
    new_id = str(uuid.uuid4())
    old = [
        (name, new_id if name in ("x-fedbroker-transfer", "idempotency-key") else value)
        for name, value in lines
        if name not in ("signature", "signature-input")
    ]
    fake = base64.urlsafe_b64encode(bytes(64)).decode().rstrip("=")
    old.append(("x-fedbroker-signature", f"v5=kid:{fake}"))
    answer = bravo.post(old, body)
    assert answer.status_code == 401, answer.text
    assert "X-Fedbroker-Signature" in answer.json()["detail"]
    assert new_id not in bravo.inbox()


def test_the_independent_verifier_reproduces_rfc9421_appendix_b26():
    """The verifier itself checked against the RFC: B.2.6 (a request signed with ed25519, the
    test key of B.1.4): the same signature base, byte for byte, and the printed signature."""
    jwk = {"kty": "OKP", "crv": "Ed25519", "x": "JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs"}
    signature_input = (
        'sig-b26=("date" "@method" "@path" "@authority" "content-type" "content-length")'
        ';created=1618884473;keyid="test-key-ed25519"'
    )
    signature = (
        "sig-b26=:wqcAqbmYJ2ji2glfAMaRy4gruYYnx2nEFN2HN6jrnDnQCK1u02Gb04v9EDgwUPiu4A0w6vuQv5lIp5WPp"
        "BKRCw==:"
    )
    lines = [
        ("Host", "example.com"),
        ("Date", "Tue, 20 Apr 2021 02:07:55 GMT"),
        ("Content-Type", "application/json"),
        ("Content-Length", "18"),
    ]
    [(label, (items, params))] = rfc9421.parse_dictionary(signature_input).items()
    base = rfc9421.signature_base(
        [name for name, _ in items],
        params,
        "POST",
        "http://example.com/foo?param=Value&Pet=dog",
        rfc9421.combined(lines),
    )
    assert base.decode() == (
        '"date": Tue, 20 Apr 2021 02:07:55 GMT\n'
        '"@method": POST\n'
        '"@path": /foo\n'
        '"@authority": example.com\n'
        '"content-type": application/json\n'
        '"content-length": 18\n'
        '"@signature-params": ("date" "@method" "@path" "@authority" "content-type" '
        '"content-length");created=1618884473;keyid="test-key-ed25519"'
    )
    [(_, (raw, _))] = rfc9421.parse_dictionary(signature).items()
    rfc9421.ed25519_key(jwk).verify(raw, base)  # raises if it does not verify
    assert label == "sig-b26"


def test_the_documented_example_verifies_and_is_what_the_broker_signs():
    """The verifying-deliveries guide's example is real: the independent verifier accepts it
    with the documented key, its signature base is the one printed, and the broker's signer
    makes exactly that signature for the same request (Ed25519 is deterministic)."""
    text = (REPO / "docs" / "guides" / "verifying-deliveries.md").read_text()
    request = text.split("```http\n", 1)[1].split("```", 1)[0]
    head, _, body = request.partition("\n\n")
    fields_as_sent = head.splitlines()[1:]  # after the request line; "Name:" is an empty value
    lines = [(n, v.strip()) for n, _, v in (line.partition(":") for line in fields_as_sent)]
    base = text.split("```text\n", 1)[1].split("```", 1)[0].rstrip("\n")
    jwk = {"kty": "OKP", "crv": "Ed25519", "x": "JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs"}
    url = "https://fr-research.example:8101/inbox"

    checked = rfc9421.verify("POST", url, lines, {"keys": [jwk]}, tag=TAG)
    assert checked.body_sha256 == hashlib.sha256(body.encode()).digest()
    fields = rfc9421.combined(lines)
    assert rfc9421.signature_base(checked.components, checked.params, "POST", url, fields) == (
        base.encode()
    )
    seed = base64.urlsafe_b64decode("n4Ni-HpISpVObnQMW0wOhCKROaIKqKtW_2ZYb2p9KcU=")  # B.1.4
    signed = [(n, v) for n, v in lines if n.lower().startswith(("x-fedbroker", "content-"))]
    made = sign_delivery(
        Ed25519PrivateKey.from_private_bytes(seed),
        url,
        dict(signed),
        created=checked.params["created"],
        expires=checked.params["expires"],
        nonce=checked.params["nonce"],
    )
    assert made == {"Signature-Input": fields["signature-input"], "Signature": fields["signature"]}
