"""The transfer process of the Dataspace Protocol's HTTPS binding, through a broker with a real
inbox (the consumer member's, on 127.0.0.1) and a real connector callback server: every document
and message validates against the specification's own schemas, the specification's examples
run through the binding, and the data reaches the consumer's registered inbox only, once.

Read in place from the shared data folder, as tests/broker/test_dsp.py does (skipped without).
"""

import copy
from datetime import timedelta

import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import OperationalError

from broker.dsp import transfers
from broker.dsp.models import ProtocolTransfer
from broker.dsp.router import BASE
from broker.negotiations.models import Agreement, Notification
from tests.broker.conftest import bearer, drain
from tests.broker.test_catalog import measure, publish
from tests.broker.test_dsp import error_valid, example, schema_valid
from tests.broker.test_dsp import pytestmark as _spec  # skipped without the specification
from tests.broker.test_dsp_callbacks import deliver
from tests.broker.test_negotiations import message, request

pytestmark = _spec
CONSUMER_PID = "urn:uuid:32541fe6-c580-409e-85a8-8a9a32fbe833"
SCHEMAS = {
    "TransferStartMessage": "transfer/transfer-start-message-schema.json",
    "TransferCompletionMessage": "transfer/transfer-completion-message-schema.json",
    "TransferTerminationMessage": "transfer/transfer-termination-message-schema.json",
    "TransferSuspensionMessage": "transfer/transfer-suspension-message-schema.json",
}
ERROR = "transfer/transfer-error-schema.json"
PROCESS = "transfer/transfer-process-schema.json"


def agree(federation, inbox, terms=None, verify=True) -> str:
    """fr-lab (its inbox records what it receives; registered unless ``inbox`` is None) with
    an agreement on ``terms`` for a measured dataset of sn-hospital, FINALIZED unless not
    ``verify``."""
    if inbox is not None:
        federation.add_lab(inbox.url)
    dataset = publish(federation).json()["id"]
    measure(federation, dataset)
    negotiation = request(federation, dataset, member="fr-lab")["id"]
    message(federation, "sn-hospital", negotiation, "offer", {"terms": terms})
    accepted = message(federation, "fr-lab", negotiation, "accept").json()
    if not verify:
        return accepted["agreement_id"]
    return message(federation, "fr-lab", negotiation, "verify").json()["agreement_id"]


@pytest.fixture
def agreement(federation, inbox) -> str:
    return agree(federation, inbox)


def deep(levels: int) -> list:
    found: list = []
    for _ in range(levels):
        found = [found]
    return found


def transfer_request(agreement: str, consumer, inbox=None) -> dict:
    """The specification's example request, with the broker's ids: its dataAddress names the
    consumer's registered inbox (``inbox``), or is left out."""
    found = copy.deepcopy(example("transfer/example/transfer-request-message.json"))
    found["agreementId"] = f"urn:uuid:{agreement}"
    found["format"] = "HttpData-PUSH"
    found["callbackAddress"] = f"{consumer.url}/cb/"
    if inbox is None:
        found.pop("dataAddress")
    else:
        found["dataAddress"]["endpoint"] = inbox.url
    return found


def post(federation, path, body, member="fr-lab"):
    return federation.client.post(
        BASE + path, json=body, headers=bearer(federation.keys[member]) if member else {}
    )


def get(federation, provider_pid, member="fr-lab"):
    return federation.client.get(
        f"{BASE}/transfers/{provider_pid}", headers=bearer(federation.keys[member])
    )


def addressed(name: str, provider_pid: str) -> dict:
    """The specification's example message ``name``, for the process ``provider_pid`` (still
    valid by its schema)."""
    found = copy.deepcopy(example(f"transfer/example/{name}.json"))
    found["providerPid"] = provider_pid
    found["consumerPid"] = CONSUMER_PID
    schema_valid(found, f"transfer/{name}-schema.json")
    return found


def started(federation, agreement, consumer, inbox=None) -> str:
    answer = post(federation, "/transfers/request", transfer_request(agreement, consumer, inbox))
    assert answer.status_code == 201, answer.text
    return answer.json()["providerPid"]


def send(federation, agreement, **form):
    form = {"quasi_identifiers": "Age,Gender", "sensitive": "Disease", **form}
    answer = federation.send(
        "sn-hospital",
        "patients_published.csv",
        destination="fr-lab",
        agreement_id=agreement,
        **form,
    )
    assert answer.status_code == 200, answer.text
    return answer.json()


