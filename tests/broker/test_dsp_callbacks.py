"""The provider's messages of a protocol negotiation, at the consumer's callback: a real HTTP
server on 127.0.0.1 stands for the consumer's connector, and what it receives must validate
against the specification's own schemas, in the order the negotiation went, once each.

Read in place from the shared data folder, as tests/broker/test_dsp.py does (skipped without).
"""

import hashlib
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from broker.dsp.callbacks import Signer, send_due
from broker.dsp.models import ProtocolNegotiation
from tests import rfc9421
from tests.broker.conftest import bearer
from tests.broker.test_catalog import measure, publish
from tests.broker.test_dsp import (
    CONSUMER_PID,
    addressed,
    initial_request,
    post,
    pytestmark,  # noqa: F401 (skipped without the specification's files)
    schema_valid,
)
from tests.servers import ServerThread

SCHEMAS = {
    "ContractOfferMessage": "negotiation/contract-offer-message-schema.json",
    "ContractAgreementMessage": "negotiation/contract-agreement-message-schema.json",
    "ContractNegotiationEventMessage": "negotiation/contract-negotiation-event-message-schema.json",
    "ContractNegotiationTerminationMessage": (
        "negotiation/contract-negotiation-termination-message-schema.json"
    ),
}


@pytest.fixture
def dataset(federation) -> str:
    found = publish(federation).json()["id"]
    measure(federation, found)
    return found


def deliver(federation, moment=None) -> int:
    """One pass of the broker's sender (its chore), at ``moment`` (default now)."""
    state = federation.client.app.state
    with httpx.Client(timeout=5, follow_redirects=False) as client:
        return send_due(
            state.sessionmaker,
            client,
            state.settings.inbox_policy.refusal,
            Signer(state.keyring),
            (lambda: moment) if moment else (lambda: datetime.now(UTC)),
        )


def start(federation, dataset, consumer) -> str:
    message = initial_request(dataset)
    message["callbackAddress"] = f"{consumer.url}/cb/"  # a trailing slash is handled
    answer = post(federation, "/negotiations/request", message)
    assert answer.status_code == 201, answer.text
    return answer.json()["providerPid"]


def v1(federation, member, provider_pid, verb, body=None):
    negotiation = provider_pid.removeprefix("urn:uuid:")
    answer = federation.client.post(
        f"/v1/negotiations/{negotiation}/{verb}",
        headers=bearer(federation.keys[member]),
        json=body or {},
    )
    assert answer.is_success, answer.text
    return answer.json()


def test_the_consumer_hears_the_offer_the_agreement_and_the_finalization(
    federation, dataset, consumer
):
    provider_pid = start(federation, dataset, consumer)
    assert deliver(federation) == 0  # the request's own answer said REQUESTED
    v1(federation, "sn-hospital", provider_pid, "offer", {"terms": {"min_k": 5}})
    assert deliver(federation) == 1
    assert deliver(federation) == 0  # once
    accepted = post(
        federation,
        f"/negotiations/{provider_pid}/events",
        addressed("negotiation/example/contract-negotiation-event-message.json", provider_pid),
    )
    assert accepted.json()["state"] == "AGREED"
    assert deliver(federation) == 1
    verified = post(
        federation,
        f"/negotiations/{provider_pid}/agreement/verification",
        addressed("negotiation/example/contract-agreement-verification-message.json", provider_pid),
    )
    assert verified.json()["state"] == "FINALIZED"
    assert deliver(federation) == 1

    paths = [path for path, _ in consumer.received]
    base = f"/cb/negotiations/{CONSUMER_PID}"
    assert paths == [f"{base}/offers", f"{base}/agreement", f"{base}/events"]
    for _, message in consumer.received:
        schema_valid(message, SCHEMAS[message["@type"]])
        assert (message["providerPid"], message["consumerPid"]) == (provider_pid, CONSUMER_PID)
    offer, agreement, event = (message for _, message in consumer.received)
    anonymize = next(
        d for d in offer["offer"]["permission"][0]["duty"] if d["action"] == "anonymize"
    )
    assert {"leftOperand": "k", "operator": "gteq", "rightOperand": "5"} in anonymize["constraint"]
    agreement_id = v1_negotiation(federation, provider_pid)["agreement_id"]
    assert agreement["agreement"]["@id"] == f"urn:uuid:{agreement_id}"
    assert agreement["agreement"]["assignee"] == "urn:fedbroker:member:fr-research"
    assert event["eventType"] == "FINALIZED"


def v1_negotiation(federation, provider_pid) -> dict:
    return federation.client.get(
        f"/v1/negotiations/{provider_pid.removeprefix('urn:uuid:')}",
        headers=bearer(federation.keys["fr-research"]),
    ).json()


