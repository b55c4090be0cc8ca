"""A member pins the broker's keys and fetches them again when a delivery names a new one."""

import threading
import time

import pytest

from broker.delivery.keyring import KeyRing, generate
from broker.wire.signing import SignatureError, UnknownKey
from member_cloud import broker_keys
from member_cloud.broker_keys import BrokerKeys

HEADERS = {
    "X-Fedbroker-Transfer": "t-1",
    "Content-Type": "text/csv",
    "X-Fedbroker-Sha256": "a" * 64,
}


def test_a_rotation_at_the_broker_reaches_the_member(tmp_path, monkeypatch):
    monkeypatch.setattr(broker_keys, "REFRESH_SECONDS", 0.0)
    folder = tmp_path / "broker"
    first = KeyRing.load(folder, create=True)
    published = {"set": first.jwks()}
    fetched = []

    def fetch():
        fetched.append(True)
        return published["set"]

    keys = BrokerKeys(tmp_path / "member" / "broker-keys.json", fetch)
    (tmp_path / "member").mkdir()
    assert keys.verify(first.sign(HEADERS), HEADERS) == first.active_id
    assert len(fetched) == 1 and (tmp_path / "member" / "broker-keys.json").exists()

    generate(folder)  # the broker rotates: both keys published, the new one signs
    rotated = KeyRing.load(folder)
    published["set"] = rotated.jwks()
    assert keys.verify(rotated.sign(HEADERS), HEADERS) == rotated.active_id
    assert keys.verify(first.sign(HEADERS), HEADERS) == first.active_id
    assert len(fetched) == 2

    # Pinned on disk: a restarted member verifies without the broker.
    offline = BrokerKeys(tmp_path / "member" / "broker-keys.json", fetch=None)
    assert offline.verify(rotated.sign(HEADERS), HEADERS) == rotated.active_id


def test_deliveries_arriving_together_with_a_new_key_all_verify(tmp_path):
    """Found under load: the first delivery signed with a key the member had not pinned
    fetched the keys; a second one, waiting meanwhile, was refused (one fetch per 30 s) and
    the broker gave that delivery up. Both must verify against what the one fetch pinned."""
    ring = KeyRing.load(tmp_path / "broker", create=True)
    started, release, calls = threading.Event(), threading.Event(), []

    def slow_fetch():
        calls.append(1)
        started.set()
        release.wait(5)
        return ring.jwks()

    keys = BrokerKeys(tmp_path / "keys.json", slow_fetch)
    results = []

    def deliver():
        try:
            results.append(keys.verify(ring.sign(HEADERS), HEADERS))
        except SignatureError as error:
            results.append(error)

    first = threading.Thread(target=deliver)
    first.start()
    started.wait(5)
    second = threading.Thread(target=deliver)
    second.start()
    time.sleep(0.1)  # the second waits on the first's fetch
    release.set()
    first.join(5)
    second.join(5)
    assert results == [ring.active_id, ring.active_id]
    assert len(calls) == 1


def test_strict_pinning_never_fetches(tmp_path):
    ring = KeyRing.load(tmp_path / "broker", create=True)
    keys = BrokerKeys(tmp_path / "keys.json", lambda: ring.jwks(), refresh=False)
    with pytest.raises(UnknownKey):
        keys.verify(ring.sign(HEADERS), HEADERS)


def test_unknown_key_ids_cannot_make_the_member_fetch_in_a_loop(tmp_path):
    ring = KeyRing.load(tmp_path / "broker", create=True)
    forger = KeyRing.load(tmp_path / "forger", create=True)
    calls = []
    keys = BrokerKeys(tmp_path / "keys.json", lambda: calls.append(1) or ring.jwks())
    for _ in range(5):
        with pytest.raises(SignatureError):
            keys.verify(forger.sign(HEADERS), HEADERS)
    assert len(calls) == 1  # at most once per REFRESH_SECONDS
