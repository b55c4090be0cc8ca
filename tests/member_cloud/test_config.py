"""MemberSettings: defaults derived from the id and port, the credentials rule, the env prefix."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from pydantic import ValidationError

from broker.wire.environment import describe
from member_cloud.config import ENV_PREFIX, MemberSettings
from tests.member_cloud.conftest import LOCAL_TOKEN, closed_port


def test_defaults_follow_the_id_host_and_port():
    settings = MemberSettings(id="sn-hospital", jurisdiction="SN", port=8101, api_key="k")

    assert settings.name == "sn-hospital"
    assert settings.data_dir == Path("data/member-sn-hospital")
    assert settings.api_key_file == Path("data/member-sn-hospital/broker_api_key")
    assert settings.base_url == "http://127.0.0.1:8101"
    assert settings.inbox_url == "http://127.0.0.1:8101/inbox"
    assert settings.broker_base_url == "http://127.0.0.1:8000"
    assert settings.signature_tolerance_seconds == 300


def test_the_public_url_is_what_the_broker_is_given():
    settings = MemberSettings(
        id="fr-research",
        jurisdiction="FR",
        host="0.0.0.0",
        public_url="https://fr.example.org/member/",
        broker_url="https://broker.example.org/",
        admin_token="t",
        local_token=LOCAL_TOKEN,
    )
    assert settings.inbox_url == "https://fr.example.org/member/inbox"
    assert settings.broker_base_url == "https://broker.example.org"


def test_settings_come_from_member_variables(monkeypatch, tmp_path):
    monkeypatch.setenv("MEMBER_ID", "ng-health")
    monkeypatch.setenv("MEMBER_JURISDICTION", "NG")
    monkeypatch.setenv("MEMBER_PORT", "8123")
    monkeypatch.setenv("MEMBER_API_KEY", "the-key")
    monkeypatch.setenv("MEMBER_ADMIN_TOKEN", "")  # empty is unset
    monkeypatch.setenv("MEMBER_DATA_DIR", str(tmp_path))

    settings = MemberSettings()

    assert (settings.id, settings.jurisdiction, settings.port) == ("ng-health", "NG", 8123)
    assert settings.api_key.get_secret_value() == "the-key"
    assert settings.admin_token is None
    assert settings.api_key_file == tmp_path / "broker_api_key"


def test_a_key_or_an_admin_token_is_required(tmp_path):
    with pytest.raises(ValidationError) as caught:
        MemberSettings(id="sn-a", jurisdiction="SN", data_dir=tmp_path)
    assert describe(caught.value, ENV_PREFIX, MemberSettings).startswith("set MEMBER_API_KEY")


def test_a_key_file_from_an_earlier_registration_is_enough(tmp_path):
    (tmp_path / "broker_api_key").write_text(json.dumps({"member_id": "sn-a", "api_key": "k"}))
    settings = MemberSettings(id="sn-a", jurisdiction="SN", data_dir=tmp_path)
    assert settings.api_key is None and settings.admin_token is None


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"id": "SN_Hospital"}, "MEMBER_ID: String should match pattern"),
        ({"jurisdiction": "sn"}, "MEMBER_JURISDICTION: String should match pattern"),
        ({"port": 70000}, "MEMBER_PORT: Input should be less than or equal to 65535"),
        ({"broker_url": "not a url"}, "MEMBER_BROKER_URL: Input should be a valid URL"),
    ],
)
def test_bad_values_name_their_variable(values, message):
    with pytest.raises(ValidationError) as caught:
        MemberSettings(**({"id": "sn-a", "jurisdiction": "SN", "api_key": "k"} | values))
    assert describe(caught.value, ENV_PREFIX, MemberSettings).startswith(message)


def test_the_local_token_comes_from_member_local_token(monkeypatch):
    monkeypatch.setenv("MEMBER_LOCAL_TOKEN", LOCAL_TOKEN)
    settings = MemberSettings(id="sn-a", jurisdiction="SN", api_key="k", host="0.0.0.0")
    assert settings.local_token.get_secret_value() == LOCAL_TOKEN
    assert LOCAL_TOKEN not in repr(settings)  # a secret


def test_a_short_local_token_is_refused():
    with pytest.raises(ValidationError) as caught:
        MemberSettings(id="sn-a", jurisdiction="SN", api_key="k", local_token="x" * 15)
    assert describe(caught.value, ENV_PREFIX, MemberSettings) == (
        "MEMBER_LOCAL_TOKEN: must be at least 16 characters long"
    )


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.1.2.3", "192.168.0.7", "member.example"])
def test_without_a_local_token_only_a_loopback_address_is_allowed(host):
    with pytest.raises(ValidationError) as caught:
        MemberSettings(id="sn-a", jurisdiction="SN", api_key="k", host=host)
    message = describe(caught.value, ENV_PREFIX, MemberSettings)
    assert message.startswith("set MEMBER_LOCAL_TOKEN")
    assert repr(host) in message
    # with a token, any address
    MemberSettings(id="sn-a", jurisdiction="SN", api_key="k", host=host, local_token=LOCAL_TOKEN)


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "127.9.8.7", "::1", "[::1]", "localhost", "LOCALHOST"]
)
def test_on_a_loopback_address_no_local_token_is_needed(host):
    settings = MemberSettings(id="sn-a", jurisdiction="SN", api_key="k", host=host)
    assert settings.local_token is None


def test_a_body_over_the_limit_is_413_problem(members):
    server = members.start(
        "sn-small",
        api_key="k",
        broker_url=f"http://127.0.0.1:{closed_port()}",
        max_upload_bytes=1000,
    )
    with httpx.Client(base_url=server.url, timeout=10) as client:
        answer = client.post("/datasets", files={"file": ("big.csv", b"x" * 5000, "text/csv")})
        inbox = client.post("/inbox", content=b"x" * 5000)

    for response in (answer, inbox):
        assert response.status_code == 413
        assert response.headers["content-type"] == "application/problem+json"
        assert response.json()["type"] == "urn:fedbroker:problem:payload-too-large"
