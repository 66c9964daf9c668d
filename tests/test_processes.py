"""common.processes.stop_child against real child processes."""

from __future__ import annotations

import subprocess
import sys

import pytest

from common.processes import stop_child

# A child that ignores SIGTERM, so only the SIGKILL after the grace period ends it.
_STUBBORN = ("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
             "print('up', flush=True); time.sleep(60)")


@pytest.mark.parametrize("kill_group", [False, True])
def test_stop_child_kills_a_child_that_ignores_sigterm(kill_group: bool) -> None:
    child = subprocess.Popen([sys.executable, "-c", _STUBBORN], stdout=subprocess.PIPE, start_new_session=True)
    assert child.stdout is not None and child.stdout.readline() == b"up\n"  # handler installed
    stop_child(child, grace_s=0.5, kill_group=kill_group)
    assert child.returncode == -9


def test_stop_child_terminates_politely_and_is_a_no_op_afterwards() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    stop_child(child, grace_s=5.0)
    assert child.returncode == -15
    stop_child(child, grace_s=5.0)  # already exited: nothing to do, no error
