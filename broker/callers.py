"""Who calls the broker: a member cloud (by its API key) or an administrator (by its token).

A domain type, not a web one: services take a :class:`Caller` and never import FastAPI; the
request dependencies that authenticate one are in :mod:`broker.web.deps`.

In the audit log and in ``created_by`` an administrator acts as ``admin:<name>``: member ids
have no colon, so an administrator can never be mistaken for a member cloud.
"""

from __future__ import annotations

from dataclasses import dataclass

ADMIN = "admin"
MEMBER = "member"
BOOTSTRAP = "bootstrap"  # the administrator whose token is BROKER_ADMIN_TOKEN
ACTOR_PREFIX = "admin:"


def actor_of(name: str) -> str:
    """How an administrator is named in the audit log and in ``created_by``."""
    return ACTOR_PREFIX + name


@dataclass(frozen=True)
class Caller:
    kind: str
    member_id: str | None = None
    jurisdiction: str | None = None
    admin_name: str | None = None
    # A member's rotated-out key, still in its grace period: it may make ordinary calls (the
    # member is switching over), never manage keys (a thief must not outlive the rotation).
    rotated_out_key: bool = False

    @property
    def is_admin(self) -> bool:
        return self.kind == ADMIN

    @property
    def name(self) -> str:
        """Who acts, as the audit log writes it: a member id, or ``admin:<name>``."""
        if self.member_id:
            return self.member_id
        return actor_of(self.admin_name or BOOTSTRAP)
