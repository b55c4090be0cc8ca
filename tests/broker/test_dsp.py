"""The Dataspace Protocol's HTTPS binding (release 2025-1), checked against the specification
itself: every document the broker sends validates against the protocol's own JSON Schemas, and
the specification's example messages, their ids made the broker's, run through the binding.

The schemas and examples are read in place from the shared data folder (``../shared`` beside
the repository, or ``$FEDBROKER_SHARED``); without them these tests skip, saying so.
"""

import copy
import json

import pytest

from broker.dsp.router import BASE
from tests.broker.conftest import ADMIN, bearer
from tests.broker.test_catalog import measure, publish
from tests.shared_data import DATA

SPEC = DATA / "dsp-2025-1"
pytestmark = pytest.mark.skipif(
    not (SPEC / "catalog").is_dir(), reason=f"the protocol's schemas are not at {SPEC}"
)
CONSUMER_PID = "urn:uuid:32541fe6-c580-409e-85a8-8a9a32fbe833"
CALLBACK = "http://127.0.0.1:9/callback"  # loopback is allowed to this test's inboxes


def schema_valid(document: dict, schema: str) -> None:
    """``document`` against the protocol's schema ``schema`` (its $refs resolved among the
    release's files by their $id)."""
    from jsonschema import Draft201909Validator
    from referencing import Registry, Resource

    resources = []
    for path in SPEC.glob("*/*-schema.json"):
        contents = _read_schema(path)
        resources.append((contents["$id"], Resource.from_contents(contents)))
    registry = Registry().with_resources(resources)
    root = _read_schema(SPEC / schema)
    errors = list(Draft201909Validator(root, registry=registry).iter_errors(document))
    assert not errors, [error.message for error in errors[:3]]


def _read_schema(path) -> dict:
    """A schema of the release, its JSON pointers as JSON Schema writes them: the transfer
    schemas refer to ``...#definitions/X``, which the Java validator the specification is
    tested with reads as ``#/definitions/X`` and a strict 2019-09 resolver refuses."""
    return json.loads(path.read_text().replace(".json#definitions/", ".json#/definitions/"))


def error_valid(document: dict, schema: str) -> None:
    """An error document: against the schema where it names both pids; else (a request that
    named one, see broker.dsp.route) against the schema with the missing pid as the request
    left it, absent."""
    if document["@type"] in ("ContractNegotiationError", "TransferError"):
        missing = {"providerPid", "consumerPid"} - set(document)
        document = {**document, **{pid: "(not named by the request)" for pid in missing}}
    schema_valid(document, schema)


def example(name: str) -> dict:
    return json.loads((SPEC / name).read_text())


@pytest.fixture
def dataset(federation) -> str:
    found = publish(federation).json()["id"]
    measure(federation, found)
    return found


def post(federation, path, body, member="fr-research"):
    return federation.client.post(
        BASE + path, json=body, headers=bearer(federation.keys[member]) if member else {}
    )


def initial_request(dataset: str, purpose: str = "research") -> dict:
    message = example("negotiation/example/contract-request-message_initial.json")
    message["offer"]["@id"] = f"urn:fedbroker:offer:{dataset}:1:{purpose}"
    message["offer"]["target"] = f"urn:uuid:{dataset}"
    message["callbackAddress"] = CALLBACK
    return message


def addressed(name: str, provider_pid: str) -> dict:
    message = copy.deepcopy(example(name))
    message["providerPid"] = provider_pid
    message["consumerPid"] = CONSUMER_PID
    return message


def test_the_version_document_needs_no_authorization(federation):
    answer = federation.client.get("/.well-known/dspace-version")
    assert answer.status_code == 200
    document = answer.json()
    schema_valid(document, "common/protocol-version-schema.json")
    [entry] = document["protocolVersions"]
    assert (entry["version"], entry["binding"], entry["path"]) == ("2025-1", "HTTPS", BASE)


def test_the_catalog_is_the_protocols_catalog_with_the_members_offers(federation, dataset):
    answer = post(
        federation, "/catalog/request", example("catalog/example/catalog-request-message.json")
    )
    assert answer.status_code == 200, answer.text
    catalog = answer.json()
    schema_valid(catalog, "catalog/catalog-schema.json")
    [found] = [d for d in catalog["dataset"] if d["@id"] == f"urn:uuid:{dataset}"]
    purposes = {
        c["rightOperand"]
        for offer in found["hasPolicy"]
        for c in offer["permission"][0]["constraint"]
        if c["leftOperand"] == "purpose"
    }
    assert "research" in purposes
    one = federation.client.get(
        f"{BASE}/catalog/datasets/{dataset}", headers=bearer(federation.keys["fr-research"])
    )
    assert one.status_code == 200, one.text
    schema_valid(one.json(), "catalog/dataset-schema.json")
    assert one.json()["hasPolicy"] == found["hasPolicy"]


