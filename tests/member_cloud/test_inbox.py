"""The inbox: signed deliveries from the broker, verified, stored byte for byte, once."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import stat
import time
import tracemalloc
import uuid
from collections.abc import Iterator

import httpx
import pytest

from fedbroker.client import BrokerKeys
from member_cloud import delivery
from member_cloud.config import MemberSettings
from member_cloud.errors import NotAuthenticated
from member_cloud.storage import Delivery, Inbox, SeenNonces
from tests import rfc9421
from tests.member_cloud.conftest import (
    BROKER_TEST_KEY,
    COVERED,
    FIXTURES,
    FORGER_KEY,
    Members,
    closed_port,
    delivery_headers,
    pin_broker_keys,
    public_jwk,
    unique_id,
)

API_KEY = "member-key-for-inbox-tests"


@pytest.fixture(scope="module")
def member(tmp_path_factory):
    """One member for the module; every test uses its own transfer ids."""
    members = Members(tmp_path_factory.mktemp("inbox"))
    # With MEMBER_API_KEY the member does not call the broker at start: none is needed here.
    server = members.start(
        "fr-inbox", "FR", api_key=API_KEY, broker_url=f"http://127.0.0.1:{closed_port()}"
    )
    yield server
    members.stop(server)


def member_meta(member, transfer_id: str) -> dict:
    """meta.json as the member cloud wrote it."""
    folder = member.app.state.settings.data_dir / "inbox" / transfer_id
    return json.loads((folder / "meta.json").read_text())


def listed(client) -> list[str]:
    return [entry["transfer_id"] for entry in client.get("/inbox").json()]


@pytest.fixture
def client(member):
    with httpx.Client(base_url=member.url, timeout=10) as client:
        yield client


def inbox_url(client) -> str:
    return str(client.base_url).rstrip("/") + "/inbox"


def deliver(client, body, transfer_id=None, **kwargs):
    transfer_id = transfer_id or str(uuid.uuid4())
    headers = delivery_headers(transfer_id, body, inbox_url(client), **kwargs)
    return transfer_id, client.post("/inbox", content=body, headers=headers)


def files_under(folder) -> set[str]:
    return {str(path.relative_to(folder)) for path in folder.rglob("*")}


def assert_problem(answer, status, type_suffix=None):
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    problem = answer.json()
    assert problem["status"] == status
    assert problem["detail"]
    if type_suffix:
        assert problem["type"] == f"urn:fedbroker:problem:{type_suffix}"
    return problem


def test_a_signed_delivery_is_stored_byte_for_byte(client, member):
    body = (FIXTURES / "patients_published.csv").read_bytes() + "Dakar,é,\x00\n".encode()
    transfer_id, answer = deliver(client, body, content_type="text/csv")

    assert answer.status_code == 201, answer.text
    assert answer.json() == {"status": "received", "transfer_id": transfer_id}

    data = client.get(f"/inbox/{transfer_id}")
    assert data.status_code == 200
    assert data.content == body
    assert data.headers["content-type"] == "text/csv"
    assert data.headers["content-disposition"] == "attachment; filename*=UTF-8''patients.csv"
    assert data.headers["x-content-type-options"] == "nosniff"

    meta = client.get(f"/inbox/{transfer_id}/meta").json()
    assert meta["transfer_id"] == transfer_id
    assert meta["source"] == "sn-hospital"
    assert meta["purpose"] == "research"
    assert meta["decision"] == "approved"
    assert meta["filename"] == "patients.csv"
    assert meta["sha256"] == hashlib.sha256(body).hexdigest()
    assert meta["anonymized"] is False
    assert meta["size_bytes"] == len(body)
    assert meta["received_at"]

    listing = client.get("/inbox").json()
    assert listing[0]["transfer_id"] == transfer_id  # the newest
    assert listing[0]["decision"] == "approved"

    entry = member.app.state.settings.data_dir / "inbox" / transfer_id
    assert (entry / "data").read_bytes() == body
    assert json.loads((entry / "meta.json").read_text())["sha256"] == meta["sha256"]
    assert sorted(p.name for p in entry.iterdir()) == ["data", "meta.json"]  # no temp file left


def test_a_delivery_received_twice_is_stored_once(client, member):
    body = b"Age,Gender\n20-30,F\n"
    transfer_id, first = deliver(client, body)
    data_file = member.app.state.settings.data_dir / "inbox" / transfer_id / "data"
    before = os.stat(data_file).st_mtime_ns

    _, again = deliver(client, body, transfer_id=transfer_id)

    assert first.status_code == 201
    assert again.status_code == 200, again.text
    assert again.json() == {"status": "already_received", "transfer_id": transfer_id}
    assert os.stat(data_file).st_mtime_ns == before
    assert listed(client).count(transfer_id) == 1


def test_the_same_transfer_with_other_bytes_is_refused(client):
    transfer_id, first = deliver(client, b"a\n1\n")
    _, other = deliver(client, b"a\n2\n", transfer_id=transfer_id)

    assert first.status_code == 201
    assert_problem(other, 409, "conflict")
    assert client.get(f"/inbox/{transfer_id}").content == b"a\n1\n"


def test_a_delivery_signed_by_anyone_but_the_broker_is_401(client):
    body = b"a\n1\n"
    transfer_id = str(uuid.uuid4())
    forged = delivery_headers(transfer_id, body, inbox_url(client), key=FORGER_KEY)
    answer = client.post("/inbox", content=body, headers=forged)

    assert "unknown to this member" in assert_problem(answer, 401, "not-authenticated")["detail"]
    assert transfer_id not in listed(client)
    # A forger who claims the broker's key id still fails: the signature is checked with it.
    broker_kid = public_jwk(BROKER_TEST_KEY)["kid"]
    claimed = forged["Signature-Input"].replace(public_jwk(FORGER_KEY)["kid"], broker_kid)
    answer = client.post("/inbox", content=body, headers={**forged, "Signature-Input": claimed})
    assert "does not hold" in assert_problem(answer, 401)["detail"]


@pytest.mark.parametrize("dropped", ["Signature", "Signature-Input"])
def test_a_delivery_without_its_signature_is_401(client, dropped):
    _, answer = deliver(client, b"a\n1\n", tamper={dropped: None})
    assert "not signed" in assert_problem(answer, 401)["detail"]
    assert answer.headers["www-authenticate"].startswith("FedbrokerSignature")


def test_a_body_swapped_together_with_its_digest_is_401(client):
    """The body is bound through its signed Content-Digest: a new body needs a new digest,
    which the signature refuses."""
    body = b"a\n1\n"
    transfer_id = str(uuid.uuid4())
    headers = delivery_headers(transfer_id, body, inbox_url(client))
    tampered_body = client.post(
        "/inbox",
        content=b"a\n9\n",
        headers={**headers, "Content-Digest": rfc9421.content_digest(b"a\n9\n")},
    )
    assert_problem(tampered_body, 401)
    assert transfer_id not in listed(client)


# Each covered header changed on the way, to a value that passes every other check.
TAMPERED = {
    "Content-Digest": lambda: rfc9421.content_digest(b"other"),
    "Content-Type": lambda: "text/html",
    "X-Fedbroker-Transfer": lambda: str(uuid.uuid4()),
    "X-Fedbroker-Source": lambda: "ng-health",
    "X-Fedbroker-Purpose": lambda: "marketing",
    "X-Fedbroker-Decision": lambda: "rejected",
    "X-Fedbroker-Filename": lambda: "other.csv",
    "X-Fedbroker-Anonymized": lambda: "true",
    "X-Fedbroker-Agreement": lambda: str(uuid.uuid4()),  # another agreement's terms
    "X-Fedbroker-Retain-Until": lambda: "2099-01-01T00:00:00Z",  # keep it longer
}


def test_every_covered_header_is_tampered_with_below():
    fields = {name for name in COVERED if not name.startswith("@")}
    assert {name.lower() for name in TAMPERED} | {"x-fedbroker-recipient"} == fields


@pytest.mark.parametrize("header", sorted(TAMPERED))
def test_the_signature_covers_each_header(client, header):
    value = TAMPERED[header]()
    tamper = {header: value}
    if header == "X-Fedbroker-Transfer":
        tamper["Idempotency-Key"] = value
    transfer_id, answer = deliver(client, b"a\n1\n", tamper=tamper)

    assert "does not hold" in assert_problem(answer, 401, "not-authenticated")["detail"]
    assert transfer_id not in listed(client)


@pytest.mark.parametrize("header", ["X-Fedbroker-Filename", "Content-Type", "Content-Digest"])
def test_a_covered_header_dropped_on_the_way_is_401(client, header):
    _, answer = deliver(client, b"a\n1\n", tamper={header: None})
    assert_problem(answer, 401)


@pytest.mark.parametrize("dropped", ["x-fedbroker-recipient", "@target-uri", "content-digest"])
def test_a_signature_covering_less_is_401(client, dropped):
    components = [name for name in COVERED if name != dropped]
    transfer_id, answer = deliver(client, b"a\n1\n", components=components)
    assert f"missing: {dropped}" in assert_problem(answer, 401)["detail"]
    assert transfer_id not in listed(client)


def test_a_signature_covering_more_is_401(client):
    _, answer = deliver(client, b"a\n1\n", components=[*COVERED, "idempotency-key"])
    assert "not expected: idempotency-key" in assert_problem(answer, 401)["detail"]


@pytest.mark.parametrize("param", ["created", "expires", "nonce", "alg", "tag"])
def test_a_signature_without_one_of_its_parameters_is_401(client, param):
    now = int(time.time())
    params = {"created": now, "alg": "ed25519", "expires": now + 300}
    params |= {"nonce": uuid.uuid4().hex, "tag": "fedbroker-delivery"}
    params.pop(param)
    transfer_id, answer = deliver(client, b"a\n1\n", params=params)
    assert_problem(answer, 401)
    assert transfer_id not in listed(client)


def test_another_algorithm_is_401(client):
    now = int(time.time())
    params = {"created": now, "alg": "hmac-sha256", "expires": now + 300}
    params |= {"nonce": uuid.uuid4().hex, "tag": "fedbroker-delivery"}
    _, answer = deliver(client, b"a\n1\n", params=params)
    assert_problem(answer, 401)


def test_the_former_schemes_are_refused_by_name(client):
    """v5 (X-Fedbroker-Signature over the headers, bound to no recipient) and the HMAC v2 before
    it: a delivery that carries only them is refused, naming what is accepted."""
    body = b"a\n1\n"
    digest = hashlib.sha256(API_KEY.encode()).digest()
    v2 = "v2=" + hmac.new(digest, b"anything" + body, "sha256").hexdigest()
    kid = public_jwk(BROKER_TEST_KEY)["kid"]
    v5 = f"v5={kid}:" + base64.urlsafe_b64encode(BROKER_TEST_KEY.sign(b"x")).decode()
    for old in (v2, v5):
        tamper = {"Signature": None, "Signature-Input": None, "X-Fedbroker-Signature": old}
        transfer_id, answer = deliver(client, body, tamper=tamper)
        detail = assert_problem(answer, 401, "not-authenticated")["detail"]
        assert "X-Fedbroker-Signature (the broker's scheme before RFC 9421) is refused" in detail
        assert "RFC 9421" in detail and transfer_id not in listed(client)


def test_another_signature_beside_the_brokers_does_not_matter(client):
    """Only the signature tagged fedbroker-delivery is the broker's; another application's
    signature of the message (another label and tag) is not looked at."""
    body = b"a\n1\n"
    transfer_id = str(uuid.uuid4())
    headers = delivery_headers(transfer_id, body, inbox_url(client))
    other = rfc9421.sign(
        FORGER_KEY,
        "other",
        "POST",
        inbox_url(client),
        list(headers.items()),
        ["@method"],
        {"created": int(time.time()), "tag": "proxy"},
        label="proxy",
    )
    both = {
        **headers,
        "Signature-Input": f"{headers['Signature-Input']}, {other['Signature-Input']}",
        "Signature": f"{headers['Signature']}, {other['Signature']}",
    }
    answer = client.post("/inbox", content=body, headers=both)
    assert answer.status_code == 201, answer.text


def test_purpose_and_filename_are_signed_encoded_and_stored_decoded(client, member):
    body = b"a\n1\n"
    transfer_id, answer = deliver(
        client, body, purpose="recherche médicale/épidémio", filename="données patients.csv"
    )
    assert answer.status_code == 201, answer.text

    meta = client.get(f"/inbox/{transfer_id}/meta").json()
    assert meta["purpose"] == "recherche médicale/épidémio"
    assert meta["filename"] == "données patients.csv"
    stored = member_meta(member, transfer_id)
    assert stored["filename"] == "données patients.csv"
    data = client.get(f"/inbox/{transfer_id}")
    assert data.headers["content-disposition"] == (
        "attachment; filename*=UTF-8''donn%C3%A9es%20patients.csv"
    )


@pytest.mark.parametrize(
    ("offset", "lifetime", "said"),
    [
        (-700, 300, "the signature expired 40"),  # 400 s ago, tolerance 300 s
        (-3600, 300, "expired"),
        (400, 300, "s in the future"),
        (0, 901, "at most 900 s accepted"),
    ],
)
def test_a_signature_out_of_its_time_is_401(client, offset, lifetime, said):
    transfer_id, answer = deliver(
        client, b"a\n1\n", created=int(time.time()) + offset, lifetime=lifetime
    )
    assert said in assert_problem(answer, 401)["detail"]
    assert transfer_id not in listed(client)


@pytest.mark.parametrize("offset", [-550, 250])
def test_a_signature_within_the_tolerance_is_accepted(client, offset):
    _, answer = deliver(client, b"a\n1\n", created=int(time.time()) + offset)
    assert answer.status_code == 201, answer.text


def test_a_delivery_for_another_member_is_403_and_stores_nothing(client, member):
    inbox = member.app.state.settings.data_dir / "inbox"
    before = files_under(inbox)
    transfer_id, answer = deliver(client, b"a\n1\n", recipient="ng-health")
    assert (
        "addressed to 'ng-health'" in assert_problem(answer, 403, "not-for-this-member")["detail"]
    )
    assert files_under(inbox) == before
    # naming this member on the way does not help: the recipient is signed
    transfer_id, answer = deliver(
        client, b"a\n1\n", recipient="ng-health", tamper={"X-Fedbroker-Recipient": "fr-inbox"}
    )
    assert "does not hold" in assert_problem(answer, 401)["detail"]
    assert transfer_id not in listed(client)


def test_a_delivery_signed_for_another_inbox_url_is_401(client):
    transfer_id = str(uuid.uuid4())
    body = b"a\n1\n"
    elsewhere = delivery_headers(transfer_id, body, "http://127.0.0.1:9/inbox")
    answer = client.post("/inbox", content=body, headers=elsewhere)
    assert "target URI" in assert_problem(answer, 401)["detail"]
    assert transfer_id not in listed(client)


def test_a_signed_delivery_posted_again_is_a_replay(client, member):
    """The same signature twice: the second is refused, whatever its transfer's state; the
    broker's own retry is signed anew (another nonce) and answered already_received."""
    body = b"a\n1\n"
    transfer_id = str(uuid.uuid4())
    headers = delivery_headers(transfer_id, body, inbox_url(client))
    assert client.post("/inbox", content=body, headers=headers).status_code == 201
    replay = client.post("/inbox", content=body, headers=headers)
    assert "received before" in assert_problem(replay, 401, "replayed-delivery")["detail"]
    retry = client.post(
        "/inbox", content=body, headers=delivery_headers(transfer_id, body, inbox_url(client))
    )
    assert retry.json() == {"status": "already_received", "transfer_id": transfer_id}
    assert listed(client).count(transfer_id) == 1
    # the nonce is kept on disk, beside the inbox: a restart still refuses the replay
    nonces = member.app.state.settings.data_dir / "nonces"
    assert any(path.is_file() for path in nonces.rglob("*"))


