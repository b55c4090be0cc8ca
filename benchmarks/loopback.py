"""A federation on loopback, shared by ``load.py`` and ``transfer.py``: a throwaway database
(PostgreSQL when a server answers, else SQLite), the broker and two member clouds (Senegal,
France) as processes on 127.0.0.1, started exactly as ``python -m demo`` starts them.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from demo.federation import Federation, port_or_free, wait_for  # noqa: E402

POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"


def database(url: str, root: Path) -> tuple[str, Callable[[], None]]:
    """A fresh database on the PostgreSQL server at ``url`` and the function that drops it; a
    SQLite file in ``root`` when ``url`` is 'sqlite' or no server answers."""
    if url == "sqlite":
        return f"sqlite:///{root / 'broker.db'}", lambda: None
    import sqlalchemy as sa

    name = f"fedbroker_bench_{secrets.token_hex(4)}"
    admin = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            connection.execute(sa.text(f'CREATE DATABASE "{name}"'))
    except sa.exc.OperationalError:
        print("no PostgreSQL server answers: SQLite instead", file=sys.stderr)
        return f"sqlite:///{root / 'broker.db'}", lambda: None

    def drop() -> None:
        with admin.connect() as connection:
            connection.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()

    return url.rsplit("/", 1)[0] + f"/{name}", drop


@dataclass(frozen=True)
class Running:
    broker_url: str
    broker: subprocess.Popen  # with one worker, the process that does the work
    admin_token: str
    source_key: str  # sn-hospital's API key
    inbox: Path  # fr-research's inbox folder


def start(federation: Federation, root: Path, database_url: str, broker_env: dict) -> Running:
    """The broker (``BROKER_*`` settings: the benchmark's, then ``broker_env``) and the members
    ``sn-hospital`` and ``fr-research``, which register themselves; returns once they answer."""
    admin_token = secrets.token_urlsafe(24)
    broker_port = port_or_free(8300)
    broker_url = f"http://127.0.0.1:{broker_port}"
    broker = federation.start(
        "broker",
        "broker",
        {
            "BROKER_DATABASE_URL": database_url,
            "BROKER_ADMIN_TOKEN": admin_token,
            "BROKER_HOST": "127.0.0.1",
            "BROKER_PORT": str(broker_port),
            "BROKER_POLICY_DIR": str(ROOT / "policies"),
            "BROKER_SIGNING_KEY_DIR": str(root / "broker-keys"),
            "BROKER_SPOOL_DIR": str(root / "broker-spool"),
            "BROKER_INBOX_ALLOWED_HOSTS": '["127.0.0.1"]',
            **broker_env,
        },
    )
    wait_for(f"{broker_url}/readyz", broker, root / "broker.log")
    data = {}
    for member_id, jurisdiction in (("sn-hospital", "SN"), ("fr-research", "FR")):
        port = port_or_free(8301 if jurisdiction == "SN" else 8302)
        data[member_id] = root / member_id
        process = federation.start(
            member_id,
            "member_cloud",
            {
                "MEMBER_ID": member_id,
                "MEMBER_NAME": member_id,
                "MEMBER_JURISDICTION": jurisdiction,
                "MEMBER_HOST": "127.0.0.1",
                "MEMBER_PORT": str(port),
                "MEMBER_BROKER_URL": broker_url,
                "MEMBER_ADMIN_TOKEN": admin_token,
                "MEMBER_LOCAL_TOKEN": secrets.token_urlsafe(24),
                "MEMBER_DATA_DIR": str(data[member_id]),
            },
        )
        wait_for(f"http://127.0.0.1:{port}/livez", process, root / f"{member_id}.log")
    key_file = data["sn-hospital"] / "broker_api_key"
    deadline = time.monotonic() + 30
    while not key_file.exists() and time.monotonic() < deadline:  # self-registration
        time.sleep(0.2)
    key = json.loads(key_file.read_text())["api_key"]
    return Running(broker_url, broker, admin_token, key, data["fr-research"] / "inbox")
