"""Faults to inject in tests: a small real filesystem, and a private PostgreSQL server to freeze.

Both need what a developer's machine and CI have here (root, for ``mount``; PostgreSQL's server
programs under ``/usr/lib/postgresql``); a test that cannot have them is skipped, and says why.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest

from tests.servers import free_port


@contextmanager
def small_filesystem(folder: Path, size: str = "4m") -> Iterator[Path]:
    """``folder`` as a tmpfs of ``size`` bytes: writes past it fail with ``ENOSPC``, as on a
    full disk. Unmounted afterwards; skipped (visibly) where mounting is refused."""
    folder.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.strip() or 'refused'}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False, capture_output=True)


def free_bytes(folder: Path) -> int:
    stats = os.statvfs(folder)
    return stats.f_bavail * stats.f_frsize


def fill(folder: Path, leave: int) -> Path:
    """Take all the space of ``folder``'s filesystem but ``leave`` bytes, with one ballast file
    (removed by the caller to give the space back)."""
    ballast = folder / "ballast"
    with ballast.open("ab") as out:
        out.write(b"\0" * max(0, free_bytes(folder) - leave))
    return ballast


def files_under(folder: Path, but: tuple[Path, ...] = ()) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and p not in but)


def _server_programs() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return Path(found[-1]).parent if found else None


class PrivatePostgres:
    """A PostgreSQL server of the test's own, on a free loopback port, run as the ``postgres``
    user (``initdb`` refuses root), so that the test may freeze it (SIGSTOP) without touching
    anyone else's database."""

    def __init__(self) -> None:
        programs = _server_programs()
        if programs is None:
            pytest.skip("PostgreSQL's server programs (initdb, pg_ctl) are not installed")
        self.programs = programs
        self.port = free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="fedbroker-pg-"))
        self.data = self.folder / "data"
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"
        self._as_postgres = os.geteuid() == 0

    def _run(self, *command: str) -> subprocess.CompletedProcess:
        if self._as_postgres:
            command = ("runuser", "-u", "postgres", "--", *command)
        return subprocess.run(command, capture_output=True, text=True, timeout=120)

    def start(self) -> PrivatePostgres:
        if self._as_postgres:
            shutil.chown(self.folder, "postgres")
        made = self._run(
            str(self.programs / "initdb"), "-D", str(self.data), "-U", "postgres",
            "--auth=trust", "--no-sync",
        )  # fmt: skip
        if made.returncode != 0:
            self.remove()
            pytest.skip(f"initdb failed: {made.stderr.strip()[-300:]}")
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        started = self._run(
            str(self.programs / "pg_ctl"), "-D", str(self.data), "-l",
            str(self.folder / "server.log"), "-o", options, "-w", "start",
        )  # fmt: skip
        if started.returncode != 0:
            log = (self.folder / "server.log").read_text()[-500:]
            self.remove()
            pytest.skip(f"the private PostgreSQL did not start: {log}")
        return self

    def processes(self) -> list[int]:
        """The postmaster and every process it started (backends, writers)."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        children = []
        for status in Path("/proc").glob("[0-9]*/status"):
            try:
                lines = status.read_text().splitlines()
            except OSError:
                continue  # ended meanwhile
            parent = next((line.split()[1] for line in lines if line.startswith("PPid:")), "")
            if parent == str(postmaster):
                children.append(int(status.parent.name))
        return [postmaster, *children]

    def freeze(self) -> list[int]:
        frozen = self.processes()
        for pid in frozen:
            os.kill(pid, signal.SIGSTOP)
        return frozen

    @staticmethod
    def thaw(frozen: list[int]) -> None:
        for pid in frozen:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

    def stop(self) -> None:
        self._run(str(self.programs / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop")
        self.remove()

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def wait_until(condition, timeout: float, step: float = 0.05) -> bool:
    """Poll ``condition`` until it holds or ``timeout`` seconds pass; whether it held."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(step)
    return True