def test_a_body_that_does_not_match_its_signed_digest_is_400_and_leaves_no_file(client, member):
    inbox = member.app.state.settings.data_dir / "inbox"
    before = files_under(inbox)

    transfer_id, answer = deliver(
        client, b"a\n1\n", replace={"Content-Digest": rfc9421.content_digest(b"other")}
    )

    assert "nothing was stored" in assert_problem(answer, 400, "checksum-mismatch")["detail"]
    assert transfer_id not in listed(client)
    assert files_under(inbox) == before  # neither an entry nor the temporary file


def test_an_unsigned_delivery_is_refused_without_its_body_being_stored(client, member):
    inbox = member.app.state.settings.data_dir / "inbox"
    before = files_under(inbox)

    _, answer = deliver(client, b"a\n1\n" * 100_000, tamper={"Signature": None})

    assert_problem(answer, 401, "not-authenticated")
    assert files_under(inbox) == before


@pytest.mark.parametrize(
    "digest", ["not-a-digest", "sha-256=:AAAA:", "sha-512=:" + "A" * 86 + "==:", "sha-256=abc"]
)
def test_a_malformed_digest_is_401_before_the_body_is_read(client, digest):
    _, answer = deliver(client, b"a\n1\n", replace={"Content-Digest": digest})
    assert_problem(answer, 401)