def advance(federation) -> int:
    with federation.client.app.state.sessionmaker() as session:
        return transfers.advance(session)


def notices(federation, member="sn-hospital") -> list[dict]:
    return federation.client.get(
        "/v1/notifications", headers=bearer(federation.keys[member])
    ).json()


def processes(federation) -> int:
    with federation.client.app.state.sessionmaker() as session:
        return session.scalar(select(func.count()).select_from(ProtocolTransfer))


def test_the_data_an_agreement_covers_reaches_the_inbox_and_the_connector_hears_it(
    federation, agreement, consumer, inbox
):
    asked = transfer_request(agreement, consumer, inbox)
    schema_valid(asked, "transfer/transfer-request-message-schema.json")  # what a connector sends
    first = post(federation, "/transfers/request", asked)
    assert first.status_code == 201, first.text
    process = first.json()
    schema_valid(process, PROCESS)
    assert (process["consumerPid"], process["state"]) == (CONSUMER_PID, "REQUESTED")
    provider_pid = process["providerPid"]
    assert first.headers["Location"] == f"{BASE}/transfers/{provider_pid}"
    again = post(federation, "/transfers/request", transfer_request(agreement, consumer, inbox))
    assert (again.status_code, again.json()) == (200, process)  # a connector's retry
    assert processes(federation) == 1

    [notice] = [n for n in notices(federation) if n["kind"] == "transfer.requested"]
    assert notice["subject"] == provider_pid.removeprefix("urn:uuid:")
    assert agreement in notice["detail"] and "fr-lab" in notice["detail"]

    decision = send(federation, agreement)
    assert decision["status"] == "approved", decision["rules"]
    assert advance(federation) == 1  # linked; not started before the delivery
    assert get(federation, provider_pid).json()["state"] == "REQUESTED"
    assert deliver(federation) == 0
    drain(federation)
    assert len(inbox.received) == 1  # the registered inbox, once
    assert advance(federation) == 1
    assert advance(federation) == 0
    seen = get(federation, provider_pid)
    schema_valid(seen.json(), PROCESS)
    assert seen.json()["state"] == "COMPLETED"
    assert get(federation, provider_pid, "sn-hospital").json()["state"] == "COMPLETED"

    assert deliver(federation) == 2
    assert deliver(federation) == 0  # once
    base = f"/cb/transfers/{CONSUMER_PID}"
    assert [path for path, _ in consumer.received] == [f"{base}/start", f"{base}/completion"]
    for _, sent in consumer.received:
        schema_valid(sent, SCHEMAS[sent["@type"]])
        assert (sent["providerPid"], sent["consumerPid"]) == (provider_pid, CONSUMER_PID)
        assert "dataAddress" not in sent  # pushed, not fetched

    told = {n["kind"]: n["detail"] for n in notices(federation)}
    assert told["transfer.linked"].startswith(f"Transfer {decision['id']} carries transfer ")
    assert "reached fr-lab's inbox" in told["transfer.completed"]
    assert "COMPLETED" in told["transfer.completed"]

    later = send(federation, agreement)  # a second transfer carries no finished process
    assert later["status"] == "approved"
    assert advance(federation) == 0


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("transfer-request-message", "TransferRequest"),
        ("transfer-start-message", "TransferMessage"),
        ("transfer-completion-message", "TransferMessage"),
        ("transfer-suspension-message", "TransferMessage"),
        ("transfer-termination-message", "TransferMessage"),
    ],
)
def test_every_example_message_the_broker_accepts_reads(name, kind):
    from broker.dsp import messages

    getattr(messages, kind).model_validate(example(f"transfer/example/{name}.json"))


