"""Contract negotiation, agreements and transfers under them, through the API, on SQLite and
PostgreSQL: the Dataspace Protocol's states, the broker's checks, idempotent messages."""

import base64
from datetime import UTC, datetime, timedelta

import pytest
import rfc8785

from broker.negotiations import service as negotiations
from broker.negotiations.expiry import expire_waiting
from broker.wire.signing import SignatureError, public_keys, verify_document
from tests import rfc9421
from tests.broker.conftest import ADMIN, bearer, drain
from tests.broker.test_catalog import measure, publish

READY = ["Age", "Gender", "Disease"]


@pytest.fixture
def dataset(federation) -> str:
    found = publish(federation).json()["id"]
    measure(federation, found)
    return found


def send(federation, member, path, body=None, key=None):
    headers = bearer(federation.keys[member]) | ({"Idempotency-Key": key} if key else {})
    return federation.client.post(path, headers=headers, json=body or {})


def request(federation, dataset, purpose="research", member="fr-research", key=None, **body):
    answer = send(
        federation,
        member,
        "/v1/negotiations",
        {"dataset_id": dataset, "purpose": purpose, **body},
        key=key,
    )
    assert answer.status_code in (200, 201), answer.text
    return answer.json()


def message(federation, member, negotiation, verb, body=None, key=None):
    return send(federation, member, f"/v1/negotiations/{negotiation}/{verb}", body, key)


def agree(federation, dataset, terms=None) -> dict:
    """Request, offer (with ``terms``), accept, verify: the negotiation once FINALIZED."""
    negotiation = request(federation, dataset)["id"]
    assert message(federation, "sn-hospital", negotiation, "offer", {"terms": terms}).is_success
    assert message(federation, "fr-research", negotiation, "accept").is_success
    answer = message(federation, "fr-research", negotiation, "verify")
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_a_negotiation_runs_through_the_protocols_states(federation, dataset):
    started = request(federation, dataset)
    assert (started["state"], started["waiting_for"]) == ("REQUESTED", "provider")
    required = started["required"]["terms"]
    assert (required["min_k"], required["min_l"], required["max_t"]) == (3, 2, 0.7)
    assert required["columns"] == READY  # NIN forbidden by SN, Name identifies the rows
    negotiation = started["id"]

    offered = message(
        federation, "sn-hospital", negotiation, "offer", {"terms": {"min_k": 5}}
    ).json()
    assert (offered["state"], offered["offered"]["min_k"]) == ("OFFERED", 5)
    accepted = message(federation, "fr-research", negotiation, "accept").json()
    assert accepted["state"] == "AGREED" and accepted["agreement_id"]
    finalized = message(federation, "fr-research", negotiation, "verify").json()
    assert (finalized["state"], finalized["waiting_for"]) == ("FINALIZED", None)
    assert [(e["message"], e["role"], e["state"]) for e in finalized["events"]] == [
        ("request", "consumer", "REQUESTED"),
        ("offer", "provider", "OFFERED"),
        ("accept", "consumer", "ACCEPTED"),
        ("agree", "broker", "AGREED"),
        ("verify", "consumer", "VERIFIED"),
        ("finalize", "broker", "FINALIZED"),
    ]
    assert finalized["events"][0]["protocol_message"] == "ContractRequestMessage"
    actions = [
        e["action"]
        for e in federation.client.get("/v1/audit?limit=500", headers=ADMIN).json()["items"]
    ]
    assert {"negotiation.request", "agreement.signed", "agreement.finalized"} <= set(actions)


