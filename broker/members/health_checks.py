"""The health checker: a thread in the broker process that checks each active member's
``/readyz`` once every ``BROKER_HEALTH_CHECK_SECONDS``.

Each pass claims the checks that are due (:func:`broker.members.service.claim_checks`: a member's
next check moves one period on in a conditional UPDATE, so broker processes sharing a database check
each member once a period between them), probes them concurrently, and records what each found
(``record``, :func:`broker.flows.record_health_check` in the broker: the member's health, and its
held deliveries due once it is up; :mod:`broker.members.health` holds the rules). A member seen up
again after being down wakes the delivery worker: its held deliveries are due.

A probe follows the deliveries' outbound rules: the URL must pass the federation's inbox policy
(SSRF) at each check, redirects are never followed, and only a 2xx answer is up. At most
:data:`BODY_READ` bytes of an answer are read, whatever the member sends.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass

import httpx
from sqlalchemy.orm import Session, sessionmaker

from broker.background import IDLE_POLL_SECONDS, Poller
from broker.config import Settings
from broker.members import service
from broker.members.health import Health
from broker.wire.inbox_urls import InboxPolicy
from broker.wire.statuses import HealthState

log = logging.getLogger("broker.health")
BODY_READ = 1024  # bytes of an answer read at most (for a failure's reason)
CONCURRENCY = 8  # probes at once: a member that times out does not delay the others'
USER_AGENT = "fedbroker-health-check"


@dataclass(frozen=True)
class Probe:
    """What one check of a member's health URL found."""

    ok: bool
    reason: str | None = None


def probe(client: httpx.Client, url: str, policy: InboxPolicy, timeout: float) -> Probe:
    """GET ``url`` once: up on 2xx, else the reason, in words that name no address (members
    see each other's health; the URL is shown to admins only)."""
    refused = policy.refusal(url)  # again at each check: a name can resolve elsewhere later
    if refused:
        return Probe(
            False, f"the health URL is refused by the federation's inbox policy: {refused}"
        )
    try:
        with client.stream("GET", url, headers={"User-Agent": USER_AGENT}) as response:
            status = response.status_code
            if 200 <= status < 300:
                return Probe(True)
            excerpt = _excerpt(response)
    except httpx.TimeoutException:
        return Probe(False, f"no answer within {timeout:g} s")
    except httpx.TransportError as error:
        return Probe(False, f"could not connect ({type(error).__name__})")
    except (httpx.HTTPError, ValueError) as error:  # e.g. a URL httpx cannot use
        return Probe(False, f"could not check ({type(error).__name__})")
    if 300 <= status < 400:
        return Probe(False, f"answered a redirect (HTTP {status}), never followed")
    return Probe(False, f"answered HTTP {status}" + (f": {excerpt}" if excerpt else ""))


def _excerpt(response: httpx.Response) -> str:
    """The start of an answer's body, as one line; none when it is compressed (decoding is
    not bounded by what is read)."""
    if response.headers.get("Content-Encoding", "identity").lower() != "identity":
        return ""
    read = b""
    for chunk in response.iter_raw():
        read += chunk
        if len(read) >= BODY_READ:
            break
    text = read[:BODY_READ].decode("utf-8", "replace")
    return " ".join(text.split())[:200]


# What records a check: (factory, member id, ok, reason, down after) -> health before and after.
RecordCheck = Callable[[sessionmaker[Session], str, bool, str | None, int], tuple[Health, Health]]


class HealthChecker:
    """The checks of one broker process; ``on_up(member_id)`` is called when a member that was
    down is seen up (the delivery worker's wake)."""

    def __init__(
        self,
        factory: sessionmaker[Session],
        client: httpx.Client,
        settings: Settings,
        record: RecordCheck,
        on_up: Callable[[str], None] | None = None,
    ):
        self.factory = factory
        self.client = client
        self.settings = settings
        self.record = record
        self.on_up = on_up
        # A new member is found within a second of a check, within 5 s once checks are quiet
        # (never later than its period): an idle broker does not ask its database each second.
        poll = min(settings.health_check_seconds, 1.0)
        idle = min(settings.health_check_seconds, IDLE_POLL_SECONDS)
        self._poller = Poller("health-checker", self.run_once, poll, log, idle_seconds=idle)
        self.start, self.wake, self.stop = self._poller.start, self._poller.wake, self._poller.stop

    def run_once(self) -> int:
        """Check every member whose check is due; returns how many were checked."""
        settings = self.settings
        targets = service.claim_checks(self.factory, settings.health_check_seconds)
        if not targets:
            return 0
        for target, outcome in zip(targets, self._probe_all(targets), strict=True):
            before, after = self.record(
                self.factory,
                target.member_id,
                outcome.ok,
                outcome.reason,
                settings.health_check_down_after,
            )
            if before.state != after.state:
                log.log(
                    logging.WARNING if after.state == HealthState.DOWN else logging.INFO,
                    "member %s is %s (was %s)%s",
                    target.member_id,
                    after.state,
                    before.state,
                    f": {after.reason}" if after.reason else "",
                )
            if before.state == HealthState.DOWN and after.state == HealthState.UP and self.on_up:
                self.on_up(target.member_id)
        return len(targets)

    def _probe_all(self, targets: list[service.CheckTarget]) -> list[Probe]:
        """Probe the targets concurrently. A pass ends once every probe has had its time: a
        member that answers a byte at a time (each read within the timeout) cannot hold up the
        others' checks; its probe is recorded as unanswered and its thread left to end."""
        policy, timeout = self.settings.inbox_policy, self.settings.health_check_timeout_seconds
        workers = min(CONCURRENCY, len(targets))
        pool = ThreadPoolExecutor(workers, "health-probe")
        futures = [pool.submit(probe, self.client, t.url, policy, timeout) for t in targets]
        rounds = -(-len(targets) // workers)
        done, _ = wait(futures, timeout=rounds * (timeout + 1.0))
        pool.shutdown(wait=False, cancel_futures=True)
        late = Probe(False, f"no answer within {timeout:g} s")
        return [future.result() if future in done else late for future in futures]
