"""GET /v1/transfers/{id}/report: the HTML page of a decision, for whoever may read the decision."""

from __future__ import annotations

import pytest

from broker import reports
from tests.broker.conftest import ADMIN, bearer

pytest.importorskip("matplotlib", reason="the 'reports' extra (matplotlib) is not installed")

QI = {"quasi_identifiers": "Age,Gender", "sensitive": "Disease"}


@pytest.fixture
def anonymized(federation) -> str:
    body = federation.send(
        "sn-hospital", "patients_original.csv", destination="fr-research", anonymize="auto", **QI
    ).json()
    assert body["status"] == "approved" and body["remedy"]["applied"], body
    return body["id"]


def report(federation, transfer_id: str, headers: dict):
    return federation.client.get(f"/v1/transfers/{transfer_id}/report", headers=headers)


def test_source_and_admin_see_the_whole_report(federation, anonymized):
    for headers in (bearer(federation.keys["sn-hospital"]), ADMIN):
        answer = report(federation, anonymized, headers)
        assert answer.status_code == 200, answer.text
        assert answer.headers["content-type"] == "text/html; charset=utf-8"
        assert "default-src 'none'" in answer.headers["content-security-policy"]
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["cache-control"] == "no-store"
        html = answer.text
        assert "Approved after anonymization by the broker" in html
        for chart in ("class-sizes", "risk", "attributes", "compare", "utility"):
            assert f'<svg role="img" class="chart" id="{chart}"' in html
        assert anonymized in html and "SN v1, FR v1" in html


def test_destination_sees_the_decision_without_the_uploads_figures(federation, anonymized):
    answer = report(federation, anonymized, bearer(federation.keys["fr-research"]))
    assert answer.status_code == 200, answer.text
    assert "<svg" not in answer.text and "NIN" not in answer.text
    assert "shown to its source and to admins only" in answer.text


def test_others_unknown_ids_and_anonymous_callers_get_problems(federation, anonymized):
    other = report(federation, anonymized, bearer(federation.keys["ng-health"]))
    assert other.status_code == 404
    assert other.headers["content-type"] == "application/problem+json"
    unknown = report(federation, "no-such-transfer", ADMIN)
    assert unknown.status_code == 404
    assert unknown.headers["content-type"] == "application/problem+json"
    assert unknown.json()["detail"] == "No transfer 'no-such-transfer'"
    assert report(federation, anonymized, {}).status_code == 401


def test_a_refused_transfer_is_not_shown_to_its_destination(federation):
    body = federation.send(
        "sn-hospital", "patients_original.csv", destination="fr-research", **QI
    ).json()
    assert body["status"] == "anonymization_required"
    assert report(federation, body["id"], bearer(federation.keys["fr-research"])).status_code == 404
    html = report(federation, body["id"], bearer(federation.keys["sn-hospital"])).text
    assert "Anonymization required" in html and "Remedy (verified on this data)" in html
    # the remedy's after figures (rows, k, classes) in a table beside the upload's
    assert 'id="before-after-table"' in html and 'id="compare"' not in html
    k_after = body["remedy"]["after"]["k"]
    assert f'k (smallest class)</td><td class="num">1</td><td class="num">{k_after}</td>' in html


def test_without_the_reports_extra_the_route_says_what_to_install(
    federation, anonymized, monkeypatch
):
    def unavailable(transfer):
        raise reports.ReportUnavailable("install 'fedbroker[reports]'")

    monkeypatch.setattr(reports, "transfer_page", unavailable)
    answer = report(federation, anonymized, ADMIN)
    assert answer.status_code == 501
    assert answer.headers["content-type"] == "application/problem+json"
    assert "fedbroker[reports]" in answer.json()["detail"]