def test_the_broker_signs_the_agreement_with_its_published_keys(federation, dataset):
    finalized = agree(federation, dataset, {"min_k": 5, "retention_days": 30})
    answer = federation.client.get(
        f"/v1/agreements/{finalized['agreement_id']}",
        headers=bearer(federation.keys["fr-research"]),
    )
    agreement = answer.json()
    assert (agreement["state"], agreement["terms"]["min_k"]) == ("active", 5)
    assert agreement["document"]["policy_versions"] == {"SN": 1, "FR": 1}
    jwks = federation.client.get("/.well-known/fedbroker-keys.json").json()
    keys = public_keys(jwks)
    assert verify_document(agreement["signature"], agreement["document"], keys)
    # As a party without our code checks it: Ed25519 over the document's RFC 8785 JSON.
    scheme, _, value = agreement["signature"].partition("=")
    kid, _, encoded = value.partition(":")
    assert scheme == "ed25519-jcs"
    [jwk] = [key for key in jwks["keys"] if rfc9421.thumbprint(key) == kid]
    signature = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
    rfc9421.ed25519_key(jwk).verify(signature, rfc8785.dumps(agreement["document"]))
    forged = {**agreement["document"], "terms": {**agreement["document"]["terms"], "min_k": 2}}
    with pytest.raises(SignatureError):
        verify_document(agreement["signature"], forged, keys)
    odrl = agreement["odrl"]
    assert odrl["@type"] == "odrl:Agreement"
    assert odrl["odrl:assignee"] == {"@id": "urn:fedbroker:member:fr-research"}
    hidden = federation.client.get(
        f"/v1/agreements/{agreement['id']}", headers=bearer(federation.keys["ng-health"])
    )
    assert hidden.status_code == 404


def test_what_the_records_do_not_allow_ends_at_once_with_the_reason(federation, dataset):
    ended = request(federation, dataset, purpose="marketing")
    assert ended["state"] == "TERMINATED"
    assert "FR does not allow the purpose 'marketing'" in ended["reason"]
    assert ended["events"][-1]["role"] == "broker"


@pytest.mark.parametrize(
    ("terms", "complaint"),
    [
        ({"min_k": 2}, "min_k: 2 where at least 3 is required"),
        ({"columns": ["Age", "Gender", "Disease", "NIN"]}, "columns NIN beyond"),
        ({"max_t": 0.9}, "max_t: 0.9 where at most 0.7"),
        ({"onward_transfer": True}, None),  # the provider's to allow
    ],
)
def test_an_offer_may_ask_more_than_the_records_never_less(federation, dataset, terms, complaint):
    negotiation = request(federation, dataset)["id"]
    answer = message(federation, "sn-hospital", negotiation, "offer", {"terms": terms})
    if complaint is None:
        assert answer.json()["state"] == "OFFERED"
        return
    assert answer.status_code == 422 and complaint in answer.json()["detail"]
    again = federation.client.get(
        f"/v1/negotiations/{negotiation}", headers=bearer(federation.keys["sn-hospital"])
    )
    assert again.json()["state"] == "REQUESTED"  # nothing stored half-way


def test_messages_the_state_does_not_accept_are_409_naming_the_state(federation, dataset):
    negotiation = request(federation, dataset)["id"]
    early = message(federation, "fr-research", negotiation, "accept")
    assert early.status_code == 409
    problem = early.json()
    assert problem["type"] == "urn:fedbroker:problem:invalid-transition"
    assert "is REQUESTED" in problem["detail"] and "'offer', 'terminate'" in problem["detail"]
    wrong_party = message(federation, "fr-research", negotiation, "offer")
    assert wrong_party.status_code == 409
    assert "only the provider may send 'offer'" in wrong_party.json()["detail"]
    outsider = message(federation, "ng-health", negotiation, "terminate", {"reason": "x"})
    assert outsider.status_code == 404


def test_an_offer_answered_twice_is_one_answer_or_a_conflict(federation, dataset):
    negotiation = request(federation, dataset)["id"]
    message(federation, "sn-hospital", negotiation, "offer")
    first = message(federation, "fr-research", negotiation, "accept")
    again = message(federation, "fr-research", negotiation, "accept")
    assert again.status_code == 200 and again.headers["idempotent-replayed"] == "true"
    assert again.json()["agreement_id"] == first.json()["agreement_id"]
    other = message(federation, "fr-research", negotiation, "request", {"columns": ["Age"]})
    assert other.status_code == 409 and "is AGREED" in other.json()["detail"]
    agreements = federation.client.get("/v1/agreements", headers=ADMIN).json()
    assert agreements["total"] == 1