def test_the_specifications_example_request_pushing_elsewhere_is_refused(
    federation, agreement, consumer, inbox
):
    """THREATS 14: the example's dataAddress (http://example.com, with a token) is not the
    consumer's registered inbox: refused, nothing recorded, nothing delivered there."""
    found = transfer_request(agreement, consumer, inbox)
    found["dataAddress"]["endpoint"] = "http://169.254.169.254/latest/meta-data"
    answer = post(federation, "/transfers/request", found)
    assert answer.status_code == 400, answer.text
    error_valid(answer.json(), ERROR)
    assert "registered" in answer.json()["reason"][0] and "169.254" not in answer.text
    assert "TOKEN-ABCDEFG" not in answer.text
    spec = example("transfer/example/transfer-request-message.json")
    spec["agreementId"] = f"urn:uuid:{agreement}"
    spec["callbackAddress"] = f"{consumer.url}/cb"
    refused = post(federation, "/transfers/request", spec)  # its format is not the broker's
    assert refused.status_code == 400 and "HttpData-PUSH" in refused.json()["reason"][0]
    spec["format"] = "HttpData-PUSH"
    assert post(federation, "/transfers/request", spec).status_code == 400  # its address
    assert processes(federation) == 0


@pytest.mark.parametrize(
    ("callback", "why"),
    [
        ("http://169.254.169.254/latest/meta-data", "callbackAddress refused"),
        ("http://10.0.0.1/cb", "callbackAddress refused"),
        ("file:///etc/passwd", "callbackAddress refused"),
    ],
)
def test_a_callback_inside_is_refused(federation, agreement, consumer, callback, why):
    """THREATS 14: the callback follows the rules inbox addresses follow."""
    found = transfer_request(agreement, consumer)
    found["callbackAddress"] = callback
    answer = post(federation, "/transfers/request", found)
    assert answer.status_code == 400, answer.text
    error_valid(answer.json(), ERROR)
    assert why in answer.json()["reason"][0]
    assert processes(federation) == 0


def test_a_rejected_transfer_ends_the_process_in_the_brokers_words(federation, agreement, consumer):
    """THREATS 8: what the provider sent (its file name, its columns, its purpose) never
    reaches the consumer through the termination."""
    provider_pid = started(federation, agreement, consumer)
    decision = send(federation, agreement, purpose="public_health", filename="Aminata-secret.csv")
    assert decision["status"] == "rejected"
    assert advance(federation) == 1
    assert get(federation, provider_pid).json()["state"] == "TERMINATED"
    assert deliver(federation) == 1
    [(path, sent)] = consumer.received
    assert path == f"/cb/transfers/{CONSUMER_PID}/termination"
    schema_valid(sent, SCHEMAS["TransferTerminationMessage"])
    assert sent["reason"] == [transfers.REJECTED]
    [told] = [n for n in notices(federation) if n["kind"] == "transfer.terminated"]
    assert told["detail"].startswith(f"Transfer {decision['id']} carries")
    for leaked in ("Aminata", "public_health", "Disease", "Age"):
        assert leaked not in str(sent)


def test_a_transfer_to_anonymize_first_leaves_the_process_waiting(federation, inbox, consumer):
    agreement = agree(federation, inbox, {"min_k": 5})  # the data has k = 3 on Age + Gender
    provider_pid = started(federation, agreement, consumer)
    decision = send(federation, agreement)
    assert decision["status"] == "anonymization_required", decision["rules"]
    assert advance(federation) == 0
    assert get(federation, provider_pid).json()["state"] == "REQUESTED"


def test_a_process_others_take_no_part_in_is_404_and_unchanged(federation, agreement, consumer):
    """THREATS 13: another member reads nor moves it, nor asks under another's agreement."""
    provider_pid = started(federation, agreement, consumer)
    for member in ("ng-health", "fr-research"):
        answer = get(federation, provider_pid, member)
        assert answer.status_code == 404, answer.text
        error_valid(answer.json(), ERROR)
        ended = post(
            federation,
            f"/transfers/{provider_pid}/termination",
            addressed("transfer-termination-message", provider_pid),
            member,
        )
        assert ended.status_code == 404
        error_valid(ended.json(), ERROR)
        theirs = post(
            federation, "/transfers/request", transfer_request(agreement, consumer), member
        )
        assert theirs.status_code == 404 and agreement not in theirs.text
    as_provider = post(
        federation, "/transfers/request", transfer_request(agreement, consumer), "sn-hospital"
    )
    assert as_provider.status_code == 404  # the provider is not the consumer
    assert get(federation, provider_pid).json()["state"] == "REQUESTED"
    assert processes(federation) == 1
    unknown = get(federation, "urn:uuid:00000000-0000-0000-0000-000000000000")
    assert unknown.status_code == 404


