"""The member's key at the broker, found or obtained at start.

1. ``MEMBER_API_KEY`` set: used as is; the broker is not called at start, so a member can start
   before the broker.
2. A key file from an earlier self-registration: checked with ``GET /v1/members/{id}``. A key the
   broker no longer accepts (its database was reset, say) is replaced by registering again when
   ``MEMBER_ADMIN_TOKEN`` is set; a broker that does not answer leaves the key in use.
3. ``MEMBER_ADMIN_TOKEN``: the member registers itself (``POST /v1/members``) and writes the key
   file (mode 0600). An id the broker already knows stops the start: only the key it was issued
   can be used (``MEMBER_API_KEY``).

The broker is tried ``start_attempts`` times, waiting ``start_backoff_seconds`` and doubling.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TypeVar

from fedbroker.client import BrokerAnsweredError, BrokerUnavailable, Client
from member_cloud.config import MemberSettings
from member_cloud.storage import atomic_write

log = logging.getLogger("member_cloud")
T = TypeVar("T")
RETRY_STATUSES = {502, 503, 504}


class StartupError(Exception):
    """The member cannot start; the message is one line for the operator."""


def resolve_api_key(settings: MemberSettings) -> str:
    if settings.api_key is not None:
        return settings.api_key.get_secret_value()
    stored = read_key_file(settings)
    if stored is not None:
        if _stored_key_accepted(settings, stored):
            return stored
        if settings.admin_token is None:
            raise StartupError(
                f"the broker at {settings.broker_base_url} does not accept the key in "
                f"{settings.api_key_file}: set MEMBER_API_KEY to this member's key, or "
                "MEMBER_ADMIN_TOKEN to register it again"
            )
        log.warning(
            "the broker does not accept the key in %s; registering %s again",
            settings.api_key_file,
            settings.id,
        )
    return register(settings)


def register(settings: MemberSettings) -> str:
    """Register this member with the admin token; write and return the issued key."""
    assert settings.admin_token is not None  # checked by MemberSettings
    assert settings.api_key_file is not None
    # the key is shown once: make sure it can be kept before asking for it
    folder = settings.api_key_file.parent
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as error:
        raise StartupError(f"cannot create {folder} for the key file: {error}") from None
    if not os.access(folder, os.W_OK):
        raise StartupError(f"cannot write the key file in {folder}: the folder is not writable")
    token = settings.admin_token.get_secret_value()
    with _client(settings, token) as broker:
        try:
            member = _retrying(
                settings,
                lambda: broker.register_member(
                    settings.id,
                    settings.name or settings.id,
                    settings.jurisdiction,
                    settings.inbox_url,
                ),
            )
        except BrokerUnavailable as error:
            raise StartupError(f"cannot register {settings.id!r}: {error}") from None
        except BrokerAnsweredError as error:
            raise StartupError(_registration_refused(settings, error)) from None
    api_key = member.api_key
    write_key_file(settings, api_key)
    log.info(
        "registered %s (%s) at %s; inbox %s; key kept in %s",
        settings.id,
        settings.jurisdiction,
        settings.broker_base_url,
        settings.inbox_url,
        settings.api_key_file,
    )
    return api_key


def _registration_refused(settings: MemberSettings, error: BrokerAnsweredError) -> str:
    if error.status == 409:
        return (
            f"member {settings.id!r} is already registered at the broker "
            f"{settings.broker_base_url}: set MEMBER_API_KEY to the key it was issued"
        )
    if error.status in (401, 403):
        return f"the broker refused MEMBER_ADMIN_TOKEN ({error.status}): {error.detail}"
    return f"the broker refused to register {settings.id!r} ({error.status}): {error.detail}"


def _stored_key_accepted(settings: MemberSettings, api_key: str) -> bool:
    with _client(settings, api_key) as broker:
        try:
            member = _retrying(settings, lambda: broker.get_member(settings.id))
        except BrokerUnavailable as error:
            log.warning("%s; using the key in %s unchecked", error, settings.api_key_file)
            return True
        except BrokerAnsweredError as error:
            if error.status == 401:
                return False
            if error.status == 403:
                log.warning("the broker says: %s", error.detail)
                return True
            raise StartupError(
                f"cannot check the key in {settings.api_key_file} ({error.status}): {error.detail}"
            ) from None
    if member.jurisdiction != settings.jurisdiction:
        raise StartupError(
            f"MEMBER_JURISDICTION is {settings.jurisdiction} but the broker registered "
            f"{settings.id!r} in {member.jurisdiction}"
        )
    if member.inbox_url != settings.inbox_url:
        log.warning(
            "the broker delivers to %s, but this member's inbox is %s: its deliveries are "
            "signed for the registered URL and will be refused (set MEMBER_PUBLIC_URL, or have "
            "the registration changed)",
            member.inbox_url,
            settings.inbox_url,
        )
    log.info("using the key in %s (member %s)", settings.api_key_file, settings.id)
    return True


def read_key_file(settings: MemberSettings) -> str | None:
    path = settings.api_key_file
    assert path is not None  # filled in by MemberSettings
    try:
        stored = json.loads(path.read_text())
        member_id, api_key = stored["member_id"], stored["api_key"]
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise StartupError(
            f"cannot read the key file {path} ({type(error).__name__}): delete it to register "
            "again, or set MEMBER_API_KEY"
        ) from None
    if member_id != settings.id:
        raise StartupError(
            f"the key file {path} belongs to member {member_id!r}, not {settings.id!r}: "
            "set MEMBER_DATA_DIR or MEMBER_API_KEY_FILE to this member's own"
        )
    return str(api_key)


def write_key_file(settings: MemberSettings, api_key: str) -> None:
    path = settings.api_key_file
    assert path is not None
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    record = {
        "member_id": settings.id,
        "broker_url": settings.broker_base_url,
        "api_key": api_key,
        "registered_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    atomic_write(path, json.dumps(record, indent=2).encode(), mode=0o600)


def _client(settings: MemberSettings, token: str) -> Client:
    """No retry of its own: :func:`_retrying` waits for a broker that is starting."""
    return Client(
        settings.broker_base_url, token, timeout=settings.broker_timeout_seconds, retries=0
    )


def _retrying(settings: MemberSettings, call: Callable[[], T]) -> T:
    """``call()``, tried again while the broker does not answer (or answers 502/503/504)."""
    delay = settings.start_backoff_seconds
    for attempt in range(1, settings.start_attempts + 1):
        try:
            return call()
        except (BrokerUnavailable, BrokerAnsweredError) as error:
            retry = isinstance(error, BrokerUnavailable) or error.status in RETRY_STATUSES
            if not retry:
                raise
            if attempt == settings.start_attempts:
                if isinstance(error, BrokerAnsweredError):
                    raise StartupError(
                        f"the broker at {settings.broker_base_url} is not ready after "
                        f"{attempt} tries ({error.status}): {error.detail}"
                    ) from None
                raise BrokerUnavailable(
                    error.base_url, f"{error.reason} (after {attempt} tries)"
                ) from None
            log.warning("%s; trying again in %.1f s", error, delay)
            time.sleep(delay)
            delay *= 2
    raise AssertionError("unreachable")