def test_idempotency_keys_replay_the_same_message_and_refuse_another(federation, dataset):
    first = request(federation, dataset, key="ask-1")
    replay = request(federation, dataset, key="ask-1")
    assert replay["id"] == first["id"]
    other = send(
        federation,
        "fr-research",
        "/v1/negotiations",
        {"dataset_id": dataset, "purpose": "research", "columns": ["Age"]},
        key="ask-1",
    )
    assert other.status_code == 409
    assert other.json()["type"] == "urn:fedbroker:problem:idempotency-key-reused"
    negotiation = first["id"]
    message(federation, "sn-hospital", negotiation, "offer", key="offer-1")
    replayed = message(federation, "sn-hospital", negotiation, "offer", key="offer-1")
    assert replayed.headers["idempotent-replayed"] == "true"
    reused = message(
        federation, "sn-hospital", negotiation, "terminate", {"reason": "no"}, key="offer-1"
    )
    assert reused.status_code == 409


def test_a_counter_request_gets_new_terms_from_the_broker(federation, dataset):
    negotiation = request(federation, dataset)["id"]
    message(federation, "sn-hospital", negotiation, "offer")
    answer = message(
        federation, "fr-research", negotiation, "request", {"columns": ["Age"], "retention_days": 7}
    ).json()
    assert (answer["state"], answer["offered"]) == ("REQUESTED", None)
    assert answer["required"]["terms"]["columns"] == ["Age"]
    assert answer["required"]["terms"]["retention_days"] == 7


def test_a_negotiation_that_waits_too_long_is_ended(federation, dataset, connection):
    negotiation = request(federation, dataset)["id"]
    factory = federation.client.app.state.sessionmaker
    with factory() as session:
        assert negotiations.expire(session, 3600) == 0
        later = datetime.now(UTC) + timedelta(hours=2)
        assert negotiations.expire(session, 3600, now=later) == 1
    ended = federation.client.get(
        f"/v1/negotiations/{negotiation}", headers=bearer(federation.keys["fr-research"])
    ).json()
    assert ended["state"] == "TERMINATED" and "no answer in" in ended["reason"]


def test_withdrawing_the_dataset_ends_its_open_negotiations(federation, dataset):
    negotiation = request(federation, dataset)["id"]
    federation.client.delete(
        f"/v1/catalog/datasets/{dataset}", headers=bearer(federation.keys["sn-hospital"])
    )
    ended = federation.client.get(
        f"/v1/negotiations/{negotiation}", headers=bearer(federation.keys["fr-research"])
    ).json()
    assert ended["state"] == "TERMINATED" and "withdrawn" in ended["reason"]
    refused = send(
        federation,
        "fr-research",
        "/v1/negotiations",
        {"dataset_id": dataset, "purpose": "research"},
    )
    assert refused.status_code == 404


def test_listing_shows_each_member_its_own(federation, dataset):
    request(federation, dataset)
    mine = federation.client.get("/v1/negotiations", headers=bearer(federation.keys["sn-hospital"]))
    assert mine.json()["total"] == 1
    other = federation.client.get("/v1/negotiations", headers=bearer(federation.keys["ng-health"]))
    assert other.json()["total"] == 0
    filtered = federation.client.get(
        "/v1/negotiations", headers=ADMIN, params={"state": ["OFFERED", "TERMINATED"]}
    )
    assert filtered.json()["total"] == 0


# --- F-SLA changes and agreements -----------------------------------------------------------


