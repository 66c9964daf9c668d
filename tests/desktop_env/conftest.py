"""Fixtures of the env pod suite: one real env (Xvfb desktop + server, `LocalEnvLauncher`) for the
package, reset before each test; OSWorld's own client (`OSWorldClient`) pointed at it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from common.env_client import DesktopEnvClient
from services.desktop_env.launcher import LocalEnvLauncher
from tests.desktop_env.osworld_client import OSWorldClient


@pytest.fixture(scope="package")
def launcher(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalEnvLauncher]:
    """Not sandboxed: this suite watches the env's X display and processes from the test process,
    which a sandboxed env's private display and PID namespace hide (the sandbox has its own suite,
    tests/sandbox/)."""
    with LocalEnvLauncher(count=1, root_dir=tmp_path_factory.mktemp("pod"), sandbox=False) as started:
        yield started


@pytest.fixture(scope="package")
def client(launcher: LocalEnvLauncher) -> Iterator[DesktopEnvClient]:
    env = DesktopEnvClient(launcher.urls[0])
    yield env
    env.close()


@pytest.fixture()
def env(client: DesktopEnvClient) -> DesktopEnvClient:
    """The env, freshly reset."""
    client.reset()
    return client


@pytest.fixture()
def home(launcher: LocalEnvLauncher) -> Path:
    """The env's home directory on this machine (what `/home/user` maps to)."""
    return launcher.home(0)


@pytest.fixture()
def display(launcher: LocalEnvLauncher) -> str:
    """The env's X display, e.g. `:123`."""
    return launcher.displays[0]


@pytest.fixture(scope="package")
def osworld(launcher: LocalEnvLauncher) -> Iterator[OSWorldClient]:
    """OSWorld's PythonController / SetupController (from its PyPI package) aimed at the env."""
    url = urlsplit(launcher.urls[0])
    assert url.hostname is not None and url.port is not None
    client = OSWorldClient(url.hostname, url.port)
    yield client
    client.close()
