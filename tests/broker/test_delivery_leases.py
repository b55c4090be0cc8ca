"""Leasing due deliveries is one conditional UPDATE: on PostgreSQL, workers that lease at the same
moment from separate connections never hold one row together, and a row leased stays leased to
its owner until its lease expires."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.orm import sessionmaker

from broker.delivery import repository
from broker.delivery.models import Delivery
from broker.members.models import Member, MemberHealth
from broker.storage.db import make_engine, upgrade
from broker.transfers.models import Transfer
from broker.wire.statuses import DeliveryStatus, HealthState
from tests.conftest import postgres_database

pytestmark = pytest.mark.postgres
NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def factory():
    url, drop = postgres_database()
    engine = make_engine(url)
    try:
        upgrade(engine)
        yield sessionmaker(engine, expire_on_commit=False)
    finally:
        engine.dispose()
        drop()


def _member(member_id: str) -> Member:
    return Member(
        id=member_id,
        name=member_id,
        jurisdiction="FR",
        inbox_url=f"http://127.0.0.1:9/{member_id}",
        api_key_hash=member_id.ljust(64, "0"),
    )


def _pending(factory, count: int, destination: str = "fr", down: str | None = None) -> list[str]:
    """``count`` pending deliveries to ``destination``, due a minute apart before NOW."""
    with factory() as session:
        session.query(Delivery).delete()
        session.query(Transfer).delete()
        session.query(MemberHealth).delete()
        session.query(Member).delete()
        for member_id in ("sn", "fr", "ng"):
            session.add(_member(member_id))
        session.flush()
        if down is not None:
            session.add(MemberHealth(member_id=down, state=HealthState.DOWN, since=NOW))
        ids = [f"t{i:04d}" for i in range(count)]
        for i, transfer_id in enumerate(ids):
            session.add(_transfer(transfer_id, destination if i % 2 else "fr"))
        session.flush()
        for i, transfer_id in enumerate(ids):
            session.add(
                Delivery(
                    transfer_id=transfer_id,
                    source_id="sn",
                    destination_id=destination if i % 2 else "fr",
                    headers={},
                    status=DeliveryStatus.PENDING,
                    attempts=0,
                    next_attempt_at=NOW - timedelta(minutes=count - i),
                    payload=b"x",
                    payload_type="text/csv",
                )
            )
        session.commit()
    return ids


def _transfer(transfer_id: str, destination: str) -> Transfer:
    return Transfer(
        id=transfer_id,
        source_id="sn",
        destination_id=destination,
        purpose="research",
        status="approved",
        anonymize="none",
        quasi_identifiers=[],
        sensitive=[],
        rules=[],
        policy_versions={},
        dataset={},
        request_fingerprint="0" * 64,
        created_at=NOW,
    )


def _lease(factory, owner: str, limit: int, now: datetime = NOW) -> list[str]:
    with factory() as session:
        got = repository.lease_due(session, owner, now, now + timedelta(seconds=60), limit)
        session.commit()
    return got


def test_the_earliest_due_first_up_to_the_limit_and_never_twice(factory):
    ids = _pending(factory, 5)
    assert _lease(factory, "a", 3) == ids[:3]
    assert _lease(factory, "b", 3) == ids[3:]  # the first three are a's until their lease ends
    assert _lease(factory, "c", 3) == []
    assert _lease(factory, "c", 3, NOW + timedelta(seconds=61)) == ids[:3]  # leases ended
    with factory() as session:
        owners = dict(session.execute(select(Delivery.transfer_id, Delivery.lease_owner)).all())
    assert owners == {ids[0]: "c", ids[1]: "c", ids[2]: "c", ids[3]: "b", ids[4]: "b"}


def test_deliveries_to_a_member_that_is_down_are_not_leased(factory):
    ids = _pending(factory, 6, destination="ng", down="ng")
    assert _lease(factory, "a", 10) == ids[0::2]  # those to fr


def test_workers_leasing_at_once_never_share_a_row(factory):
    ids = _pending(factory, 200)
    got: dict[str, list[str]] = {}
    start = threading.Barrier(4)

    def worker(owner: str) -> None:
        start.wait()
        mine = got.setdefault(owner, [])
        while True:
            leased = _lease(factory, owner, 7)
            if not leased:
                return
            mine.extend(leased)

    threads = [threading.Thread(target=worker, args=(f"w{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [transfer_id for leased in got.values() for transfer_id in leased]
    assert sorted(every) == ids  # each row leased once, by one worker
    with factory() as session:
        owners = dict(session.execute(select(Delivery.transfer_id, Delivery.lease_owner)).all())
    assert all(owners[t] == owner for owner, leased in got.items() for t in leased)
