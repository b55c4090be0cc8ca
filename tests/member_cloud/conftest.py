"""Real servers on 127.0.0.1: a broker (in a thread) and member clouds (in threads)."""

from __future__ import annotations

import base64
import json
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
import uvicorn
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from fastapi import FastAPI

from broker.config import Settings
from broker.main import create_app as create_broker
from member_cloud.config import MemberSettings
from member_cloud.main import create_app as create_member
from tests import rfc9421

REPO = Path(__file__).parents[2]
FIXTURES = REPO / "tests" / "fixtures"
ADMIN_TOKEN = "x" * 20
LOCAL_TOKEN = "local-token-of-this-member-0123"
# What a delivery signature covers, in order (the wire contract, written here from its text).
COVERED = [
    "@method",
    "@target-uri",
    "content-digest",
    "content-type",
    "x-fedbroker-recipient",
    "x-fedbroker-transfer",
    "x-fedbroker-source",
    "x-fedbroker-purpose",
    "x-fedbroker-decision",
    "x-fedbroker-filename",
    "x-fedbroker-anonymized",
    "x-fedbroker-agreement",
    "x-fedbroker-retain-until",
]


def free_socket(port: int = 0) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    return sock


def closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with free_socket() as sock:
        return sock.getsockname()[1]


class StartFailed(Exception):
    pass


@dataclass
class LiveServer:
    """One uvicorn server in a thread, on a socket bound before the app was built."""

    app: FastAPI
    sock: socket.socket
    server: uvicorn.Server | None = None
    thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self.sock.getsockname()[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 15) -> LiveServer:
        config = uvicorn.Config(self.app, log_level="critical", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self.thread.is_alive():
                self.sock.close()
                raise StartFailed(str(getattr(self.app.state, "startup_error", "start failed")))
            if time.monotonic() > deadline:
                raise TimeoutError("the server did not start")
            time.sleep(0.01)
        return self

    def _run(self) -> None:
        assert self.server is not None
        # SystemExit is uvicorn's way out of a failed start; start() reports it
        with suppress(SystemExit):
            self.server.run(sockets=[self.sock])

    def stop(self) -> None:
        if self.server is not None and self.thread is not None:
            self.server.should_exit = True
            self.thread.join(10)
        self.sock.close()


def broker_settings(tmp: Path, **overrides) -> Settings:
    values = dict(
        database_url=f"sqlite:///{tmp / 'b.db'}",
        admin_token=ADMIN_TOKEN,
        policy_dir=REPO / "policies",
        delivery_enabled=False,
        signing_key_dir=tmp / "signing-keys",
        spool_dir=tmp / "spool",
        inbox_allowed_networks=["127.0.0.0/8"],
    )
    return Settings(**(values | overrides))


@pytest.fixture(scope="session")
def broker(tmp_path_factory) -> Iterator[LiveServer]:
    """One broker for the whole folder (no delivery worker); tests use unique member ids."""
    settings = broker_settings(tmp_path_factory.mktemp("broker"))
    server = LiveServer(create_broker(settings), free_socket()).start()
    yield server
    server.stop()


def unique_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


class Members:
    """Start member clouds; every one still running is stopped after the test."""

    def __init__(self, tmp_path: Path):
        self.tmp_path = tmp_path
        self.running: list[LiveServer] = []

    def settings(self, member_id: str, jurisdiction: str, port: int, **values) -> MemberSettings:
        values.setdefault("data_dir", self.tmp_path / member_id)
        if not (values["data_dir"] / "broker-keys.json").exists():
            pin_broker_keys(values["data_dir"])  # a real broker's keys replace them when met
        values.setdefault("start_attempts", 1)
        return MemberSettings(id=member_id, jurisdiction=jurisdiction, port=port, **values)

    def start(
        self, member_id: str, jurisdiction: str = "SN", port: int = 0, **values
    ) -> LiveServer:
        sock = free_socket(port)
        try:
            settings = self.settings(member_id, jurisdiction, sock.getsockname()[1], **values)
        except Exception:
            sock.close()
            raise
        server = LiveServer(create_member(settings), sock)
        server.start()
        self.running.append(server)
        return server

    def stop(self, server: LiveServer) -> None:
        server.stop()
        self.running.remove(server)


@pytest.fixture
def members(tmp_path) -> Iterator[Members]:
    members = Members(tmp_path)
    yield members
    for server in list(members.running):
        members.stop(server)


@pytest.fixture
def admin(broker) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    with httpx.Client(base_url=broker.url, headers=headers, timeout=10) as client:
        yield client


# The broker's delivery signing key as these tests play the broker (a fixed Ed25519 key), and a
# forger's. Signatures are written here from the contract, not imported from the product.
BROKER_TEST_KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
FORGER_KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(1, 33)))


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def public_jwk(key: Ed25519PrivateKey) -> dict[str, str]:
    """RFC 8037 public JWK with its RFC 7638 thumbprint as ``kid``."""
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    jwk = {"kty": "OKP", "crv": "Ed25519", "x": _b64url(raw)}
    return jwk | {"kid": rfc9421.thumbprint(jwk)}