@pytest.mark.parametrize(
    "change",
    [
        {"agreementId": "urn:uuid:{a}\u200b"},  # an invisible character
        {"agreementId": "urn:uuid:{A}"},  # another case
        {"agreementId": "urn:uuid:{fullwidth}"},  # full-width digits
        {"format": "HttpData-\u0420USH"},  # a Cyrillic Er for the P
        {"format": "httpdata-push"},
        {"consumerPid": CONSUMER_PID + "\u200b"},
        {"consumerPid": "urn:uuid:ａ"},
    ],
)
def test_look_alike_ids_and_names_name_nothing(federation, agreement, consumer, change):
    """THREATS 4: an id or format that differs from the real one by an invisible, look-alike,
    case or width change is not the real one."""
    found = transfer_request(agreement, consumer)
    fullwidth = "".join(chr(ord(c) + 0xFEE0) if c.isdigit() else c for c in agreement)
    for key, value in change.items():
        found[key] = value.format(a=agreement, A=agreement.upper(), fullwidth=fullwidth)
    answer = post(federation, "/transfers/request", found)
    assert answer.status_code in (400, 404), answer.text
    error_valid(answer.json(), ERROR)
    assert processes(federation) == 0


@pytest.mark.parametrize(
    "change",
    [
        {"consumerPid": "urn:" + "x" * 600},
        {
            "dataAddress": {
                "@type": "DataAddress",
                "endpointType": "x",
                "endpointProperties": [{"@type": "EndpointProperty", "name": "n", "value": "v"}]
                * 21,
            }
        },
        {"callbackAddress": "http://127.0.0.1/" + "a" * 600},
        {"dataAddress": {"@type": "DataAddress", "endpointType": "x", "nested": deep(500)}},
    ],
)
def test_large_or_deep_messages_are_refused_before_anything_is_stored(
    federation, agreement, consumer, change
):
    """THREATS 15: declared lists, long text and deep nesting are bounded."""
    found = {**transfer_request(agreement, consumer), **change}
    answer = post(federation, "/transfers/request", found)
    assert 400 <= answer.status_code < 500, answer.text
    if answer.headers["content-type"] == "application/json":
        error_valid(answer.json(), ERROR)
    assert processes(federation) == 0


@pytest.mark.parametrize(
    "body",
    [
        None,  # not JSON
        [],
        {"@context": ["https://w3id.org/dspace/2025/1/context.jsonld"], "@type": "Nonsense"},
        {"@context": ["https://example.org/other"], "@type": "TransferRequestMessage"},
        {
            "@context": ["https://w3id.org/dspace/2025/1/context.jsonld"],
            "@type": "TransferRequestMessage",
            "consumerPid": 7,
        },
    ],
)
def test_malformed_messages_are_transfer_errors_not_crashes(federation, agreement, body):
    """THREATS 16: every error is the binding's document, naming what is wrong, no trace."""
    headers = bearer(federation.keys["fr-lab"])
    if body is None:
        answer = federation.client.post(
            f"{BASE}/transfers/request",
            content=b"{not json",
            headers={**headers, "Content-Type": "application/json"},
        )
        assert 400 <= answer.status_code < 500
    else:
        answer = federation.client.post(f"{BASE}/transfers/request", json=body, headers=headers)
        assert answer.status_code == 400, answer.text
        error_valid(answer.json(), ERROR)
    assert "Traceback" not in answer.text
    unauthenticated = post(federation, "/transfers/request", {}, None)
    assert unauthenticated.status_code == 401
    error_valid(unauthenticated.json(), ERROR)


def test_messages_the_state_does_not_take_are_400_naming_the_state(federation, agreement, consumer):
    provider_pid = started(federation, agreement, consumer)
    for name, path in (
        ("transfer-completion-message", "completion"),
        ("transfer-suspension-message", "suspension"),
        ("transfer-start-message", "start"),
    ):
        answer = post(
            federation, f"/transfers/{provider_pid}/{path}", addressed(name, provider_pid)
        )
        assert answer.status_code == 400, answer.text
        schema_valid(answer.json(), ERROR)  # both pids: the process's
        assert "REQUESTED" in answer.json()["reason"][0]
    wrong_path = post(
        federation,
        f"/transfers/{provider_pid}/termination",
        addressed("transfer-completion-message", provider_pid),
    )
    assert wrong_path.status_code == 400 and "TransferTerminationMessage" in wrong_path.text
    as_provider = post(
        federation,
        f"/transfers/{provider_pid}/start",
        addressed("transfer-start-message", provider_pid),
        "sn-hospital",
    )
    assert as_provider.status_code == 400 and "/v1/transfers" in as_provider.json()["reason"][0]
    assert get(federation, provider_pid).json()["state"] == "REQUESTED"


