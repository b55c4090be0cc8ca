"""Inbox URLs cannot point the broker at its own network (SSRF), at registration or later."""

import pytest

from broker.wire.inbox_urls import InboxPolicy, refusal
from tests.broker.conftest import ADMIN


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://169.254.169.254/latest/meta-data", "link-local"),  # a cloud's metadata service
        ("http://10.0.0.5:5432/", "private"),
        ("http://localhost:8000/v1/audit", "loopback"),
        ("http://[::1]:8000/", "loopback"),
        ("http://0.0.0.0:8000/", "unspecified"),
        ("http://user:secret@example.org/inbox", "user name or password"),
        ("http://no-such-host.invalid/inbox", "does not resolve"),
        # an IPv6 address reaching inside through a translator or tunnel
        ("http://[64:ff9b::a9fe:a9fe]/", "169.254.169.254 (within 64:ff9b::a9fe:a9fe)"),
        ("http://[64:ff9b:1::a00:5]/", "10.0.0.5 (within"),
        ("http://[2002:a9fe:a9fe::]/", "169.254.169.254 (within 2002:a9fe:a9fe::)"),
    ],
)
def test_urls_into_the_brokers_own_network_are_refused(url, reason):
    assert reason in refusal(url)


def test_a_translated_public_address_is_taken():
    assert refusal("http://[64:ff9b::808:808]/") is None  # NAT64 of 8.8.8.8
    assert refusal("http://[2002:808:808::]/") is None  # 6to4 of 8.8.8.8


def test_allow_lists_open_networks_and_names_an_operator_trusts():
    policy = InboxPolicy.of(["127.0.0.0/8"], ["fr-research"])
    assert policy.refusal("http://127.0.0.1:8101/inbox") is None
    assert policy.refusal("http://fr-research:8102/inbox") is None  # by name, unresolved
    assert "private" in policy.refusal("http://10.1.2.3/inbox")


def test_registration_says_why_an_inbox_url_is_refused(client):
    answer = client.post(
        "/v1/members",
        headers=ADMIN,
        json={
            "id": "sn-evil",
            "name": "evil",
            "jurisdiction": "SN",
            "inbox_url": "http://169.254.169.254/latest/meta-data",
        },
    )
    assert answer.status_code == 422
    problem = answer.json()
    assert (
        "link-local" in problem["detail"] and "BROKER_INBOX_ALLOWED_NETWORKS" in problem["detail"]
    )
    assert client.get("/v1/members/sn-evil", headers=ADMIN).status_code == 404


def test_a_bad_network_setting_is_named():
    from pydantic import ValidationError

    from broker.config import Settings

    with pytest.raises(ValidationError, match=r"'10\.0\.0\.0/33' is not an IP network"):
        Settings(inbox_allowed_networks=["10.0.0.0/33"])
