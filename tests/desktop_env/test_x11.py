"""`x11`: one kept connection per (thread, display), reopened once when the X server went away, on a
real Xvfb started by the test."""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterator

import pytest
from Xlib.display import Display

from common.polling import wait_until
from common.processes import stop_child
from services.desktop_env import x11
from services.desktop_env.session import display_in_use


def _start_xvfb(number: int) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(["Xvfb", f":{number}", "-screen", "0", "640x480x24", "-nolisten", "tcp"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_until(lambda: x11.display_ready(f":{number}"), 15, f"Xvfb on :{number}")
    return process


@pytest.fixture()
def xvfb() -> Iterator[tuple[int, list[subprocess.Popen[bytes]]]]:
    """A free display number with an Xvfb on it; the list holds every Xvfb the test started."""
    number = next(n for n in range(1000 + os.getpid() % 500, 2000) if not display_in_use(n))
    servers = [_start_xvfb(number)]
    yield number, servers
    x11.drop_connection(f":{number}")
    for server in servers:
        stop_child(server, 5)


def test_one_connection_per_thread_and_display(xvfb: tuple[int, list[subprocess.Popen[bytes]]]) -> None:
    display = f":{xvfb[0]}"
    seen: list[Display] = []
    x11.with_connection(display, seen.append)
    x11.cursor_position(display)
    x11.screen_size(display)
    x11.with_connection(display, seen.append)
    assert seen[0] is seen[1]  # kept across calls
    other = threading.Thread(target=lambda: x11.with_connection(display, seen.append))
    other.start()
    other.join()
    assert seen[2] is not seen[0]  # another thread, another connection


def test_reconnects_once_when_the_server_went_away(xvfb: tuple[int, list[subprocess.Popen[bytes]]]) -> None:
    number, servers = xvfb
    display = f":{number}"
    assert x11.screen_size(display) == (640, 480)
    stop_child(servers[0], 5)
    servers.append(_start_xvfb(number))  # same display number, a new server
    assert x11.screen_size(display) == (640, 480)
    assert x11.window_size(display, "anything") is None
