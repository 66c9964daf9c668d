"""Shared fixtures: a real `redis-server` on a free port (never a fake), a clean DB per test, and moto's
S3 server (the MinIO stand-in: MinIO has no server package here)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import redis

from common.polling import free_port
from common.redis_server import RedisServerProcess

# The suite's desktops are bare openbox ones unless a test asks for GNOME Shell (LocalEnvLauncher(shell="gnome"),
# StackConfig(desktop_shell="gnome")): the tests of what the agent sees (tests/desktop_env/test_shell.py,
# tests/runner/test_first_screen.py, tests/e2e/test_osworld.py) and compose-test run GNOME Shell, the product's
# default; elsewhere its seconds of CPU per env start would double `make test` on 2 cores for nothing they check.
# `DESKTOP_SHELL=gnome make test` runs everything on GNOME Shell.
os.environ.setdefault("DESKTOP_SHELL", "openbox")


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServerProcess]:
    """One real redis-server for the session, started on a free port by the tests."""
    server = RedisServerProcess(tmp_path_factory.mktemp("redis")).start()
    yield server
    server.stop()


@pytest.fixture()
def redis_url(redis_server: RedisServerProcess) -> Iterator[str]:
    """URL of the session redis-server, flushed before each test."""
    client = redis.Redis.from_url(redis_server.url)
    client.flushall()
    client.close()
    yield redis_server.url


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """`host:port` of a real S3 API (moto's ThreadedMotoServer), access key and secret `testing`."""
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"127.0.0.1:{port}"
    server.stop()