def pin_broker_keys(data_dir: Path, *keys: Ed25519PrivateKey) -> None:
    """Write the key set a member pins (``broker-keys.json``), as if fetched from the broker."""
    data_dir.mkdir(parents=True, exist_ok=True)
    document = {"keys": [public_jwk(key) for key in keys or (BROKER_TEST_KEY,)]}
    (data_dir / "broker-keys.json").write_text(json.dumps(document))


def delivery_headers(
    transfer_id: str,
    body: bytes,
    url: str,
    *,
    recipient: str = "fr-inbox",
    key: Ed25519PrivateKey = BROKER_TEST_KEY,
    created: int | None = None,
    lifetime: int = 300,
    nonce: str | None = None,
    content_type: str = "text/csv",
    purpose: str = "research",
    filename: str = "patients.csv",
    components: list[str] | None = None,
    params: dict | None = None,
    replace: dict[str, str | None] | None = None,
    tamper: dict[str, str | None] | None = None,
) -> dict[str, str]:
    """Headers of a delivery to the inbox at ``url`` as the broker sends it (RFC 9421, Ed25519;
    purpose and file name percent-encoded), signed by ``key`` over ``components``
    (:data:`COVERED`) with ``params`` (created, expires, a fresh nonce, alg, tag by default).

    ``replace`` changes or (None) drops headers before they are signed; ``tamper`` changes or
    drops them after, as someone on the way would.
    """
    created = int(time.time()) if created is None else created
    headers = {
        "Content-Type": content_type,
        "Content-Digest": rfc9421.content_digest(body),
        "Idempotency-Key": transfer_id,
        "X-Fedbroker-Recipient": recipient,
        "X-Fedbroker-Transfer": transfer_id,
        "X-Fedbroker-Source": "sn-hospital",
        "X-Fedbroker-Purpose": quote(purpose, safe=""),
        "X-Fedbroker-Decision": "approved",
        "X-Fedbroker-Filename": quote(filename, safe=""),
        "X-Fedbroker-Anonymized": "false",
        "X-Fedbroker-Agreement": "",
        "X-Fedbroker-Retain-Until": "",
    }
    _change(headers, replace)
    if params is None:
        params = {
            "created": created,
            "keyid": public_jwk(key)["kid"],
            "alg": "ed25519",
            "expires": created + lifetime,
            "nonce": nonce or uuid.uuid4().hex,
            "tag": "fedbroker-delivery",
        }
    headers |= rfc9421.sign(
        key,
        public_jwk(key)["kid"],
        "POST",
        url,
        list(headers.items()),
        COVERED if components is None else components,
        params,
    )
    _change(headers, tamper)
    return headers


def _change(headers: dict[str, str], changes: dict[str, str | None] | None) -> None:
    for name, value in (changes or {}).items():
        if value is None:
            headers.pop(name, None)
        else:
            headers[name] = value


def wait_for(predicate: Callable[[], object], timeout: float = 10) -> object:
    deadline = time.monotonic() + timeout
    while not (result := predicate()):
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met in time")
        time.sleep(0.05)
    return result