def put_policy(federation, jurisdiction: str, change):
    current = federation.client.get(f"/v1/policies/{jurisdiction}", headers=ADMIN)
    record = change(current.json()["record"])
    answer = federation.client.put(
        f"/v1/policies/{jurisdiction}",
        headers={**ADMIN, "If-Match": current.headers["etag"]},
        json=record,
    )
    assert answer.status_code == 200, answer.text


def test_an_fsla_change_that_breaks_an_agreement_suspends_it_and_tells_both(federation, dataset):
    agreement_id = agree(federation, dataset)["agreement_id"]

    def stricter(record):
        record["import_rules"]["min_k"] = 10
        return record

    put_policy(federation, "FR", stricter)
    agreement = federation.client.get(f"/v1/agreements/{agreement_id}", headers=ADMIN).json()
    assert agreement["state"] == "suspended"
    assert "min_k: 3 where at least 10 is required" in agreement["reason"]
    for member in ("sn-hospital", "fr-research"):
        [notice] = federation.client.get(
            "/v1/notifications", headers=bearer(federation.keys[member])
        ).json()
        assert (notice["kind"], notice["subject"]) == ("agreement.suspended", agreement_id)
    refused = federation.send(
        "sn-hospital",
        "patients_published.csv",
        destination="fr-research",
        agreement_id=agreement_id,
    )
    assert refused.status_code == 409 and "suspended" in refused.json()["detail"]

    def back(record):
        record["import_rules"]["min_k"] = 3
        return record

    put_policy(federation, "FR", back)
    restored = federation.client.get(f"/v1/agreements/{agreement_id}", headers=ADMIN).json()
    assert (restored["state"], restored["reason"]) == ("active", None)
    notices = federation.client.get(
        "/v1/notifications", headers=bearer(federation.keys["fr-research"])
    ).json()
    assert [n["kind"] for n in notices] == ["agreement.suspended", "agreement.restored"]
    newer = federation.client.get(
        "/v1/notifications",
        headers=bearer(federation.keys["fr-research"]),
        params={"after": notices[0]["id"]},
    ).json()
    assert [n["kind"] for n in newer] == ["agreement.restored"]


# --- transfers under an agreement -----------------------------------------------------------


def test_a_transfer_under_an_agreement_meets_its_terms_as_well(federation, dataset):
    agreement_id = agree(federation, dataset, {"min_k": 5, "retention_days": 30})["agreement_id"]
    # patients_published.csv: k = 3 on Age + Gender, which the records accept, not the terms
    answer = federation.send(
        "sn-hospital",
        "patients_published.csv",
        destination="fr-research",
        quasi_identifiers="Age,Gender",
        sensitive="Disease",
        agreement_id=agreement_id,
    )
    decision = answer.json()
    assert decision["status"] == "anonymization_required", decision["rules"]
    failed = [
        (r["rule"], r["scope"], r["jurisdiction"]) for r in decision["rules"] if not r["passed"]
    ]
    assert ("min_k", "agreement", agreement_id) in failed
    assert ("min_k", "import", "FR") not in failed
    assert decision["agreement_id"] == agreement_id


def test_the_agreement_must_be_the_transfers(federation, dataset):
    agreement_id = agree(federation, dataset)["agreement_id"]
    wrong = federation.send(
        "sn-hospital",
        "patients_published.csv",
        destination="ng-health",
        purpose="research",
        agreement_id=agreement_id,
    ).json()
    assert wrong["status"] == "rejected"
    [rule] = [r for r in wrong["rules"] if r["rule"] == "agreement_terms"]
    assert "its consumer is 'fr-research', not 'ng-health'" in rule["detail"]
    purpose = federation.send(
        "sn-hospital",
        "patients_published.csv",
        destination="fr-research",
        purpose="public_health",
        agreement_id=agreement_id,
    ).json()
    assert purpose["status"] == "rejected"
    not_provider = federation.send(
        "sn-lab", "patients_published.csv", destination="fr-research", agreement_id=agreement_id
    )
    assert not_provider.status_code == 403
    unknown = federation.send(
        "sn-hospital", "patients_published.csv", destination="fr-research", agreement_id="nope"
    )
    assert unknown.status_code == 404


