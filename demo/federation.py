"""``make demo`` (``python -m demo``): the whole federation on one machine, no Docker, SQLite.

Starts the broker and three member clouds (Senegal, France, Nigeria) as processes on 127.0.0.1
with the same commands and environment variables as docker-compose.yml, runs the scenario
(``demo.scenario``), prints its summary, and keeps the services up with the /docs URL
until Ctrl-C (``--once``: stop after the summary). A preferred port that is busy is replaced by
a free one, and the demo says so; stopping says what stopped.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

MEMBERS = [
    ("sn-hospital", "Hôpital Principal de Dakar", "SN", 8101),
    ("fr-research", "Institut de recherche, Paris", "FR", 8102),
    ("ng-health", "Lagos Health Cloud", "NG", 8103),
]
BROKER_PORT = 8000


def port_or_free(preferred: int, service: str = "") -> int:
    """``preferred`` if nothing listens there, else any free port, said on stdout."""
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", preferred))
            return preferred
        except OSError:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
    print(
        f"port {preferred} is in use by another process: {service or 'the service'} listens on "
        f"{port} instead",
        flush=True,
    )
    return port


def wait_for(url: str, process: subprocess.Popen, log: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"{url} exited with status {process.returncode}; see {log}:\n"
                + log.read_text()[-2000:]
            )
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer within {timeout:.0f} s; see {log}")


class Federation:
    def __init__(self, root: Path):
        self.root = root
        self.processes: list[subprocess.Popen] = []
        self.names: list[str] = []

    def start(self, name: str, module: str, env: dict[str, str]) -> subprocess.Popen:
        log = self.root / f"{name}.log"
        process = subprocess.Popen(
            [sys.executable, "-m", module],
            env={**os.environ, **env},
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
        )
        self.processes.append(process)
        self.names.append(name)
        return process

    def stop(self) -> list[str]:
        """Stop every service; the names of those that were still running."""
        running = [n for n, p in zip(self.names, self.processes, strict=True) if p.poll() is None]
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
        for process in self.processes:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
        return running


MARKER = ".fedbroker-demo"


def prepare(root: Path) -> None:
    """Empty ``root`` for a new run, but only if an earlier demo made it (or it is empty)."""
    if root.exists():
        if not root.is_dir():
            raise RuntimeError(f"{root} is not a folder")
        if any(root.iterdir()) and not (root / MARKER).exists():
            raise RuntimeError(
                f"{root} is not empty and was not made by the demo: choose another --data folder"
            )
        shutil.rmtree(root)
    root.mkdir(parents=True)
    (root / MARKER).write_text("made by python -m demo; emptied at start\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m demo", description=__doc__.splitlines()[0])
    parser.add_argument("--once", action="store_true", help="exit after the summary")
    parser.add_argument(
        "--data",
        default="data/demo",
        help="folder for databases and logs (emptied at start; default data/demo)",
    )
    args = parser.parse_args(argv)

    root = Path(args.data)
    try:
        prepare(root)
    except RuntimeError as error:
        print(f"demo: {error}", file=sys.stderr)
        return 2
    # `kill` (SIGTERM) stops the federation as Ctrl-C does: no orphaned services.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt))
    admin_token = secrets.token_urlsafe(24)
    member_token = secrets.token_urlsafe(24)
    broker_port = port_or_free(BROKER_PORT, "the broker")
    broker_url = f"http://127.0.0.1:{broker_port}"
    federation = Federation(root)
    try:
        broker = federation.start(
            "broker",
            "broker",
            {
                "BROKER_DATABASE_URL": f"sqlite:///{root / 'broker.db'}",
                "BROKER_ADMIN_TOKEN": admin_token,
                "BROKER_HOST": "127.0.0.1",
                "BROKER_PORT": str(broker_port),
                "BROKER_POLICY_DIR": "policies",
                "BROKER_SIGNING_KEY_DIR": str(root / "broker-keys"),
                "BROKER_SPOOL_DIR": str(root / "broker-spool"),
                # The demo's member clouds listen on 127.0.0.1: allow it (SSRF allow-list).
                "BROKER_INBOX_ALLOWED_HOSTS": '["127.0.0.1"]',
            },
        )
        wait_for(f"{broker_url}/readyz", broker, root / "broker.log")
        member_urls = {}
        for member_id, name, jurisdiction, preferred in MEMBERS:
            port = port_or_free(preferred, member_id)
            member_urls[member_id] = f"http://127.0.0.1:{port}"
            process = federation.start(
                member_id,
                "member_cloud",
                {
                    "MEMBER_ID": member_id,
                    "MEMBER_NAME": name,
                    "MEMBER_JURISDICTION": jurisdiction,
                    "MEMBER_HOST": "127.0.0.1",
                    "MEMBER_PORT": str(port),
                    "MEMBER_BROKER_URL": broker_url,
                    "MEMBER_ADMIN_TOKEN": admin_token,
                    "MEMBER_LOCAL_TOKEN": member_token,
                    "MEMBER_DATA_DIR": str(root / member_id),
                },
            )
            wait_for(f"{member_urls[member_id]}/livez", process, root / f"{member_id}.log")
        scenario = subprocess.run(
            [sys.executable, "-m", "demo.scenario"],
            env={
                **os.environ,
                "SCENARIO_BROKER_URL": broker_url,
                "SCENARIO_ADMIN_TOKEN": admin_token,
                "SCENARIO_MEMBER_TOKEN": member_token,
                "SCENARIO_MEMBERS": ",".join(f"{k}={v}" for k, v in member_urls.items()),
            },
            check=False,
        )
        if scenario.returncode != 0:
            print(
                f"the scenario failed (status {scenario.returncode}); logs in {root}",
                file=sys.stderr,
            )
            return 1
        if args.once:
            stopped = federation.stop()
            print(f"--once: stopped {_listed(stopped)}; logs and databases in {root}/")
            return 0
        print(f"Broker API docs: {broker_url}/docs  (Authorize with the admin token {admin_token})")
        print(f"Console: {broker_url}/console/  (sign in with the admin token, or a member's key)")
        for member_id, url in member_urls.items():
            print(f"  {member_id:<12} {url}/docs")
        print(f"  (member clouds: Authorize with {member_token})")
        print(f"Logs and databases: {root}/")
        print("The federation keeps running; press Ctrl-C to stop it.", flush=True)
        while all(p.poll() is None for p in federation.processes):
            time.sleep(0.5)
        gone = [
            n
            for n, p in zip(federation.names, federation.processes, strict=True)
            if p.poll() is not None
        ]
        print(f"demo: {_listed(gone)} stopped on its own; see the logs in {root}/", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\nStopping the federation ...", flush=True)
        stopped = federation.stop()
        print(f"Stopped {_listed(stopped)}; logs and databases kept in {root}/")
        return 0
    except RuntimeError as error:
        print(f"demo: {error}", file=sys.stderr)
        return 1
    finally:
        federation.stop()


def _listed(names: list[str]) -> str:
    """``broker, sn-hospital and fr-research``; ``nothing`` when empty."""
    if not names:
        return "nothing (no service was running)"
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


if __name__ == "__main__":
    sys.exit(main())
