"""Finding and stopping an env's processes by its marker (services/desktop_env/processes.py), on real
processes."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import pytest

from common.polling import wait_until
from services.desktop_env.processes import MARKER_VAR, is_alive, marked_pids, stop_pids


@pytest.fixture
def spawned() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        process.kill()
        process.wait()


def test_marked_processes_are_found_with_their_descendants_and_nothing_else(
        spawned: list[subprocess.Popen[bytes]]) -> None:
    def start(argv: list[str], marker: str | None) -> subprocess.Popen[bytes]:
        env = {k: v for k, v in os.environ.items() if k != MARKER_VAR}
        if marker is not None:
            env[MARKER_VAR] = marker
        process = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE)
        spawned.append(process)
        return process

    ours = start(["sh", "-c", "sleep 60 & echo $!; wait"], "env-a@:1")
    assert ours.stdout is not None
    grandchild = int(ours.stdout.readline())
    theirs = start(["sleep", "60"], "env-b@:2")
    similar = start(["sleep", "60"], "env-a@:10")  # a prefix of the marker is another env
    by_argument = start(["sh", "-c", "sleep 60; : --user-data-dir=/home/a/.config/google-chrome"], None)
    found = set(marked_pids("env-a@:1", cmdline_marks=["--user-data-dir=/home/a/.config/google-chrome"]))
    assert found == {ours.pid, grandchild, by_argument.pid}
    assert theirs.pid not in found and similar.pid not in found
    assert set(marked_pids("env-a@:1", exclude=[ours.pid])) == {grandchild}
    assert stop_pids(sorted(found), grace_s=2.0) == []
    wait_until(lambda: ours.poll() is not None and by_argument.poll() is not None, 5, "the marked processes to exit")
    assert not is_alive(grandchild) and is_alive(theirs.pid)
    assert not is_alive(2**22 + 1)  # above pid_max: no such process