def test_an_agreement_not_yet_verified_allows_no_transfer(federation, dataset):
    negotiation = request(federation, dataset)["id"]
    message(federation, "sn-hospital", negotiation, "offer")
    agreement_id = message(federation, "fr-research", negotiation, "accept").json()["agreement_id"]
    answer = federation.send(
        "sn-hospital",
        "patients_published.csv",
        destination="fr-research",
        agreement_id=agreement_id,
    )
    assert answer.status_code == 409 and "AGREED" in answer.json()["detail"]


def test_columns_outside_the_agreement_are_dropped_before_anything_leaves(federation, dataset):
    agreement_id = agree(federation, dataset, {"columns": ["Age", "Gender"]})["agreement_id"]
    answer = federation.send(
        "sn-hospital",
        "patients_published.csv",
        destination="fr-research",
        quasi_identifiers="Age,Gender",
        sensitive="Disease",
        anonymize="auto",
        agreement_id=agreement_id,
    ).json()
    assert answer["status"] == "approved", answer["rules"]
    assert answer["dataset"]["anonymized"]
    steps = [(s["column"], s["method"]) for s in answer["remedy"]["steps"]]
    assert ("Disease", "drop") in steps


def test_the_agreement_and_the_retention_reach_the_transfer(federation, dataset, tmp_path):
    agreement_id = agree(federation, dataset, {"retention_days": 30})["agreement_id"]
    answer = federation.send(
        "sn-hospital",
        "patients_published.csv",
        destination="fr-research",
        quasi_identifiers="Age,Gender",
        sensitive="Disease",
        agreement_id=agreement_id,
    ).json()
    assert answer["status"] == "approved", answer["rules"]
    created = datetime.fromisoformat(answer["created_at"])
    assert datetime.fromisoformat(answer["retain_until"]) - created == timedelta(days=30)


# --- what the destination receives under an agreement ---------------------------------------


@pytest.fixture
def lab(federation, inbox):
    """fr-lab, a French member whose inbox records what it receives, with a FINALIZED
    agreement (no onward transfer, 30 days) for the measured dataset."""
    federation.add_lab(inbox.url)
    dataset = publish(federation).json()["id"]
    measure(federation, dataset)
    negotiation = request(federation, dataset, member="fr-lab")["id"]
    message(federation, "sn-hospital", negotiation, "offer", {"terms": {"retention_days": 30}})
    message(federation, "fr-lab", negotiation, "accept")
    finalized = message(federation, "fr-lab", negotiation, "verify").json()
    return finalized["agreement_id"]


def delivered(federation, lab, inbox):
    answer = federation.send(
        "sn-hospital",
        "patients_published.csv",
        destination="fr-lab",
        quasi_identifiers="Age,Gender",
        sensitive="Disease",
        agreement_id=lab,
    ).json()
    assert answer["status"] == "approved", answer["rules"]
    drain(federation)
    [(headers, body)] = inbox.received
    return answer, headers, body


def test_the_delivery_carries_the_agreement_and_the_retention_signed(federation, lab, inbox):
    answer, headers, _body = delivered(federation, lab, inbox)
    assert headers["x-fedbroker-agreement"] == lab
    until = datetime.fromisoformat(answer["retain_until"]).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert headers["x-fedbroker-retain-until"] == until
    jwks = federation.client.get("/.well-known/fedbroker-keys.json").json()
    lines = list(headers.items())
    checked = rfc9421.verify("POST", inbox.url, lines, jwks, tag="fedbroker-delivery")
    assert checked.fields["x-fedbroker-retain-until"] == until
    stretched = [
        (name, "2099-01-01T00:00:00Z" if name == "x-fedbroker-retain-until" else value)
        for name, value in lines
    ]
    with pytest.raises(rfc9421.Refused):  # a member cannot stretch its retention
        rfc9421.verify("POST", inbox.url, stretched, jwks, tag="fedbroker-delivery")


