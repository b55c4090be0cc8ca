"""Red-team attacks on the Dataspace Protocol's transfer processes, through a real broker with a
real inbox and connector: a callbackAddress that reaches the broker's own network through an
IPv6 translator or tunnel (class 14), a dataAddress that looks like the registered inbox (class
14, 4), a provider's dry run or a transfer to someone else carrying the process (class 13, 1),
and a consumerPid another member already uses (class 13)."""

from urllib.parse import urlsplit

import pytest

from tests.broker.conftest import drain
from tests.broker.test_dsp import error_valid
from tests.broker.test_dsp import pytestmark as _spec
from tests.broker.test_dsp_transfers import (
    ERROR,
    advance,
    agree,
    get,
    post,
    processes,
    send,
    started,
    transfer_request,
)

pytestmark = _spec


@pytest.fixture
def agreement(federation, inbox) -> str:
    return agree(federation, inbox)


@pytest.mark.parametrize(
    "callback",
    [
        "http://[64:ff9b::a9fe:a9fe]/cb",  # NAT64 of 169.254.169.254
        "http://[64:ff9b:1::a00:1]/cb",  # local-use NAT64 of 10.0.0.1
        "http://[2002:a9fe:a9fe::1]/cb",  # 6to4 of 169.254.169.254
        "http://[::ffff:169.254.169.254]/cb",  # IPv4-mapped
        "http://2852039166/cb",  # 169.254.169.254 as one number
        "http://0251.0376.0251.0376/cb",  # in octal
        "http://user@127.0.0.1:9/cb",  # userinfo
    ],
)
def test_a_callback_reaching_inside_in_disguise_is_refused(
    federation, agreement, consumer, callback
):
    found = transfer_request(agreement, consumer)
    found["callbackAddress"] = callback
    answer = post(federation, "/transfers/request", found)
    assert answer.status_code == 400, answer.text
    error_valid(answer.json(), ERROR)
    assert "callbackAddress refused" in answer.json()["reason"][0]
    assert processes(federation) == 0


def look_alikes(url: str) -> list[str]:
    parts = urlsplit(url)
    host, port = parts.hostname, parts.port
    other = "https" if parts.scheme == "http" else "http"
    return [
        url.replace(f"{host}:{port}", f"{host}.:{port}"),  # a trailing dot
        url.replace(f"{host}:{port}", f"{host}:{port + 1}"),  # another port
        url.replace(parts.scheme + "://", other + "://"),  # another scheme
        url.replace("://", "://inbox@"),  # userinfo
        url.replace(f"{host}:{port}", f"localhost:{port}"),  # another name for the host
        url + "/../x",  # a path beyond it
        url + "?to=elsewhere",
        url.replace("://", "://\u200b"),  # an invisible character
    ]


def test_a_data_address_that_only_looks_like_the_inbox_is_refused(
    federation, agreement, consumer, inbox
):
    for endpoint in look_alikes(inbox.url):
        found = transfer_request(agreement, consumer, inbox)
        found["dataAddress"]["endpoint"] = endpoint
        answer = post(federation, "/transfers/request", found)
        assert answer.status_code == 400, (endpoint, answer.text)
        error_valid(answer.json(), ERROR)
        assert "registered" in answer.json()["reason"][0]
    assert processes(federation) == 0
    # the inbox itself (a trailing slash aside) is taken, and only it is delivered to
    found = transfer_request(agreement, consumer, inbox)
    found["dataAddress"]["endpoint"] = inbox.url + "/"
    assert post(federation, "/transfers/request", found).status_code == 201


def test_a_dry_run_or_a_transfer_elsewhere_does_not_carry_the_process(
    federation, agreement, consumer, inbox
):
    provider_pid = started(federation, agreement, consumer)
    dry = send(federation, agreement, dry_run="true")
    assert dry["status"] == "approved", dry
    assert advance(federation) == 0  # a dry run delivers nothing: it carries nothing
    assert get(federation, provider_pid).json()["state"] == "REQUESTED"
    elsewhere = federation.send(
        "sn-hospital",
        "patients_published.csv",
        destination="ng-health",
        agreement_id=agreement,
        quasi_identifiers="Age,Gender",
        sensitive="Disease",
    )
    assert (
        elsewhere.status_code != 200
        or elsewhere.json()["status"] != "approved"
        or (advance(federation) == 0)
    ), elsewhere.text
    assert get(federation, provider_pid).json()["state"] == "REQUESTED"
    real = send(federation, agreement)
    assert real["status"] == "approved"
    assert advance(federation) == 1
    drain(federation)
    assert len(inbox.received) == 1


def test_a_consumer_pid_another_member_uses_is_not_theirs(federation, agreement, consumer):
    provider_pid = started(federation, agreement, consumer)
    found = transfer_request(agreement, consumer)
    for member in ("ng-health", "sn-hospital"):
        answer = post(federation, "/transfers/request", found, member)
        assert answer.status_code == 404, answer.text
        assert provider_pid not in answer.text
    assert processes(federation) == 1


@pytest.mark.parametrize(
    "change",
    [
        {"agreementId": "urn:uuid:awa.diop@example.sn-" + "x" * 40},
        {"format": "awa.diop@example.sn"},
        {"callbackAddress": "http://awa.diop@example.sn/cb"},
    ],
)
def test_an_error_document_does_not_echo_what_was_sent(federation, agreement, consumer, change):
    # class 8/16: the error is the broker's own words, a transfer error by the schema (a
    # consumerPid is echoed as the protocol's errors carry it, to its own sender only)
    found = transfer_request(agreement, consumer) | change
    answer = post(federation, "/transfers/request", found)
    assert 400 <= answer.status_code < 500, answer.text
    error_valid(answer.json(), ERROR)
    assert "awa" not in answer.text.lower(), answer.text
    assert processes(federation) == 0
