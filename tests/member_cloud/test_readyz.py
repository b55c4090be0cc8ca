"""GET /readyz: what the broker's health checks ask a member cloud (no token needed)."""

from __future__ import annotations

import httpx

from tests.member_cloud.conftest import LOCAL_TOKEN, closed_port


def test_ready_while_the_inbox_can_be_written_then_503_with_the_reason(members, tmp_path):
    data = tmp_path / "sn-ready"
    server = members.start(
        "sn-ready",
        api_key="k" * 20,
        broker_url=f"http://127.0.0.1:{closed_port()}",
        data_dir=data,
        local_token=LOCAL_TOKEN,
    )
    with httpx.Client(base_url=server.url, timeout=10) as anyone:  # no token
        assert anyone.get("/readyz").json() == {"status": "ready"}
        (data / "inbox").rename(data / "inbox-moved")  # a delivery could not be stored now
        answer = anyone.get("/readyz")
        assert answer.status_code == 503
        assert answer.headers["content-type"] == "application/problem+json"
        problem = answer.json()
        assert problem["type"] == "urn:fedbroker:problem:not-ready"
        assert problem["detail"].endswith("its inbox folder is missing")
        assert str(data) not in problem["detail"]  # anyone may ask: no path
        (data / "inbox-moved").rename(data / "inbox")
        assert anyone.get("/readyz").status_code == 200
        assert list((data / "inbox").iterdir()) == []  # the probe's file is gone
