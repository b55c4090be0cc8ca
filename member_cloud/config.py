"""Member cloud settings, read from the environment (prefix ``MEMBER_``) by pydantic-settings.

Credentials at the broker, in the order they are looked for:

1. ``MEMBER_API_KEY``: the key the broker issued for this member; used as is.
2. The key file (``MEMBER_API_KEY_FILE``, default ``<data_dir>/broker_api_key``) written when the
   member registered itself on an earlier start.
3. ``MEMBER_ADMIN_TOKEN``: the member registers itself at start and writes the key file, so a
   restart needs neither the admin token nor a new registration.

The member cloud's own API (datasets, transfers, what arrived in the inbox) is protected by
``MEMBER_LOCAL_TOKEN``: every route but ``GET /livez``, ``GET /readyz``, the docs and
``POST /inbox`` (which the broker signs) then needs ``Authorization: Bearer <token>``. Without a
token the member cloud only starts on a loopback address (127.0.0.0/8, ::1, localhost), where it
runs open.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path

from pydantic import (
    AnyHttpUrl,
    Field,
    SecretStr,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

ENV_PREFIX = "MEMBER_"
KEY_FILE_NAME = "broker_api_key"
LOCAL_TOKEN_MIN_LENGTH = 16
# Where Docker and Kubernetes mount secrets: a file named after a variable, in any case
# (/run/secrets/member_local_token), sets it when the environment does not.
SECRETS_DIR = Path("/run/secrets")


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and localhost: an address only this machine reaches."""
    host = host.strip().strip("[]").rstrip(".").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class MemberSettings(BaseSettings):
    """Everything an operator can set; tests build their own instance and pass it to create_app."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        extra="ignore",
        env_ignore_empty=True,
        secrets_dir=SECRETS_DIR if SECRETS_DIR.is_dir() else None,
    )

    id: str = Field(
        pattern=r"^[a-z0-9][a-z0-9-]{1,62}$",
        description="Member id at the broker: lower-case letters, digits and dashes",
        examples=["sn-hospital"],
    )
    name: str | None = Field(
        None, min_length=1, max_length=200, description="Display name (default: the id)"
    )
    jurisdiction: str = Field(
        pattern=r"^[A-Z][A-Z0-9]{1,9}$",
        description="Jurisdiction code with an F-SLA record at the broker",
        examples=["SN"],
    )
    host: str = Field("127.0.0.1", description="Address to listen on")
    port: int = Field(8100, ge=1, le=65535, description="Port to listen on")
    public_url: AnyHttpUrl | None = Field(
        None,
        description="Where the broker reaches this member (default http://{host}:{port}); "
        "the inbox URL registered with the broker is public_url + '/inbox'",
    )
    broker_url: AnyHttpUrl = Field(
        AnyHttpUrl("http://127.0.0.1:8000"), description="The federal broker's base URL"
    )
    api_key: SecretStr | None = Field(None, min_length=1, description="Key issued by the broker")
    admin_token: SecretStr | None = Field(
        None, min_length=1, description="Federation admin token, to register at start"
    )
    local_token: SecretStr | None = Field(
        None,
        description="Bearer token this member cloud's own API requires (every route but "
        f"GET /livez, GET /readyz, the docs and POST /inbox), {LOCAL_TOKEN_MIN_LENGTH}+ "
        "characters; "
        "required unless host is a loopback address",
    )
    data_dir: Path | None = Field(None, description="Default: data/member-<id>")
    api_key_file: Path | None = Field(
        None,
        description=f"Where a self-registered key is kept (default <data_dir>/{KEY_FILE_NAME})",
    )
    max_upload_bytes: int = Field(
        10 * 1024**3,
        gt=0,
        description="Largest request body: a delivery (streamed to disk) or a dataset upload",
    )
    broker_keys_refresh: bool = Field(
        True,
        description="Fetch the broker's signing keys again when a delivery names an unknown "
        "key (a rotation); false pins the keys in data_dir/broker-keys.json for good",
    )
    broker_keys_max_age_seconds: float = Field(
        3600.0,
        gt=0,
        description="A pinned key set older than this is fetched again before it is used "
        "(kept while the broker does not answer): a key the broker retired stops being "
        "accepted at most this long after",
    )
    signature_tolerance_seconds: int = Field(
        300,
        gt=0,
        description="Largest clock difference accepted on a delivery's signature: made at most "
        "this far in the future, expired at most this long ago",
    )
    signature_max_lifetime_seconds: int = Field(
        900,
        gt=0,
        le=86_400,
        description="Longest a delivery's signature may hold (expires - created); its nonce is "
        "kept this long and the tolerance, to refuse a replay",
    )
    broker_timeout_seconds: float = Field(
        30.0, gt=0, description="HTTP timeout of one call to the broker"
    )
    retention_sweep_seconds: float = Field(
        60.0,
        gt=0,
        description="How often deliveries whose retention ended are deleted (and the broker told)",
    )
    start_attempts: int = Field(
        5, ge=1, description="Tries to reach the broker at start before giving up"
    )
    start_backoff_seconds: float = Field(
        0.5, ge=0, description="First wait between tries; doubles each time"
    )

    @field_validator("local_token")
    @classmethod
    def _long_enough(cls, token: SecretStr | None) -> SecretStr | None:
        if token is not None and len(token.get_secret_value()) < LOCAL_TOKEN_MIN_LENGTH:
            raise ValueError(f"must be at least {LOCAL_TOKEN_MIN_LENGTH} characters long")
        return token

    @model_validator(mode="after")
    def _defaults_and_credentials(self) -> MemberSettings:
        if self.name is None:
            self.name = self.id
        if self.data_dir is None:
            self.data_dir = Path("data") / f"member-{self.id}"
        if self.api_key_file is None:
            self.api_key_file = self.data_dir / KEY_FILE_NAME
        if self.api_key is None and self.admin_token is None and not self.api_key_file.exists():
            raise ValueError(
                "set MEMBER_API_KEY (the key the broker issued for this member) or "
                "MEMBER_ADMIN_TOKEN (to register this member at start)"
            )
        if self.local_token is None and not is_loopback(self.host):
            raise ValueError(
                f"set MEMBER_LOCAL_TOKEN ({LOCAL_TOKEN_MIN_LENGTH}+ characters): without it "
                f"the member cloud's API is open, so it listens only on a loopback address "
                f"(127.0.0.1, ::1, localhost), not on MEMBER_HOST={self.host!r}"
            )
        return self

    @property
    def base_url(self) -> str:
        """This member's public address, without a trailing slash."""
        if self.public_url is not None:
            return str(self.public_url).rstrip("/")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def inbox_url(self) -> str:
        """The URL registered with the broker, where it delivers approved transfers."""
        return f"{self.base_url}/inbox"

    @property
    def broker_base_url(self) -> str:
        return str(self.broker_url).rstrip("/")
