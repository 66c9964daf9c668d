"""Child-process helpers against real processes: stop_child, GiveUp in wait_until, ManagedProcess health."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from common.polling import GiveUp, wait_until
from common.processes import stop_child, stop_children
from services.cli.processes import ManagedProcess

# A child that ignores SIGTERM, so only the SIGKILL after the grace period ends it.
_STUBBORN = ("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
             "print('up', flush=True); time.sleep(60)")


# A child that takes a second to shut down on SIGTERM and notes when the signal came and when it left.
_SLOW_TO_STOP = ("import signal, sys, time\n"
                 "def stop(*_):\n"
                 "    print('term', time.time(), flush=True); time.sleep(1.0); print('exit', time.time(), flush=True)\n"
                 "    sys.exit(0)\n"
                 "signal.signal(signal.SIGTERM, stop); print('up', flush=True); time.sleep(60)")


def test_stop_children_signals_every_child_before_waiting_for_any() -> None:
    children = [subprocess.Popen([sys.executable, "-c", _SLOW_TO_STOP], stdout=subprocess.PIPE) for _ in range(3)]
    for child in children:
        assert child.stdout is not None and child.stdout.readline() == b"up\n"  # handler installed
    stop_children(children, grace_s=10.0)
    assert [child.returncode for child in children] == [0, 0, 0]  # each shut down on its own, no SIGKILL
    notes = [dict(line.split() for line in child.stdout.read().decode().splitlines())  # type: ignore[union-attr]
             for child in children]
    # Sequential stops would signal the second child only after the first had exited (>= 1 s later).
    assert max(float(n["term"]) for n in notes) < min(float(n["exit"]) for n in notes)


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


def test_a_dead_child_ends_the_health_wait_at_once_with_its_log(tmp_path: Path) -> None:
    child = ManagedProcess(name="crasher", module="services.no_such_module", env={},
                           log_path=tmp_path / "crasher.log", health_url="http://127.0.0.1:9/never").start()
    started = time.monotonic()
    with pytest.raises(RuntimeError, match=r"crasher exited with code 1(.|\n)*No module named"):
        child.wait_healthy(timeout_s=60.0)
    assert time.monotonic() - started < 30.0  # GiveUp ended the wait long before the 60 s deadline


def test_wait_until_retries_ordinary_errors_but_not_give_up() -> None:
    calls: list[int] = []

    def flaky() -> bool:
        calls.append(1)
        if len(calls) < 3:
            raise ValueError("not yet")
        return True

    assert wait_until(flaky, 5.0, "flaky", interval_s=0.01) is True and len(calls) == 3

    def hopeless() -> bool:
        calls.append(1)
        raise GiveUp("it died")

    calls.clear()
    with pytest.raises(GiveUp, match="it died"):
        wait_until(hopeless, 60.0, "hopeless", interval_s=0.01)
    assert len(calls) == 1


# A subreaper (in a process of its own: pytest must not adopt the suite's orphans) whose child forks a
# grandchild and exits: the orphaned grandchild becomes the subreaper's child, not PID 1's.
_ADOPTS_ORPHAN = ("import os, subprocess, sys, psutil\n"
                  "from common.processes import become_subreaper\n"
                  "become_subreaper()\n"
                  "subprocess.run([sys.executable, '-c', 'import subprocess; subprocess.Popen([\"sleep\", \"30\"])'],"
                  " check=True)\n"
                  "orphan, = psutil.Process().children()\n"
                  "print(orphan.name(), orphan.ppid() == os.getpid())\n"
                  "orphan.kill(); os.waitpid(orphan.pid, 0)\n")


def test_become_subreaper_adopts_orphaned_grandchildren() -> None:
    result = subprocess.run([sys.executable, "-c", _ADOPTS_ORPHAN], capture_output=True, text=True, timeout=30,
                            cwd=Path(__file__).resolve().parents[2])
    assert (result.returncode, result.stdout) == (0, "sleep True\n"), result.stderr