@pytest.mark.parametrize(
    ("body", "member", "status"),
    [
        (
            {
                "@context": ["https://w3id.org/dspace/2025/1/context.jsonld"],
                "@type": "CatalogRequestMessage",
            },
            None,
            401,
        ),
        (
            {"@context": ["https://example.org/other"], "@type": "CatalogRequestMessage"},
            "fr-research",
            400,
        ),
        (
            {"@context": ["https://w3id.org/dspace/2025/1/context.jsonld"], "@type": "Nonsense"},
            "fr-research",
            400,
        ),
        (
            {
                "@context": ["https://w3id.org/dspace/2025/1/context.jsonld"],
                "@type": "CatalogRequestMessage",
                "filter": [{"x": 1}],
            },
            "fr-research",
            400,
        ),
    ],
)
def test_catalog_errors_are_catalog_error_documents(federation, body, member, status):
    answer = post(federation, "/catalog/request", body, member)
    assert answer.status_code == status, answer.text
    schema_valid(answer.json(), "catalog/catalog-error-schema.json")
    assert answer.headers["content-type"].startswith("application/json")


def test_a_protocol_negotiation_is_the_v1_negotiation(federation, dataset):
    started = post(federation, "/negotiations/request", initial_request(dataset))
    assert started.status_code == 201, started.text
    document = started.json()
    schema_valid(document, "negotiation/contract-negotiation-schema.json")
    assert (document["consumerPid"], document["state"]) == (CONSUMER_PID, "REQUESTED")
    provider_pid = document["providerPid"]
    assert started.headers["Location"] == f"{BASE}/negotiations/{provider_pid}"
    again = post(federation, "/negotiations/request", initial_request(dataset))
    assert (again.status_code, again.json()) == (200, document)  # a connector's retry

    negotiation = provider_pid.removeprefix("urn:uuid:")
    seen = federation.client.get(
        f"/v1/negotiations/{negotiation}", headers=bearer(federation.keys["fr-research"])
    ).json()
    assert (seen["state"], seen["purpose"], seen["dataset_id"]) == (
        "REQUESTED",
        "research",
        dataset,
    )
    offered = federation.client.post(
        f"/v1/negotiations/{negotiation}/offer",
        headers=bearer(federation.keys["sn-hospital"]),
        json={"terms": {"min_k": 5}},
    )
    assert offered.status_code == 200, offered.text

    accepted = post(
        federation,
        f"/negotiations/{provider_pid}/events",
        addressed("negotiation/example/contract-negotiation-event-message.json", provider_pid),
    )
    assert accepted.status_code == 200, accepted.text
    assert accepted.json()["state"] == "AGREED"
    verified = post(
        federation,
        f"/negotiations/{provider_pid}/agreement/verification",
        addressed("negotiation/example/contract-agreement-verification-message.json", provider_pid),
    )
    assert verified.status_code == 200, verified.text
    got = federation.client.get(
        f"{BASE}/negotiations/{provider_pid}", headers=bearer(federation.keys["fr-research"])
    )
    schema_valid(got.json(), "negotiation/contract-negotiation-schema.json")
    assert got.json()["state"] == "FINALIZED"


def test_a_message_its_state_does_not_accept_is_a_400_error_document(federation, dataset):
    provider_pid = post(federation, "/negotiations/request", initial_request(dataset)).json()[
        "providerPid"
    ]
    early = post(
        federation,
        f"/negotiations/{provider_pid}/agreement/verification",
        addressed("negotiation/example/contract-agreement-verification-message.json", provider_pid),
    )
    assert early.status_code == 400, early.text
    schema_valid(early.json(), "negotiation/contract-negotiation-error-schema.json")  # both pids
    ended = post(
        federation,
        f"/negotiations/{provider_pid}/termination",
        addressed(
            "negotiation/example/contract-negotiation-termination-message.json", provider_pid
        ),
    )
    assert ended.status_code == 200 and ended.json()["state"] == "TERMINATED"
    seen = federation.client.get(
        f"/v1/negotiations/{provider_pid.removeprefix('urn:uuid:')}",
        headers=bearer(federation.keys["fr-research"]),
    ).json()
    assert seen["reason"].endswith(": License model does not fit.")