def test_data_received_under_no_onward_transfer_cannot_be_sent_on(federation, lab, inbox):
    answer, _headers, body = delivered(federation, lab, inbox)
    onward = federation.send(
        "fr-lab", body, destination="fr-research", quasi_identifiers="Age,Gender"
    ).json()
    assert onward["status"] == "rejected"
    [rule] = [r for r in onward["rules"] if r["rule"] == "onward_transfer"]
    assert answer["id"] in rule["detail"] and lab in rule["detail"]
    # The source itself may send its own data elsewhere: the rule follows the receiver.
    own = federation.send(
        "sn-hospital", body, destination="fr-research", quasi_identifiers="Age,Gender"
    ).json()
    assert all(r["rule"] != "onward_transfer" for r in own["rules"])


def test_the_destination_says_when_it_deleted_the_data(federation, lab, inbox):
    answer, _headers, _body = delivered(federation, lab, inbox)
    url = f"/v1/transfers/{answer['id']}/erasure"
    stranger = federation.client.post(url, headers=bearer(federation.keys["fr-research"]))
    assert stranger.status_code == 404
    source = federation.client.post(url, headers=bearer(federation.keys["sn-hospital"]))
    assert source.status_code == 404  # only the destination deleted anything
    erased = federation.client.post(url, headers=bearer(federation.keys["fr-lab"]))
    assert erased.status_code == 200 and erased.json()["erased_at"]
    again = federation.client.post(url, headers=bearer(federation.keys["fr-lab"]))
    assert again.json()["erased_at"] == erased.json()["erased_at"]
    entries = federation.client.get("/v1/audit?limit=500", headers=ADMIN).json()["items"]
    [entry] = [e for e in entries if e["action"] == "transfer.erased"]
    assert entry["details"]["agreement"] == lab and not entry["details"]["after_the_limit"]


def test_a_suspended_member_neither_asks_nor_is_asked(federation, dataset):
    federation.client.post("/v1/members/fr-research/suspend", headers=ADMIN)
    refused = send(
        federation,
        "fr-research",
        "/v1/negotiations",
        {"dataset_id": dataset, "purpose": "research"},
    )
    assert refused.status_code == 403
    assert refused.json()["detail"] == "Member 'fr-research' is suspended"
    federation.client.post("/v1/members/fr-research/reactivate", headers=ADMIN)
    federation.client.post("/v1/members/sn-hospital/suspend", headers=ADMIN)
    gone = send(
        federation,
        "fr-research",
        "/v1/negotiations",
        {"dataset_id": dataset, "purpose": "research"},
    )
    assert gone.status_code == 404  # its datasets left the catalog with it
    federation.client.post("/v1/members/sn-hospital/reactivate", headers=ADMIN)
    assert request(federation, dataset)["state"] == "REQUESTED"


def test_the_brokers_job_runner_ends_negotiations_that_wait_too_long(federation, dataset):
    """The chore broker.main gives the job runner's supervisor: with a timeout of 0, a
    negotiation just requested has waited too long at the next chore's run."""
    negotiation = request(federation, dataset)["id"]
    [chore] = [
        c for c in federation.client.app.state.job_runner.chores if c.run.func is expire_waiting
    ]
    assert chore.every_seconds == federation.client.app.state.settings.negotiation_sweep_seconds
    assert chore.run.func is expire_waiting
    assert expire_waiting(federation.client.app.state.sessionmaker, 0) == 1
    ended = federation.client.get(
        f"/v1/negotiations/{negotiation}", headers=bearer(federation.keys["fr-research"])
    ).json()
    assert ended["state"] == "TERMINATED"
