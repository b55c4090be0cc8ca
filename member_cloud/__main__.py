"""``python -m member_cloud``: start one member cloud, configured by ``MEMBER_*`` variables.

A bad or missing variable prints one line and exits with status 2; a start that fails (the
broker refuses the registration, or does not answer) logs one line and exits with status 1.
"""

from __future__ import annotations

import copy
import sys

from pydantic import ValidationError
from pydantic_settings import SettingsError


def main() -> int:
    from broker.wire.environment import describe
    from member_cloud.config import ENV_PREFIX, MemberSettings

    try:
        settings = MemberSettings()
    except (ValidationError, SettingsError) as error:
        print(f"member_cloud: {describe(error, ENV_PREFIX, MemberSettings)}", file=sys.stderr)
        return 2

    import uvicorn
    from uvicorn.config import LOGGING_CONFIG

    from broker.wire.probes import port_in_use, quiet_probes
    from member_cloud.main import create_app

    if port_in_use(settings.host, settings.port):
        print(
            f"member_cloud: port {settings.port} on {settings.host} is in use by another "
            "process: choose another with MEMBER_PORT",
            file=sys.stderr,
        )
        return 2

    log_config = copy.deepcopy(LOGGING_CONFIG)
    log_config["loggers"]["member_cloud"] = {
        "handlers": ["default"],
        "level": "INFO",
        "propagate": False,
    }
    config = uvicorn.Config(
        create_app(settings), host=settings.host, port=settings.port, log_config=log_config
    )
    quiet_probes()  # after uvicorn.Config, which configures the loggers
    server = uvicorn.Server(config)
    try:
        server.run()
    except SystemExit:  # uvicorn exits this way when the start fails; it logged why
        return 1
    except KeyboardInterrupt:  # uvicorn shut down gracefully, then re-raised the signal
        pass
    if server.started:
        print(f"member_cloud: member {settings.id} has stopped", file=sys.stderr)
    return 0 if server.started else 1


if __name__ == "__main__":
    sys.exit(main())
