"""A member pins the broker's keys and fetches them again when a delivery names a new one."""

import os
import threading
import time

import httpx
import pytest

from broker.delivery.keyring import KeyRing, generate
from broker.wire.signing import (
    SignatureError,
    UnknownKey,
    content_digest,
    new_nonce,
    verify_delivery,
)
from fedbroker.client import keys as broker_keys
from fedbroker.client.keys import BrokerKeys

URL = "http://127.0.0.1:9/inbox"
HEADERS = {
    "Content-Type": "text/csv",
    "Content-Digest": content_digest("a" * 64),
    "X-Fedbroker-Recipient": "fr-research",
    "X-Fedbroker-Transfer": "t-1",
    "X-Fedbroker-Source": "sn-hospital",
    "X-Fedbroker-Purpose": "research",
    "X-Fedbroker-Decision": "approved",
    "X-Fedbroker-Filename": "",
    "X-Fedbroker-Anonymized": "false",
    "X-Fedbroker-Agreement": "",
    "X-Fedbroker-Retain-Until": "",
}


def verified_by(keys: BrokerKeys, ring: KeyRing) -> str:
    """The key id a delivery signed by ``ring`` is verified with, by the member's ``keys``."""
    now = int(time.time())
    signature = ring.sign_delivery(URL, HEADERS, created=now, expires=now + 60, nonce=new_nonce())
    lines = [*HEADERS.items(), *signature.items()]
    return verify_delivery(
        URL, lines, keys.public_key, now=now, tolerance=60, max_lifetime=900
    ).key_id


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
    assert verified_by(keys, first) == first.active_id
    assert len(fetched) == 1 and (tmp_path / "member" / "broker-keys.json").exists()

    generate(folder)  # the broker rotates: both keys published, the new one signs
    rotated = KeyRing.load(folder)
    published["set"] = rotated.jwks()
    assert verified_by(keys, rotated) == rotated.active_id
    assert verified_by(keys, first) == first.active_id
    assert len(fetched) == 2

    # Pinned on disk: a restarted member verifies without the broker.
    offline = BrokerKeys(tmp_path / "member" / "broker-keys.json", fetch=None)
    assert verified_by(offline, rotated) == rotated.active_id


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
            results.append(verified_by(keys, ring))
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
        verified_by(keys, ring)


def test_unknown_key_ids_cannot_make_the_member_fetch_in_a_loop(tmp_path):
    ring = KeyRing.load(tmp_path / "broker", create=True)
    forger = KeyRing.load(tmp_path / "forger", create=True)
    calls = []
    keys = BrokerKeys(tmp_path / "keys.json", lambda: calls.append(1) or ring.jwks())
    for _ in range(5):
        with pytest.raises(SignatureError):
            verified_by(keys, forger)
    assert len(calls) == 1  # at most once per REFRESH_SECONDS


def test_a_key_the_broker_retired_stops_being_accepted_once_the_pinned_set_is_old(
    tmp_path, monkeypatch
):
    """No delivery names an unknown key after a rotation, so only age makes the member fetch
    the set again: then the retired key is refused. While the broker is down, what is pinned
    stays in use."""
    monkeypatch.setattr(broker_keys, "REFRESH_SECONDS", 0.0)
    folder = tmp_path / "broker"
    old_key = generate(folder)
    os.utime(old_key, (1, 1))
    generate(folder)
    both = KeyRing.load(folder)  # during the rotation: both published, the new one signs
    old = KeyRing(both.keys[:1])  # the retired key, as whoever holds it would sign
    published = {"set": both.jwks()}
    keys = BrokerKeys(tmp_path / "keys.json", lambda: published["set"], max_age_seconds=3600)
    assert verified_by(keys, old) == old.active_id  # pins both

    old_key.unlink()  # the broker retires the old key (compromised, say)
    published["set"] = KeyRing.load(folder).jwks()
    assert verified_by(keys, old) == old.active_id  # the pinned set is young: still accepted
    monkeypatch.setattr(time, "time", lambda: os.stat(tmp_path / "keys.json").st_mtime + 3601)
    with pytest.raises(UnknownKey):
        verified_by(keys, old)
    assert verified_by(keys, both) == both.active_id

    def down():
        raise httpx.ConnectError("the broker is down")

    offline = BrokerKeys(tmp_path / "keys.json", down, max_age_seconds=1)
    assert verified_by(offline, both) == both.active_id  # old pinned set, broker down: kept
