"""The suite's property, on the surfaces added since it was written: whatever a member sends by
reference, asks as an aggregate release or writes in the catalog, nothing identifying crosses.

- **By reference.** The random tables of :mod:`tests.adversarial.test_property`, written as
  CSV or Parquet under the source's granted folder and sent by ``location``: when approved,
  the Parquet files the broker wrote for the destination pass the judge (no identifier column,
  no original id or e-mail anywhere in their bytes, k >= 3 on what an attacker knows); when
  not, the broker wrote nothing there.
- **Aggregate releases.** Random tables and random queries (histograms with keys from the data,
  histograms with keys the sender declares, drawn from the table's own values, ids and e-mails
  among them; sums; counts): an approved release's JSON holds no id or e-mail of the table, and
  a refusal is a clean problem that does not echo one.
- **The catalog.** A description with an identifier of the labelled corpus (every strong kind,
  every disguise) in a random field is refused, and the catalog another member reads never
  shows it.

Deterministic (``derandomize``) and bounded like the original property; each example is a real
request to a real broker, and each failure names its example.
"""

from __future__ import annotations

import io
import json
import re
import uuid

import pandas as pd
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.adversarial import judge
from tests.adversarial.conftest import DESTINATION, SOURCE, assert_clean_refusal
from tests.adversarial.test_property import Scenario, attacker_known, scenarios
from tests.adversarial.test_references import cluster, refs  # noqa: F401 (fixtures)
from tests.fixtures.identifiers.corpus import DISGUISES, disguised, identifiers


def bounded(examples: int) -> settings:
    """The original property's settings, with this many examples."""
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        phases=(Phase.explicit, Phase.generate),
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.function_scoped_fixture,
        ],
    )


# --- by reference ----------------------------------------------------------------------------


def _written_for(reference_broker, transfer_id: str) -> list:
    out = reference_broker.storage.out
    return sorted(p for p in out.rglob("*") if transfer_id in str(p) and p.is_file())


@bounded(8)
@given(scenario=scenarios().filter(lambda s: s.fmt in ("csv", "parquet")))
def test_whatever_is_approved_by_reference_passes_the_judge(refs, scenario: Scenario):  # noqa: F811
    frame, secrets = scenario.table()
    name = f"property-{uuid.uuid4().hex[:8]}.{scenario.fmt}"
    path = refs.storage.mine / name
    if scenario.fmt == "parquet":
        frame.to_parquet(path, index=False)
    else:
        frame.to_csv(path, index=False)
    form = {"anonymize": scenario.anonymize}
    qi, sensitive = scenario.declared("qi"), scenario.declared("sensitive")
    form |= {"quasi_identifiers": ",".join(qi), "sensitive": ",".join(sensitive)}
    answer = refs.broker.client.post(
        f"{refs.broker.url}/v1/transfers",
        headers={"Authorization": f"Bearer {refs.broker.keys[SOURCE]}"},
        data={"destination": DESTINATION, "purpose": "research", "location": str(path)} | form,
    )
    if answer.status_code != 202:
        assert_clean_refusal(answer, (400, 403, 413, 422))
        return
    refs.run_jobs()
    job = refs.job(answer)
    decision = job["transfer"]
    print(f"{scenario} -> {job['state']} {decision and decision['status']}")  # pytest -s
    if decision is None or decision["status"] != "approved":
        assert _written_for(refs, job["id"]) == [], "not approved, yet files were written"
        return
    files = [p for p in _written_for(refs, decision["id"]) if p.suffix == ".parquet"]
    assert files, f"{scenario}: approved, and no file written for the destination"
    delivered = pd.concat([pd.read_parquet(p) for p in files], ignore_index=True)
    body = io.BytesIO()
    delivered.to_parquet(body, index=False)
    problems = judge.verdict(
        {"content-type": "application/vnd.apache.parquet"},
        body.getvalue(),
        known_sets=attacker_known(delivered, sensitive),
        secrets=secrets,
    )
    raw = b"".join(p.read_bytes() for p in files)
    problems += [f"secret {s!r} in a written file" for s in secrets if str(s).encode() in raw]
    assert problems == [], f"{scenario}: approved, and the judge finds:\n- " + "\n- ".join(problems)


# --- aggregate releases ----------------------------------------------------------------------