def test_an_idempotency_key_other_than_the_transfer_id_is_400(client):
    _, answer = deliver(client, b"a\n1\n", replace={"Idempotency-Key": "something-else"})
    assert_problem(answer, 400)


def test_an_empty_source_header_is_400_after_authentication(client):
    _, answer = deliver(client, b"a\n1\n", replace={"X-Fedbroker-Source": ""})
    assert "X-Fedbroker-Source" in assert_problem(answer, 400)["detail"]


@pytest.mark.parametrize("transfer_id", ["..", ".", "../escape", "a/b", ".hidden", "x..y"])
def test_a_transfer_id_that_is_not_a_safe_name_is_refused(client, member, transfer_id):
    data_dir = member.app.state.settings.data_dir
    before = files_under(data_dir)

    _, answer = deliver(client, b"a\n1\n", transfer_id=transfer_id)

    problem = assert_problem(answer, 422, "invalid-name")
    assert "Transfer id" in problem["detail"]
    assert files_under(data_dir) == before  # nothing written anywhere, inside or out
    assert transfer_id not in listed(client)


def test_the_inbox_lists_newest_first_and_keeps_each_content_type(client):
    first, _ = deliver(client, b'[{"a": 1}]', content_type="application/json")
    second, _ = deliver(
        client,
        b"PAR1",
        content_type="application/vnd.apache.parquet",
        replace={"X-Fedbroker-Anonymized": "true", "X-Fedbroker-Filename": ""},
    )

    listing = client.get("/inbox").json()
    assert [entry["transfer_id"] for entry in listing[:2]] == [second, first]
    assert listing[0]["anonymized"] is True
    assert listing[0]["filename"] == ""
    assert listing[0]["content_type"] == "application/vnd.apache.parquet"
    assert client.get(f"/inbox/{first}").headers["content-type"] == "application/json"
    parquet = client.get(f"/inbox/{second}")
    assert parquet.headers["content-type"] == "application/vnd.apache.parquet"
    # no file name delivered: the transfer id, with the extension of the type
    assert (
        parquet.headers["content-disposition"] == f"attachment; filename*=UTF-8''{second}.parquet"
    )


