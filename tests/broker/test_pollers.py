"""How long a background thread waits between two looks for work (:class:`Poller`): the waits
it asks for are recorded on a clock of their own, not timed."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest

from broker import background
from broker.background import Poller


@pytest.fixture(autouse=True)
def clock(monkeypatch):
    """The poller's monotonic clock, moved on only by the waits that run to their timeout."""
    now = [100.0]
    monkeypatch.setattr(background, "time", SimpleNamespace(monotonic=lambda: now[0]))
    return now


class RecordedWake:
    """Stands for the poller's wake event: records each wait's timeout; ``woken`` says which
    waits (by number) end by a wake rather than by their timeout."""

    def __init__(self, poller: Poller, clock: list[float], waits: int, woken=()):
        self.poller, self.clock, self.left, self.woken = poller, clock, waits, set(woken)
        self.timeouts: list[float] = []

    def wait(self, timeout: float) -> bool:
        self.timeouts.append(round(timeout, 3))
        self.left -= 1
        if self.left == 0:
            self.poller.stop_soon()
        if len(self.timeouts) - 1 in self.woken:
            return True
        self.clock[0] += timeout
        return False

    def set(self) -> None:
        pass

    def clear(self) -> None:
        pass


def _run(clock, work: list[int], waits: int, woken=(), due_in=None) -> list[float]:
    found = iter(work)
    poller = Poller("test", lambda: next(found, 0), 0.5, logging.getLogger("test"), 5.0)
    recorded = RecordedWake(poller, clock, waits, woken)
    poller._wake = recorded
    if due_in is not None:
        poller.wake_in(due_in)
    poller._run()
    return recorded.timeouts


def test_an_idle_poller_waits_twice_as_long_each_time_up_to_its_idle_bound(clock):
    assert _run(clock, [], 7) == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0, 5.0]


def test_work_found_or_a_wake_brings_the_first_wait_back(clock):
    # nothing, nothing, work twice (no wait between), nothing...
    assert _run(clock, [0, 0, 1, 1, 0, 0], 5) == [0.5, 1.0, 0.5, 1.0, 2.0]
    # the second wait ends by a wake
    assert _run(clock, [], 5, woken={1}) == [0.5, 1.0, 0.5, 1.0, 2.0]


def test_work_known_to_come_due_ends_the_wait_then_and_only_once(clock):
    # due in 6 s: 0.5 + 1 + 2 have passed, the fourth wait ends at 6 s, not 4 s later
    assert _run(clock, [], 6, due_in=6.0) == [0.5, 1.0, 2.0, 2.5, 5.0, 5.0]
