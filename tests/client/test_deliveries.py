"""A delivery a real broker sends to an inbox on 127.0.0.1, checked with the client: signed by
the broker's published keys for that inbox; a changed body, another inbox or a forger's key is
refused."""

from __future__ import annotations

import time

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from broker.main import create_app as create_broker
from broker.wire.signing import sign_delivery
from fedbroker.client import (
    BrokerKeys,
    Client,
    SignatureError,
    UnknownKey,
    verify_delivery,
    verify_signature,
)
from tests.member_cloud.conftest import (
    ADMIN_TOKEN,
    FIXTURES,
    LiveServer,
    broker_settings,
    free_socket,
)
from tests.servers import RecordingInbox, ServerThread

CSV = (FIXTURES / "patients_published.csv").read_bytes()


@pytest.fixture(scope="module")
def delivered(tmp_path_factory):
    """One approved transfer delivered by a real broker to a recording inbox: the inbox URL,
    what it received, and the broker's URL."""
    tmp = tmp_path_factory.mktemp("deliveries")
    inbox = RecordingInbox()
    inbox_server = ServerThread(inbox.app()).start()
    settings = broker_settings(tmp, delivery_enabled=True, delivery_poll_seconds=0.05)
    server = LiveServer(create_broker(settings), free_socket()).start()
    inbox_url = f"{inbox_server.url}/inbox"
    try:
        with Client(server.url, ADMIN_TOKEN) as admin:
            key = admin.register_member("sn", "Source", "SN", "http://127.0.0.1:9/inbox").api_key
            admin.register_member("fr", "Destination", "FR", inbox_url)
        with Client(server.url, key) as member:
            decision = member.create_transfer(
                CSV, "patients.csv", "fr", "research", ["Age", "Gender"], ["Disease"]
            )
        assert decision.status == "approved"
        deadline = time.monotonic() + 20
        while not inbox.received and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(inbox.received) == 1
        yield inbox_url, inbox.received[0], server.url, decision.id
    finally:
        server.stop()
        inbox_server.stop()


def keys_of(broker_url: str, path) -> BrokerKeys:
    return BrokerKeys(path / "broker-keys.json", Client(broker_url).get_signing_keys)


def test_a_delivery_verifies_against_the_brokers_published_keys(delivered, tmp_path):
    inbox_url, (headers, body), broker_url, transfer_id = delivered
    keys = keys_of(broker_url, tmp_path)
    verified = verify_delivery(inbox_url, headers, body, keys.public_key)
    assert verified.field("X-Fedbroker-Transfer") == transfer_id
    assert verified.field("X-Fedbroker-Recipient") == "fr"
    assert (tmp_path / "broker-keys.json").exists()  # pinned for when the broker is down
    assert verify_signature(inbox_url, headers, keys.public_key).sha256 == verified.sha256


def test_a_changed_body_is_refused(delivered, tmp_path):
    inbox_url, (headers, body), broker_url, _ = delivered
    keys = keys_of(broker_url, tmp_path)
    with pytest.raises(SignatureError, match="not the one signed"):
        verify_delivery(inbox_url, headers, body.replace(b"Age", b"Agf", 1), keys.public_key)


def test_a_delivery_posted_to_another_inbox_is_refused(delivered, tmp_path):
    _, (headers, body), broker_url, _ = delivered
    keys = keys_of(broker_url, tmp_path)
    with pytest.raises(SignatureError):
        verify_delivery("http://127.0.0.1:1/inbox", headers, body, keys.public_key)


def test_a_forgers_signature_is_refused(delivered, tmp_path):
    """The same headers signed again with a key the broker never published."""
    inbox_url, (headers, body), broker_url, _ = delivered
    forged = {k: v for k, v in headers.items() if k not in ("signature", "signature-input")}
    now = int(time.time())
    forger = Ed25519PrivateKey.generate()
    forged |= sign_delivery(
        forger, inbox_url, forged, created=now, expires=now + 60, nonce="n" * 22
    )
    keys = keys_of(broker_url, tmp_path)
    with pytest.raises(UnknownKey):
        verify_delivery(inbox_url, forged, body, keys.public_key)


def test_an_expired_delivery_is_refused(delivered, tmp_path):
    inbox_url, (headers, body), broker_url, _ = delivered
    keys = keys_of(broker_url, tmp_path)
    with pytest.raises(SignatureError, match="expired"):
        verify_delivery(inbox_url, headers, body, keys.public_key, now=time.time() + 86_400)