def test_the_consumer_ends_it_and_the_provider_hears_the_brokers_words(
    federation, agreement, consumer
):
    """THREATS 8: the consumer's reasons (an e-mail address here) reach no one."""
    provider_pid = started(federation, agreement, consumer)
    ending = addressed("transfer-termination-message", provider_pid)
    too_many = {**ending, "reason": ["x"] * 21}  # THREATS 15: a declared list is bounded
    refused = post(federation, f"/transfers/{provider_pid}/termination", too_many)
    assert refused.status_code == 400, refused.text
    schema_valid(refused.json(), ERROR)
    ending["reason"] = ["ask aminata.diallo@example.org for the raw file"]
    answer = post(federation, f"/transfers/{provider_pid}/termination", ending)
    assert answer.status_code == 200, answer.text
    schema_valid(answer.json(), PROCESS)
    assert answer.json()["state"] == "TERMINATED"
    [notice] = [n for n in notices(federation) if n["kind"] == "transfer.terminated"]
    assert "aminata" not in str(notices(federation))
    assert "TransferTerminationMessage" in notice["detail"]
    assert deliver(federation) == 0  # what the consumer said is not sent back
    again = post(federation, f"/transfers/{provider_pid}/termination", ending)
    assert again.status_code == 400  # ended
    send(federation, agreement)  # a later transfer carries no ended process
    assert advance(federation) == 0


def test_the_provider_ends_it_and_the_connector_hears_it(federation, agreement, consumer):
    provider_pid = started(federation, agreement, consumer)
    ending = addressed("transfer-termination-message", provider_pid)
    ending["reason"] = ["call +221 77 123 45 67"]
    answer = post(federation, f"/transfers/{provider_pid}/termination", ending, "sn-hospital")
    assert answer.status_code == 200 and answer.json()["state"] == "TERMINATED"
    assert deliver(federation) == 1
    [(path, sent)] = consumer.received
    assert path.endswith("/termination") and sent["reason"] == [transfers.ENDED_BY_PROVIDER]


def test_only_an_agreement_in_force_can_be_asked_for(federation, agreement, consumer):
    with federation.client.app.state.sessionmaker() as session:
        found = session.get(Agreement, agreement)
        found.state, found.reason = "suspended", "the FR record now forbids research"
        session.commit()
    answer = post(federation, "/transfers/request", transfer_request(agreement, consumer))
    assert answer.status_code == 400, answer.text
    error_valid(answer.json(), ERROR)
    assert "suspended" in answer.json()["reason"][0]
    assert processes(federation) == 0
    assert not [n for n in notices(federation) if n["kind"] == "transfer.requested"]


def test_an_agreement_not_yet_finalized_cannot_be_asked_for(federation, inbox, consumer):
    agreed = agree(federation, inbox, verify=False)
    answer = post(federation, "/transfers/request", transfer_request(agreed, consumer))
    assert answer.status_code == 400 and "AGREED" in answer.json()["reason"][0]


def test_a_database_fault_is_a_503_transfer_error(federation, agreement, consumer, monkeypatch):
    """THREATS 17: a database that does not answer is a fault to wait out, in the binding's
    own error document, never a bare 500."""

    def frozen(*args, **kwargs):
        raise OperationalError("SELECT", {}, Exception("canceling statement due to timeout"))

    monkeypatch.setattr(transfers, "request", frozen)
    monkeypatch.setattr(transfers, "get", frozen)
    answer = post(federation, "/transfers/request", transfer_request(agreement, consumer))
    assert answer.status_code == 503, answer.text
    assert answer.headers["Retry-After"] == "5"
    error_valid(answer.json(), ERROR)
    assert "canceling" not in answer.text
    seen = get(federation, "urn:uuid:00000000-0000-0000-0000-000000000000")
    assert seen.status_code == 503 and seen.json()["@type"] == "TransferError"