@pytest.mark.parametrize(
    ("delivered", "served"),
    [
        ("text/html", "application/octet-stream"),
        ("text/html; charset=utf-8", "application/octet-stream"),
        ("image/svg+xml", "application/octet-stream"),
        ("application/javascript", "application/octet-stream"),
        ("application/xhtml+xml", "application/octet-stream"),
        ("text/plain", "application/octet-stream"),
        ("Text/CSV; charset=utf-8", "text/csv"),
        ("application/zip", "application/zip"),
    ],
)
def test_delivered_bytes_are_an_attachment_of_a_safe_type(client, delivered, served):
    body = b"<html><script>alert(document.cookie)</script></html>"
    transfer_id, answer = deliver(client, body, content_type=delivered, filename="page.html")
    assert answer.status_code == 201, answer.text

    data = client.get(f"/inbox/{transfer_id}")

    assert data.status_code == 200
    assert data.content == body
    assert data.headers["content-type"] == served
    assert data.headers["content-disposition"] == "attachment; filename*=UTF-8''page.html"
    assert data.headers["x-content-type-options"] == "nosniff"
    # what was delivered is still told as it was, in the JSON metadata
    assert client.get(f"/inbox/{transfer_id}/meta").json()["content_type"] == delivered


def test_a_file_name_with_separators_is_served_without_them(client):
    transfer_id, _ = deliver(client, b"a\n1\n", filename="../../etc/cron.d/x\r\nSet-Cookie: a")
    disposition = client.get(f"/inbox/{transfer_id}").headers["content-disposition"]
    assert disposition.startswith("attachment; filename*=UTF-8''")
    name = disposition.split("''", 1)[1]
    assert "%2F" not in name and "%0D" not in name and "%0A" not in name


