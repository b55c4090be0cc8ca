"""``python -m member_cloud.register``: obtain this member's key at the broker, write it, exit.

The federation's administrator runs it once for each member, with ``MEMBER_ADMIN_TOKEN`` and that
member's ``MEMBER_*`` variables (id, name, jurisdiction, public URL, broker URL). It registers the
member and writes the key file (``MEMBER_API_KEY_FILE``, mode 0600), or, run again, checks that
the broker still accepts the key in that file. The member cloud then starts with the key file
alone: no member holds the admin token (the compose file's ``register-*`` services).

Exit status: 0 the key file holds this member's key; 1 the broker refused or did not answer;
2 a bad or missing variable (one line on stderr each time).
"""

from __future__ import annotations

import logging
import sys

from pydantic import ValidationError
from pydantic_settings import SettingsError


def main() -> int:
    from broker.wire.environment import describe
    from member_cloud.config import ENV_PREFIX, MemberSettings
    from member_cloud.credentials import StartupError, resolve_api_key

    try:
        settings = MemberSettings()
    except (ValidationError, SettingsError) as error:
        print(
            f"member_cloud.register: {describe(error, ENV_PREFIX, MemberSettings)}", file=sys.stderr
        )
        return 2
    if settings.admin_token is None:
        print("member_cloud.register: set MEMBER_ADMIN_TOKEN to register", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="member_cloud.register: %(message)s")
    try:
        resolve_api_key(settings.model_copy(update={"api_key": None}))
    except StartupError as error:
        print(f"member_cloud.register: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