@st.composite
def releases(draw) -> tuple[Scenario, list[dict]]:
    scenario = draw(scenarios())
    frame, _secrets = scenario.table()
    columns = list(frame.columns)
    queries = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(("count", "count_by", "declared", "sum")))
        if kind == "count":
            queries.append({"type": "count"})
        elif kind == "sum":
            numeric = [c for c in columns if c.startswith("int_")]
            if numeric:
                queries.append({"type": "sum", "column": numeric[0], "bounds": [0, 100]})
        else:
            picked = draw(st.lists(st.sampled_from(columns), min_size=1, max_size=2, unique=True))
            query = {"type": "count_by", "columns": picked}
            if kind == "declared":  # the sender names the keys: the table's own values
                values = [str(v) for v in frame[picked[0]].drop_duplicates().head(4)]
                query = {"type": "count_by", "columns": picked[:1], "keys": {picked[0]: values}}
            queries.append(query)
    return scenario, queries


@pytest.fixture(scope="module")
def releasing_source(broker) -> str:
    """A source of this module's own: its releases spend no other test's budget."""
    member = f"sn-prop-{uuid.uuid4().hex[:6]}"
    broker.register(member, "SN", f"http://127.0.0.1:9/{member}/inbox")
    return member


@bounded(20)
@given(drawn=releases())
def test_no_aggregate_release_carries_an_identifier(broker, releasing_source, drawn):
    scenario, queries = drawn
    frame, secrets = scenario.table()
    frame = frame.assign(row=range(len(frame)))  # each scenario a dataset of its own
    answer = broker.post(
        frame.to_csv(index=False).encode(),
        "data.csv",
        source=releasing_source,
        kind="aggregate",
        queries=json.dumps(queries),
        epsilon=1.0,
        delta=1e-6,
    )
    print(f"{scenario} {queries} -> HTTP {answer.status_code}")  # pytest -s
    if answer.status_code != 200:
        assert_clean_refusal(answer)
        echoed = [s for s in secrets if str(s) in answer.text]
        assert echoed == [], f"the refusal echoes {echoed[:3]}"
        return
    decision = answer.json()
    if decision["status"] != "approved":
        broker.assert_not_delivered(decision)
        return
    _headers, body = broker.delivered_for(decision["id"])
    text = body.decode()
    leaked = [s for s in secrets if str(s) in text]
    assert leaked == [], f"{scenario} {queries}: the release carries {leaked[:3]}"


# --- the catalog -----------------------------------------------------------------------------

STRONG = [
    (kind, country, text)
    for kind, country, text in identifiers()
    if kind in ("email", "iban", "payment_card", "passport", "national_id", "phone")
]
FIELDS = ("title", "description", "keywords", "column description", "purposes")


def _call(broker, member, method, path, **kwargs):
    headers = {"Authorization": f"Bearer {broker.keys[member]}"}
    return broker.client.request(method, f"{broker.url}{path}", headers=headers, **kwargs)


def _spellings(text: str) -> set[str]:
    """The identifier as written, and its digits or letters run together: what a reader of the
    catalog would recognise."""
    return {text, re.sub(r"[\s.\-]", "", text)}


@bounded(40)
@given(
    chosen=st.sampled_from(STRONG),
    how=st.sampled_from(DISGUISES),
    field=st.sampled_from(FIELDS),
    revised=st.booleans(),
)
def test_the_catalog_never_publishes_an_identifier(broker, chosen, how, field, revised):
    kind, country, plain = chosen
    hidden = disguised(plain, how)
    clean = {
        "title": "Admissions",
        "description": "Admissions by age band and sex",
        "keywords": ["health"],
        "columns": [{"name": "age", "role": "quasi_identifier"}],
        "purposes": ["research"],
    }
    described = json.loads(json.dumps(clean))
    if field == "keywords":
        described["keywords"] = ["health", hidden]
    elif field == "column description":
        described["columns"][0]["description"] = hidden
    elif field == "purposes":
        described["purposes"] = ["research", hidden]
    else:
        described[field] = f"{described[field]} {hidden}"
    if revised:  # published clean, then revised with the identifier
        first = _call(broker, SOURCE, "POST", "/v1/catalog/datasets", json=clean)
        assert first.status_code == 201, first.text
        url = f"/v1/catalog/datasets/{first.json()['id']}"
        answer = broker.client.put(
            f"{broker.url}{url}",
            headers={
                "Authorization": f"Bearer {broker.keys[SOURCE]}",
                "If-Match": first.headers["etag"],
            },
            json=described,
        )
    else:
        answer = _call(broker, SOURCE, "POST", "/v1/catalog/datasets", json=described)
    assert answer.status_code == 422, f"{kind} {country} {how} in {field}: {answer.text[:300]}"
    assert_clean_refusal(answer)
    seen = _call(broker, DESTINATION, "GET", "/v1/catalog", params={"limit": 100}).text
    for spelling in _spellings(plain) | {hidden}:
        assert spelling not in seen, f"the catalog shows {spelling!r}"
        assert spelling not in answer.text, f"the refusal echoes {spelling!r}"