def test_an_unknown_transfer_is_404(client):
    assert_problem(client.get(f"/inbox/{uuid.uuid4()}"), 404, "not-found")
    assert_problem(client.get(f"/inbox/{uuid.uuid4()}/meta"), 404, "not-found")


def test_files_are_not_world_writable(client, member):
    transfer_id, _ = deliver(client, b"a\n1\n")
    data = member.app.state.settings.data_dir / "inbox" / transfer_id / "data"
    assert not os.stat(data).st_mode & stat.S_IWOTH


MiB = 1024 * 1024


def chunked(size: int, chunk: int = 256 * 1024) -> Iterator[bytes]:
    """``size`` bytes of varied content, made chunk by chunk (never held whole)."""
    for start in range(0, size, chunk):
        yield bytes((start // chunk + i) % 251 for i in range(256)) * (chunk // 256)


def test_a_large_delivery_is_streamed_to_disk_not_held_in_memory(client, member):
    """20 MiB through the real server: stored intact, while the process (client and member
    cloud alike) never holds a quarter of it (reading it whole would take all of it, twice)."""
    size = 20 * MiB
    digest = hashlib.sha256()
    for piece in chunked(size):
        digest.update(piece)
    transfer_id = str(uuid.uuid4())
    sha256 = base64.b64encode(digest.digest()).decode()
    headers = delivery_headers(
        transfer_id, b"", inbox_url(client), replace={"Content-Digest": f"sha-256=:{sha256}:"}
    )

    tracemalloc.start()
    try:
        answer = client.post("/inbox", content=chunked(size), headers=headers)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert answer.status_code == 201, answer.text
    assert peak < size / 4, f"{peak:,} bytes allocated at the peak"
    stored = member.app.state.settings.data_dir / "inbox" / transfer_id / "data"
    assert stored.stat().st_size == size
    with stored.open("rb") as data:
        assert hashlib.file_digest(data, "sha256").hexdigest() == digest.hexdigest()
    assert member_meta(member, transfer_id)["size_bytes"] == size


@pytest.fixture
def small_member(members):
    """A member cloud that accepts request bodies of 64 KiB at most."""
    return members.start(
        unique_id("fr-small"),
        "FR",
        api_key=API_KEY,
        broker_url=f"http://127.0.0.1:{closed_port()}",
        max_upload_bytes=64 * 1024,
    )


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "chunked"])
def test_a_delivery_over_the_members_limit_is_413_and_leaves_nothing(small_member, declared):
    body = b"a,b\n" * 50_000  # 200,000 bytes
    headers = delivery_headers(
        str(uuid.uuid4()),
        body,
        small_member.url + "/inbox",
        recipient=small_member.app.state.settings.id,
    )
    inbox = small_member.app.state.settings.data_dir / "inbox"

    with httpx.Client(base_url=small_member.url, timeout=10) as client:
        content = body if declared else (body[i : i + 8192] for i in range(0, len(body), 8192))
        answer = client.post("/inbox", content=content, headers=headers)

    assert_problem(answer, 413, "payload-too-large")
    assert files_under(inbox) == set()


