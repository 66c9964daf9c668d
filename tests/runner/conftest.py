"""Fixtures of the runner's tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from common.redis_server import RedisServerProcess


@pytest.fixture()
def private_redis(tmp_path: Path) -> Iterator[str]:
    """A redis-server of this test's own: no worker left by another test (on the session's server) can take RQ's
    scheduler lock first."""
    server = RedisServerProcess(tmp_path / "redis").start()
    yield server.url
    server.stop()
