"""Real HTTP servers for tests: uvicorn on a free 127.0.0.1 port, in a thread."""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass, field

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class ServerThread:
    """Run an ASGI app with uvicorn until :meth:`stop`."""

    def __init__(self, app, port: int | None = None):
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(
            app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="on"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def start(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError(f"server on port {self.port} did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


@dataclass
class RecordingInbox:
    """An inbox that records what it receives and answers the statuses it is told to; its
    ``/readyz`` (the broker's health check) answers ``readiness`` and counts ``probes``."""

    answers: list[int] = field(default_factory=list)
    received: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    readiness: int = 200
    probes: int = 0

    def app(self) -> Starlette:
        async def inbox(request: Request) -> JSONResponse:
            body = await request.body()
            status = self.answers.pop(0) if self.answers else 201
            self.received.append((dict(request.headers), body))
            return JSONResponse({"status": status}, status_code=status)

        async def readyz(request: Request) -> JSONResponse:
            self.probes += 1
            return JSONResponse({"status": self.readiness}, status_code=self.readiness)

        return Starlette(
            routes=[
                Route("/inbox", inbox, methods=["POST"]),
                Route("/readyz", readyz, methods=["GET"]),
            ]
        )