def test_the_body_is_not_read_before_the_headers_are_accepted(tmp_path):
    """A forged delivery costs neither disk nor reading: ``accept`` refuses before it pulls
    a single chunk of the body."""
    pulled = []

    def body():
        pulled.append(True)
        yield b"a\n1\n"

    pin_broker_keys(tmp_path)
    keys = BrokerKeys(tmp_path / "broker-keys.json", fetch=None)
    settings = MemberSettings(id="fr-inbox", jurisdiction="FR", api_key="k", data_dir=tmp_path)
    inbox = Inbox(tmp_path / "inbox")
    inbox.prepare()
    nonces = SeenNonces(tmp_path / "nonces", 300)
    nonces.prepare()
    sent = delivery_headers(
        "t-1", b"a\n1\n", settings.inbox_url, tamper={"X-Fedbroker-Source": "ng-health"}
    )

    with pytest.raises(NotAuthenticated, match="does not hold"):
        delivery.accept(settings, inbox, keys, nonces, sent.items(), body(), time.time())

    assert pulled == []
    assert files_under(tmp_path / "inbox") == set()


def test_temporary_files_a_crash_left_in_the_inbox_are_removed_at_start(tmp_path):
    inbox = Inbox(tmp_path / "inbox")
    inbox.prepare()
    inbox.store(
        Delivery(
            "t-1",
            "sn",
            "research",
            "approved",
            "",
            hashlib.sha256(b"x").hexdigest(),
            False,
            "text/csv",
        ),
        [b"x"],
    )
    (tmp_path / "inbox" / ".t-2.abc123.tmp").write_bytes(b"half a deliv")

    inbox.prepare()

    assert files_under(tmp_path / "inbox") == {"t-1", "t-1/data", "t-1/meta.json"}
