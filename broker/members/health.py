"""A member cloud's health: where it is checked, what a check changes, how it is shown. Pure.

The broker's health checker (:mod:`broker.members.health_checks`) asks each active member's
``/readyz`` once a period; this module holds the rules it applies, with no database or network:

- :func:`health_url`: where a member is checked. A URL given at registration (``health_url``,
  checked against the federation's inbox policy like the inbox URL), else the ``readyz`` next to
  the inbox: the inbox URL's last path segment replaced, as a relative reference resolves
  (RFC 3986, section 5.2), so ``https://host/inbox`` is checked at ``https://host/readyz`` and a
  member behind a path prefix, ``https://gateway/sn/inbox``, at ``https://gateway/sn/readyz``.
- :func:`after_check`: the state a check's outcome leads to. A 2xx answer makes the member
  ``up`` at once; ``down_after`` failed checks in a row make it ``down`` (one lost probe does not
  hold its deliveries). ``since`` moves only when the state changes; ``reason`` is the last
  failure's, kept while the member is still up after a failure, cleared by a success.
- :func:`health_read`: the health as the API shows it, to admins (with the failure reason) or
  to members (without: a reason can name addresses of the member's network). The catalog shows a
  provider's health with it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Protocol
from urllib.parse import urljoin, urlsplit

from broker.members.schemas import MemberHealthRead
from broker.wire.statuses import HealthState

READYZ = "readyz"


class HealthLike(Protocol):
    """Anything with a health's fields: the stored row or a :class:`Health`."""

    state: str
    since: datetime | None
    checked_at: datetime | None
    reason: str | None


@dataclass(frozen=True)
class Health:
    """A member's health: its state, since when, the last check and the last failure."""

    state: HealthState = HealthState.UNKNOWN
    since: datetime | None = None
    checked_at: datetime | None = None
    reason: str | None = None
    failures: int = 0  # failed checks in a row

    @classmethod
    def of(cls, row: HealthLike | None) -> Health:
        """The health of a stored row (``unknown`` when there is none)."""
        if row is None:
            return cls()
        return cls(
            HealthState(row.state),
            row.since,
            row.checked_at,
            row.reason,
            getattr(row, "failures", 0) or 0,
        )


def health_url(inbox_url: str, given: str | None = None) -> str:
    """Where a member's health is checked: ``given``, else the ``readyz`` next to its inbox.

    Examples
    --------
    >>> health_url("https://sn-hospital.example/inbox")
    'https://sn-hospital.example/readyz'
    >>> health_url("http://127.0.0.1:8101/sn/inbox?x=1")
    'http://127.0.0.1:8101/sn/readyz'
    >>> health_url("https://sn.example/inbox", "https://status.sn.example/ready")
    'https://status.sn.example/ready'
    """
    if given:
        return given
    parts = urlsplit(inbox_url)
    base = inbox_url if parts.path else f"{inbox_url}/"
    return urljoin(base, READYZ)


def after_check(
    health: Health, *, ok: bool, reason: str | None, now: datetime, down_after: int
) -> Health:
    """The health after one check: ``ok`` (answered 2xx) or failed for ``reason``.

    Examples
    --------
    >>> from datetime import UTC, datetime
    >>> t = datetime(2026, 11, 27, tzinfo=UTC)
    >>> up = after_check(Health(), ok=True, reason=None, now=t, down_after=2)
    >>> (up.state.value, up.since == t, up.failures)
    ('up', True, 0)
    >>> once = after_check(up, ok=False, reason="answered HTTP 503", now=t, down_after=2)
    >>> (once.state.value, once.failures, once.reason)
    ('up', 1, 'answered HTTP 503')
    >>> after_check(once, ok=False, reason="timed out", now=t, down_after=2).state.value
    'down'
    """
    if down_after < 1:
        raise ValueError(f"down_after must be at least 1, not {down_after}")
    if ok:
        state, failures, reason = HealthState.UP, 0, None
    else:
        failures = health.failures + 1
        state = HealthState.DOWN if failures >= down_after else health.state
    since = health.since if state == health.state and health.since is not None else now
    return replace(
        health, state=state, since=since, checked_at=now, reason=reason, failures=failures
    )


def changed(before: Health, after: Health) -> bool:
    """Whether a check changed the state (what the audit log records, not every check)."""
    return before.state != after.state


def health_read(health: HealthLike | None, *, admin: bool) -> MemberHealthRead:
    """A member's health as the API shows it; the failure reason to admins only.

    Examples
    --------
    >>> health_read(None, admin=False).state.value
    'unknown'
    >>> health_read(Health(HealthState.DOWN, reason="timed out"), admin=False).reason is None
    True
    """
    found = Health.of(health) if health is not None else Health()
    return MemberHealthRead(
        state=found.state,
        since=found.since,
        checked_at=found.checked_at,
        reason=found.reason if admin else None,
    )
