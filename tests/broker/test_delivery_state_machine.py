"""Delivery as a state machine: submit, deliver, fail, crash mid-attempt, restart, and the
destinations' health checks marking them down and up.

Real services on a real (SQLite) database; the inbox is an httpx mock transport whose answers
the machine chooses, so each step is deterministic. Invariants after every step: no delivery
without approval, no change after a terminal state, attempts within the bound, at most one
successful POST per transfer, no POST to a member marked down and no attempt spent on a delivery
held for it, and a valid audit chain.
"""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime
from pathlib import Path

import httpx
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from sqlalchemy import select, update
from sqlalchemy.orm import sessionmaker

from broker import flows
from broker.audit import service as audit
from broker.callers import MEMBER, Caller
from broker.config import Settings
from broker.delivery import service as delivery
from broker.delivery.keyring import KeyRing
from broker.delivery.models import Delivery
from broker.delivery.worker import DeliveryWorker
from broker.intake.uploads import discard, receive
from broker.members import service as members
from broker.policies import service as policies
from broker.policies.seed import load_records
from broker.storage.db import make_engine, upgrade
from broker.transfers import service as transfers
from broker.transfers.models import Transfer
from tests.conftest import FIXTURES, POLICIES

MAX_ATTEMPTS = 3
SETTINGS = Settings(
    admin_token="x" * 16,
    spool_dir=Path(tempfile.mkdtemp(prefix="fedbroker-spool-")),
    inbox_allowed_hosts=["inbox.test"],
    delivery_max_attempts=MAX_ATTEMPTS,
    delivery_backoff_seconds=1.0,
    delivery_lease_seconds=60.0,
    delivery_concurrency=1,  # one connection for the whole machine: one delivery at a time
)
# One Ed25519 key for the whole module, in a folder of its own.
KEYRING = KeyRing.load(Path(tempfile.mkdtemp(prefix="fedbroker-keys-")), create=True)
DATASETS = {
    "published": FIXTURES / "patients_published.csv",
    "original": FIXTURES / "patients_original.csv",
}
TERMINAL = {"delivered", "failed"}
INBOX_MODES = {
    "ok": [201, 200],
    "server_error": [500, 503, 429, 408],
    "client_error": [400, 404, 409],
    "down": [None],
}
ENGINE = None


def engine():
    global ENGINE
    if ENGINE is None:
        import tempfile

        ENGINE = make_engine(f"sqlite:///{tempfile.mkdtemp()}/machine.db")
        upgrade(ENGINE)
    return ENGINE


class DeliveryMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.connection = engine().connect()
        self.outer = self.connection.begin()
        self.factory = sessionmaker(
            bind=self.connection, expire_on_commit=False, join_transaction_mode="create_savepoint"
        )
        with self.factory() as session:
            policies.seed(session, load_records(POLICIES))
            for member_id, jurisdiction in (("sn", "SN"), ("fr", "FR"), ("ng", "NG")):
                members.register(
                    session,
                    member_id,
                    member_id,
                    jurisdiction,
                    f"http://inbox.test/{member_id}",
                    "admin",
                    SETTINGS.inbox_policy,
                )
        self.mode: int | None = 201
        self.posts: list[tuple[str, int | None]] = []
        self.down: set[str] = set()  # members the health checks marked down
        self.posted_while_down: list[str] = []
        self.client = httpx.Client(transport=httpx.MockTransport(self._inbox))
        self.worker = DeliveryWorker(self.factory, self.client, SETTINGS, KEYRING)
        self.terminal: dict[str, tuple[str, int]] = {}

    def _inbox(self, request: httpx.Request) -> httpx.Response:
        status = self.mode
        self.posts.append((request.headers["idempotency-key"], status))
        if request.url.path.strip("/") in self.down:
            self.posted_while_down.append(request.headers["idempotency-key"])
        if status is None:
            raise httpx.ConnectError("connection refused", request=request)
        return httpx.Response(status)

    def teardown(self):
        self.client.close()
        self.outer.rollback()
        self.connection.close()

    @rule(dataset=st.sampled_from(sorted(DATASETS)), destination=st.sampled_from(["fr", "ng"]))
    def submit(self, dataset, destination):
        request = transfers.TransferRequest(
            destination=destination,
            purpose="public_health",
            quasi_identifiers=("Age", "Gender"),
            sensitive=("Disease",),
        )
        with DATASETS[dataset].open("rb") as file:
            upload = receive(file, SETTINGS.spool_dir, f"{dataset}.csv", "text/csv")
        try:
            with self.factory() as session:
                transfers.submit(session, Caller(MEMBER, "sn", "SN"), upload, request, SETTINGS)
        finally:
            discard(upload)

    @initialize(mode=st.sampled_from(list(INBOX_MODES)), data=st.data())
    def approved_transfers_are_waiting(self, mode, data):
        self.inbox_answers(mode, data)
        self.submit("published", "fr")
        self.submit("published", "ng")

    @rule(mode=st.sampled_from(["ok", "server_error", "client_error", "down"]), data=st.data())
    def inbox_answers(self, mode, data):
        """From now on the inbox answers in this way (down: the connection is refused)."""
        self.mode = data.draw(st.sampled_from(INBOX_MODES[mode]))

    @rule(member=st.sampled_from(["fr", "ng"]), up=st.booleans())
    def health_check(self, member, up):
        """A health check of ``member`` finds it up, or down (marked down at once)."""
        flows.record_health_check(self.factory, member, up, None if up else "answered HTTP 503", 1)
        (self.down.discard if up else self.down.add)(member)

    @rule()
    def deliver_round(self):
        """One worker pass after backoff delays and leases have run out (time is not the
        subject here: tests/broker/test_delivery.py covers it)."""
        past = datetime(2000, 1, 1, tzinfo=UTC)
        with self.factory() as session:
            session.execute(update(Delivery).values(next_attempt_at=past))
            session.execute(
                update(Delivery)
                .where(Delivery.lease_expires_at.is_not(None))
                .values(lease_expires_at=past)
            )
            session.commit()
        held = self._attempts_to(self.down)
        self.worker.run_once()
        assert self._attempts_to(self.down) == held, "an attempt was spent on a held delivery"

    def _attempts_to(self, destinations: set[str]) -> dict[str, tuple[str, int]]:
        with self.factory() as session:
            rows = session.execute(
                select(Delivery.transfer_id, Delivery.status, Delivery.attempts)
                .join(Transfer, Transfer.id == Delivery.transfer_id)
                .where(Transfer.destination_id.in_(destinations))
            ).all()
        return {t: (status, attempts) for t, status, attempts in rows}

    @rule()
    def crash_mid_attempt(self):
        """A broker leases rows and dies before posting; a new one starts with a new owner."""
        delivery.claim(self.factory, self.worker.owner, SETTINGS)
        self.worker = DeliveryWorker(self.factory, self.client, SETTINGS, KEYRING)

    @invariant()
    def only_approved_transfers_are_posted_or_queued(self):
        with self.factory() as session:
            status = dict(session.execute(select(Transfer.id, Transfer.status)).all())
            queued = session.scalars(select(Delivery.transfer_id)).all()
        assert all(status[t] == "approved" for t in queued)
        assert all(status[t] == "approved" for t, _ in self.posts)

    @invariant()
    def terminal_states_never_change_and_attempts_are_bounded(self):
        with self.factory() as session:
            rows = session.execute(
                select(Delivery.transfer_id, Delivery.status, Delivery.attempts, Delivery.payload)
            ).all()
        for transfer_id, status, attempts, payload in rows:
            assert 0 <= attempts <= MAX_ATTEMPTS
            if transfer_id in self.terminal:
                assert (status, attempts) == self.terminal[transfer_id]
            if status in TERMINAL:
                self.terminal[transfer_id] = (status, attempts)
                # Delivered data is dropped; failed data is kept for a redelivery (retention).
                assert (payload is None) == (status == "delivered")

    @invariant()
    def nothing_is_posted_to_a_member_marked_down(self):
        assert self.posted_while_down == []

    @invariant()
    def at_most_one_successful_post_per_transfer(self):
        successes = [t for t, status in self.posts if status is not None and status < 300]
        assert len(successes) == len(set(successes))

    @invariant()
    def audit_chain_is_valid(self):
        with self.factory() as session:
            assert audit.verify(session).valid


DeliveryMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)
test_delivery_state_machine = DeliveryMachine.TestCase