def test_a_connector_that_fails_hears_it_later_in_order(federation, agreement, consumer, inbox):
    provider_pid = started(federation, agreement, consumer, inbox)
    send(federation, agreement)
    advance(federation)
    drain(federation)
    advance(federation)
    consumer.failures = 1
    assert deliver(federation) == 0
    with federation.client.app.state.sessionmaker() as session:
        kept = session.get(ProtocolTransfer, provider_pid.removeprefix("urn:uuid:"))
        assert (kept.attempts, kept.last_error) == (1, "the consumer answered 503")
        retry_at = kept.next_attempt_at
    assert deliver(federation) == 0  # not before its time
    assert deliver(federation, retry_at + timedelta(seconds=1)) == 2
    assert [sent["@type"] for _, sent in consumer.received] == [
        "TransferStartMessage",
        "TransferCompletionMessage",
    ]


def test_the_job_runner_moves_processes(federation, agreement, consumer, inbox):
    """The chore the broker runs: :func:`broker.dsp.transfers.advance_due`."""
    provider_pid = started(federation, agreement, consumer, inbox)
    send(federation, agreement)
    drain(federation)
    factory = federation.client.app.state.sessionmaker
    assert transfers.advance_due(factory) == 2  # linked; delivered: started and completed
    assert transfers.advance_due(factory) == 0
    assert get(federation, provider_pid).json()["state"] == "COMPLETED"
    with factory() as session:
        kinds = session.scalars(select(Notification.kind)).all()
    assert "transfer.requested" in kinds


def test_processes_waiting_for_data_hold_back_none_that_has_it(
    federation, agreement, consumer, monkeypatch
):
    """A pass looks at a bounded number of processes: those whose data came, not the oldest
    ones still waiting for theirs."""
    monkeypatch.setattr(transfers, "PER_PASS", 1)
    waiting = started(federation, agreement, consumer)  # the oldest: no data comes for it
    other = agree(federation, None)
    found = transfer_request(other, consumer)
    found["consumerPid"] = "urn:uuid:another-process"
    served = post(federation, "/transfers/request", found).json()["providerPid"]
    send(federation, other)
    assert advance(federation) == 1
    with federation.client.app.state.sessionmaker() as session:
        assert session.get(ProtocolTransfer, served.removeprefix("urn:uuid:")).transfer_id
        assert session.get(ProtocolTransfer, waiting.removeprefix("urn:uuid:")).transfer_id is None


def test_a_callback_that_now_resolves_inside_is_not_called(federation, agreement, consumer):
    """THREATS 14: the callback is checked again before each message."""
    provider_pid = started(federation, agreement, consumer)
    factory = federation.client.app.state.sessionmaker
    with factory() as session:
        kept = session.get(ProtocolTransfer, provider_pid.removeprefix("urn:uuid:"))
        kept.callback_address = "http://169.254.169.254/latest"
        session.commit()
    ending = addressed("transfer-termination-message", provider_pid)
    assert post(
        federation, f"/transfers/{provider_pid}/termination", ending, "sn-hospital"
    ).is_success
    assert deliver(federation) == 0
    with factory() as session:
        kept = session.get(ProtocolTransfer, provider_pid.removeprefix("urn:uuid:"))
        assert kept.last_error.startswith("callback address refused: it resolves to 169.254")
    assert consumer.received == []


def test_a_body_over_the_size_limit_is_refused_before_it_is_read(federation, agreement, consumer):
    """THREATS 15: the broker's body limit holds on the protocol's routes."""
    found = {**transfer_request(agreement, consumer), "padding": "x" * 3_000_000}
    answer = post(federation, "/transfers/request", found)
    assert answer.status_code == 413, answer.text[:200]
    assert processes(federation) == 0


def test_one_transfer_carries_one_process_the_oldest_first(federation, agreement, consumer):
    first = started(federation, agreement, consumer)
    found = transfer_request(agreement, consumer)
    found["consumerPid"] = "urn:uuid:the-second-process"
    second = post(federation, "/transfers/request", found).json()["providerPid"]
    one = send(federation, agreement)
    assert advance(federation) == 1
    assert advance(federation) == 0  # the transfer is taken
    two = send(federation, agreement)
    assert advance(federation) == 1
    with federation.client.app.state.sessionmaker() as session:
        carried = {
            pid: session.get(ProtocolTransfer, pid.removeprefix("urn:uuid:")).transfer_id
            for pid in (first, second)
        }
    assert carried == {first: one["id"], second: two["id"]}
