"""The client's tests share the member cloud's real broker (uvicorn on 127.0.0.1)."""

from tests.member_cloud.conftest import broker  # noqa: F401
