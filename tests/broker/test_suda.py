"""SUDA through a real broker: the max_dis_suda rule in a transfer's decision and the analysis
endpoint's ``suda`` option, checked against the brute-force oracle of tests/metrics/test_suda.py
on the SDC guideline table (sdcMicro's own test figures: scores 0, 0, 6, 0, 12, 0, 6, 10, 0, 0)."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.broker.conftest import ADMIN, bearer
from tests.fsla.test_suda_rule import GUIDELINE, KEYS, expected_max_dis
from tests.metrics.test_suda import oracle

CSV = GUIDELINE.to_csv(index=False).encode()
QI = {"quasi_identifiers": ",".join(KEYS)}


def bound_dis_suda(client, bound: float, **more) -> None:
    """SN's domestic rules bound DIS-SUDA (and let the broker anonymize, as seeded)."""
    current = client.get("/v1/policies/SN", headers=ADMIN)
    record = current.json()["record"]
    record["domestic_export"].update({"max_dis_suda": bound, **more})
    answer = client.put(
        "/v1/policies/SN", headers={**ADMIN, "If-Match": current.headers["ETag"]}, json=record
    )
    assert answer.status_code == 200, answer.text


def suda_rule(body: dict) -> dict:
    [found] = [r for r in body["rules"] if r["rule"] == "max_dis_suda"]
    return found


def test_a_transfer_over_the_bound_names_the_rule_and_the_fix(federation):
    bound_dis_suda(federation.client, 0.001, sampling_fraction=0.1)
    body = federation.send("sn-hospital", CSV, destination="sn-lab", **QI).json()
    assert body["status"] == "anonymization_required", body
    rule = suda_rule(body)
    assert not rule["passed"] and rule["threshold"] == 0.001
    assert rule["measured"] == pytest.approx(expected_max_dis(GUIDELINE, 0.1), abs=1e-6)
    assert "education 65 %" in rule["detail"] and "k >= 2" in rule["detail"]
    suda = body["report"]["suda"]  # the figures the rule read, stored with the decision
    assert suda["dis_fraction"] == 0.1 and suda["max_score"] == 12
    assert body["remedy"]["verified"] is True


def test_anonymize_auto_delivers_no_sample_unique(federation):
    bound_dis_suda(federation.client, 0.001)
    body = federation.send("sn-hospital", CSV, destination="sn-lab", anonymize="auto", **QI).json()
    assert body["status"] == "approved", body
    rule = suda_rule(body)
    assert rule["passed"] and rule["measured"] == 0.0
    assert body["report"]["suda"]["records_with_msus"] == 0
    assert body["remedy"]["before"]["report"]["suda"]["records_with_msus"] == 4
    assert body["report"]["quasi_identifiers"]["k"] >= 2


def test_without_the_rule_no_suda_is_measured(federation):
    body = federation.send("sn-hospital", CSV, destination="sn-lab", **QI).json()
    assert all(r["rule"] != "max_dis_suda" for r in body["rules"])
    assert "suda" not in body["report"]


def test_too_many_quasi_identifiers_is_a_clear_answer_not_a_long_search(federation):
    # class 15: 15 quasi-identifiers would search 32767 key sets; the search is not run
    bound_dis_suda(federation.client, 0.5)
    frame = pd.DataFrame({f"q{j}": [(i >> (j % 5)) & 1 for i in range(32)] for j in range(15)})
    body = federation.send(
        "sn-hospital",
        frame.to_csv(index=False).encode(),
        destination="sn-lab",
        quasi_identifiers=",".join(frame.columns),
    ).json()
    rule = suda_rule(body)
    assert not rule["passed"] and rule["measured"] is None
    assert "beyond the broker's bounds" in rule["detail"]


def analyze(federation, csv: bytes = CSV, **form):
    return federation.client.post(
        "/v1/analyze",
        headers=bearer(federation.keys["ng-health"]),
        files={"file": ("t.csv", csv)},
        data=form,
    )


def test_the_analysis_endpoint_gives_the_clis_suda_object(federation):
    answer = analyze(federation, suda="true", suda_dis_fraction="0.1", **QI)
    assert answer.status_code == 200, answer.text
    suda = answer.json()["suda"]
    records = [tuple(row) for row in GUIDELINE.astype(object).itertuples(index=False)]
    expected = oracle(records, 0.1)
    assert suda["quasi_identifiers"] == list(KEYS)
    assert suda["max_score"] == 12 and suda["records_with_msus"] == 4
    assert suda["max_dis_score"] == pytest.approx(max(expected["dis"]), abs=1e-9)
    assert list(suda["attribute_contributions"].values()) == pytest.approx(expected["attribute"])
    assert [r["row"] for r in suda["riskiest"]] == [4, 7, 2, 6]
    assert [r["score"] for r in suda["riskiest"]] == [12, 10, 6, 6]
    assert "records" not in suda  # not one entry per row of the upload
    assert "suda" not in analyze(federation, **QI).json()


@pytest.mark.parametrize(
    ("form", "detail"),
    [
        ({"suda": "true"}, "suda needs quasi_identifiers"),
        ({"suda_dis_fraction": "0.1", **QI}, "need suda=true"),
        ({"suda": "true", "suda_max_msu": "5", **QI}, "between 1 and the 4"),
    ],
)
def test_the_analysis_endpoint_refuses_what_suda_cannot_do(federation, form, detail):
    answer = analyze(federation, **form)
    assert answer.status_code == 422
    assert answer.headers["content-type"].startswith("application/problem+json")
    assert detail in answer.json()["detail"]


def test_a_wide_table_asks_for_a_bounded_msu_size(federation):
    frame = pd.DataFrame({f"q{j}": [(i >> (j % 5)) & 1 for i in range(32)] for j in range(15)})
    csv = frame.to_csv(index=False).encode()
    names = ",".join(frame.columns)
    refused = analyze(federation, csv, suda="true", quasi_identifiers=names)
    assert refused.status_code == 422 and "bound the MSU size" in refused.json()["detail"]
    bounded = analyze(federation, csv, suda="true", suda_max_msu="2", quasi_identifiers=names)
    assert bounded.status_code == 200 and bounded.json()["suda"]["max_msu_size"] == 2


def test_a_replay_reads_the_stored_figures_or_names_the_rule_it_cannot_replay(federation):
    client = federation.client
    federation.send("sn-hospital", CSV, destination="sn-lab", **QI)  # no SUDA measured
    bound_dis_suda(client, 0.5)
    federation.send("sn-hospital", CSV, destination="sn-lab", **QI)  # SUDA stored (passes)
    draft = client.get("/v1/policies/SN", headers=ADMIN).json()["record"]
    draft["domestic_export"]["max_dis_suda"] = 0.001
    body = client.post("/v1/policies/SN/replay", headers=ADMIN, json=draft).json()
    older, newer = sorted(body["items"], key=lambda item: bool(item["newly_failed"]))
    assert any("max_dis_suda" in text for text in older["not_replayed"])
    [failed] = newer["newly_failed"]
    assert failed["rule"] == "max_dis_suda"
    assert newer["new_verdict"] == "anonymization_required"