def test_a_consumer_that_fails_is_tried_again_later_in_order(federation, dataset, consumer):
    provider_pid = start(federation, dataset, consumer)
    v1(federation, "sn-hospital", provider_pid, "offer")
    consumer.failures = 1
    assert deliver(federation) == 0
    negotiation = provider_pid.removeprefix("urn:uuid:")
    state = federation.client.app.state
    with state.sessionmaker() as session:
        kept = session.get(ProtocolNegotiation, negotiation)
        assert (kept.attempts, kept.last_error) == (1, "the consumer answered 503")
        retry_at = kept.next_attempt_at
    assert deliver(federation) == 0  # not before its time
    v1(federation, "sn-hospital", provider_pid, "terminate", {"reason": "changed our mind"})
    assert deliver(federation, retry_at + timedelta(seconds=1)) == 2
    assert [message["@type"] for _, message in consumer.received] == [
        "ContractOfferMessage",
        "ContractNegotiationTerminationMessage",
    ]
    assert consumer.received[1][1]["reason"] == ["changed our mind"]
    schema_valid(consumer.received[1][1], SCHEMAS["ContractNegotiationTerminationMessage"])


def test_a_callback_that_now_resolves_inside_is_not_called(federation, dataset, consumer):
    provider_pid = start(federation, dataset, consumer)
    negotiation = provider_pid.removeprefix("urn:uuid:")
    state = federation.client.app.state
    with state.sessionmaker() as session:  # its name resolves elsewhere since it was checked
        session.get(
            ProtocolNegotiation, negotiation
        ).callback_address = "http://169.254.169.254/latest"
        session.commit()
    v1(federation, "sn-hospital", provider_pid, "offer")
    assert deliver(federation) == 0
    with state.sessionmaker() as session:
        kept = session.get(ProtocolNegotiation, negotiation)
        assert kept.last_error.startswith("callback address refused: it resolves to 169.254")
    assert consumer.received == []


def test_what_the_consumer_said_itself_is_not_sent_back(federation, dataset, consumer):
    provider_pid = start(federation, dataset, consumer)
    ended = post(
        federation,
        f"/negotiations/{provider_pid}/termination",
        addressed(
            "negotiation/example/contract-negotiation-termination-message.json", provider_pid
        ),
    )
    assert ended.json()["state"] == "TERMINATED"
    assert deliver(federation) == 0 and consumer.received == []


def test_a_redirect_from_the_callback_is_not_followed(federation, dataset):
    """THREATS 14: a consumer that answers with a redirect to an internal address is not
    followed there; the message counts as not taken and waits."""
    hits: list[str] = []

    async def redirect(request: Request) -> Response:
        hits.append(request.url.path)
        if request.url.path.startswith("/internal"):
            return Response(status_code=200)
        return Response(status_code=307, headers={"Location": "/internal/secrets"})

    server = ServerThread(
        Starlette(routes=[Route("/{rest:path}", redirect, methods=["POST"])])
    ).start()
    try:
        message = initial_request(dataset)
        message["callbackAddress"] = f"{server.url}/cb"
        provider_pid = post(federation, "/negotiations/request", message).json()["providerPid"]
        v1(federation, "sn-hospital", provider_pid, "offer")
        assert deliver(federation) == 0
    finally:
        server.stop()
    assert hits == [f"/cb/negotiations/{CONSUMER_PID}/offers"]
    with federation.client.app.state.sessionmaker() as session:
        kept = session.get(ProtocolNegotiation, provider_pid.removeprefix("urn:uuid:"))
        assert kept.last_error == "the consumer answered 307" and kept.attempts == 1


def test_each_callback_is_signed_for_its_consumer_as_deliveries_are(federation, dataset, consumer):
    """THREATS 11: a connector checks that the broker sent the message, for this consumer, at
    this address, with this body: an independent RFC 9421 verifier, the published keys."""
    provider_pid = start(federation, dataset, consumer)
    v1(federation, "sn-hospital", provider_pid, "offer")
    assert deliver(federation) == 1
    [(url, lines, body)] = consumer.raw
    jwks = federation.client.get("/.well-known/fedbroker-keys.json").json()
    checked = rfc9421.verify("POST", str(url), lines, jwks, tag="fedbroker-callback")
    assert checked.components == [
        "@method",
        "@target-uri",
        "content-digest",
        "content-type",
        "x-fedbroker-recipient",
    ]
    assert checked.fields["x-fedbroker-recipient"] == "fr-research"
    assert checked.body_sha256 == hashlib.sha256(body).digest()
    assert {"created", "expires", "nonce", "keyid"} <= set(checked.params)
    elsewhere = str(url).replace("/cb/", "/other/")
    with pytest.raises(rfc9421.Refused):  # posted again to another address
        rfc9421.verify("POST", elsewhere, lines, jwks, tag="fedbroker-callback")
    forged = [(n, "ng-health" if n == "x-fedbroker-recipient" else v) for n, v in lines]
    with pytest.raises(rfc9421.Refused):  # re-addressed to another member
        rfc9421.verify("POST", str(url), forged, jwks, tag="fedbroker-callback")