def test_a_negotiation_the_caller_may_not_see_is_404(federation, dataset):
    provider_pid = post(federation, "/negotiations/request", initial_request(dataset)).json()[
        "providerPid"
    ]
    for member in ("ng-health",):
        answer = federation.client.get(
            f"{BASE}/negotiations/{provider_pid}", headers=bearer(federation.keys[member])
        )
        assert answer.status_code == 404, answer.text
        error_valid(answer.json(), "negotiation/contract-negotiation-error-schema.json")
    unknown = federation.client.get(
        f"{BASE}/negotiations/urn:uuid:00000000-0000-0000-0000-000000000000",
        headers=bearer(federation.keys["fr-research"]),
    )
    assert unknown.status_code == 404
    wrong_pids = addressed(
        "negotiation/example/contract-negotiation-event-message.json", provider_pid
    )
    wrong_pids["consumerPid"] = "urn:uuid:someone-else"
    answer = post(federation, f"/negotiations/{provider_pid}/events", wrong_pids)
    assert answer.status_code == 400
    error_valid(answer.json(), "negotiation/contract-negotiation-error-schema.json")


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"callbackAddress": "http://169.254.169.254/latest/meta-data"}, "callbackAddress refused"),
        ({"callbackAddress": "file:///etc/passwd"}, "callbackAddress refused"),
        ({"callbackAddress": None}, "needs a callbackAddress"),
        ({"consumerPid": None}, "consumerPid"),
        (
            {
                "offer": {
                    "@type": "Offer",
                    "@id": "x",
                    "target": "https://example.org/data",
                    "permission": [],
                }
            },
            "target",
        ),
        ({"providerPid": "urn:uuid:x"}, "names no providerPid"),
    ],
)
def test_a_malformed_request_is_a_400_that_names_what_is_wrong(federation, dataset, change, reason):
    message = initial_request(dataset)
    for key, value in change.items():
        if value is None:
            message.pop(key)
        else:
            message[key] = value
    answer = post(federation, "/negotiations/request", message)
    assert answer.status_code == 400, answer.text
    error_valid(answer.json(), "negotiation/contract-negotiation-error-schema.json")
    assert reason in answer.json()["reason"][0]


def test_an_administrator_is_no_protocol_participant(federation):
    answer = federation.client.post(
        f"{BASE}/catalog/request",
        headers=ADMIN,
        json=example("catalog/example/catalog-request-message.json"),
    )
    assert answer.status_code == 403
    schema_valid(answer.json(), "catalog/catalog-error-schema.json")


@pytest.mark.parametrize(
    ("name", "model"),
    [
        ("catalog/example/catalog-request-message.json", "CatalogRequest"),
        ("catalog/example/dataset-request-message.json", "DatasetRequest"),
        ("negotiation/example/contract-request-message_initial.json", "ContractRequest"),
        ("negotiation/example/contract-request-message.json", "ContractRequest"),
        ("negotiation/example/contract-negotiation-event-message.json", "NegotiationEvent"),
        (
            "negotiation/example/contract-agreement-verification-message.json",
            "AgreementVerification",
        ),
        (
            "negotiation/example/contract-negotiation-termination-message.json",
            "NegotiationTermination",
        ),
    ],
)
def test_every_example_message_the_broker_accepts_reads(name, model):
    from broker.dsp import messages

    getattr(messages, model).model_validate(example(name))


@pytest.mark.parametrize(
    ("name", "path"),
    [
        ("negotiation/example/contract-negotiation-event-message.json", "events"),
        ("negotiation/example/contract-negotiation-termination-message.json", "termination"),
        (
            "negotiation/example/contract-agreement-verification-message.json",
            "agreement/verification",
        ),
    ],
)
def test_another_member_cannot_move_a_negotiation_it_takes_no_part_in(
    federation, dataset, name, path
):
    """THREATS 13: a member that is not a party, sending the right pids, gets 404, and the
    negotiation is as it was."""
    provider_pid = post(federation, "/negotiations/request", initial_request(dataset)).json()[
        "providerPid"
    ]
    answer = post(
        federation,
        f"/negotiations/{provider_pid}/{path}",
        addressed(name, provider_pid),
        "ng-health",
    )
    assert answer.status_code == 404, answer.text
    error_valid(answer.json(), "negotiation/contract-negotiation-error-schema.json")
    still = federation.client.get(
        f"{BASE}/negotiations/{provider_pid}", headers=bearer(federation.keys["fr-research"])
    )
    assert still.json()["state"] == "REQUESTED"


def test_an_identifier_in_a_termination_reason_is_refused(federation, dataset):
    """THREATS 5 and 8: the reason reaches the provider; an e-mail address in it is refused
    (400, the binding's answer to a message it cannot take), and nothing is recorded."""
    provider_pid = post(federation, "/negotiations/request", initial_request(dataset)).json()[
        "providerPid"
    ]
    message = addressed(
        "negotiation/example/contract-negotiation-termination-message.json", provider_pid
    )
    message["reason"] = ["ask aminata.diallo@example.org for the raw file"]
    answer = post(federation, f"/negotiations/{provider_pid}/termination", message)
    assert answer.status_code == 400, answer.text
    schema_valid(answer.json(), "negotiation/contract-negotiation-error-schema.json")
    assert "aminata" not in answer.text
    still = federation.client.get(
        f"{BASE}/negotiations/{provider_pid}", headers=bearer(federation.keys["fr-research"])
    )
    assert still.json()["state"] == "REQUESTED"


def test_a_message_nested_too_deep_is_answered_at_once(federation, dataset):
    """THREATS 15: a body over the JSON bounds is refused before it is parsed, and its error
    document is written without reading the body again (which waited forever)."""
    nested: list = []
    for _ in range(100):
        nested = [nested]
    message = {**initial_request(dataset), "deep": nested}
    answer = post(federation, "/negotiations/request", message)
    assert answer.status_code == 422, answer.text
    error_valid(answer.json(), "negotiation/contract-negotiation-error-schema.json")
    assert "nested" in answer.json()["reason"][0]
