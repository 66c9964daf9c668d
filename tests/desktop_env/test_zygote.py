"""Every `python -c` action is a fresh process forked from the env's zygote: it behaves exactly like
a new interpreter (compared with a real `python -c` on the same code), nothing an action changes
reaches the next action or survives `/reset`, and a timed-out action dies with its children."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from common.env_client import DesktopEnvClient, ExecuteResult
from common.polling import wait_until
from services.desktop_env.processes import is_alive


def _zygote(env: DesktopEnvClient, code: str, *args: str, timeout_s: float | None = None) -> ExecuteResult:
    """`python -c code args...` as an argv list: forked from the zygote."""
    return env.execute(["python", "-c", code, *args], timeout_s=timeout_s)


def _interpreter(env: DesktopEnvClient, code: str, *args: str) -> ExecuteResult:
    """The same through a shell: a new interpreter process (the reference behaviour)."""
    quoted = " ".join("'" + a.replace("'", "'\\''") + "'" for a in (code, *args))
    return env.execute(f"exec python -c {quoted}", shell=True)


SNIPPETS = [
    "print('out'); import sys; print('err', file=sys.stderr)",
    "import sys; print(sys.argv)",
    "1/0",
    "def f():\n    raise ValueError('deep')\nf()",
    "import sys; sys.exit(3)",
    "import sys; sys.exit('a message')",
    "import sys; sys.exit(None)",
    "raise SystemExit(258)",
    "import os; print('x', end=''); os._exit(5)",
    "print('no newline at the end', end='')",
    "import sys; sys.stdout.buffer.write(b'raw bytes\\n')",
    "print('caf\\u00e9 \\u2603')",
    "import atexit; atexit.register(lambda: print('at exit'))",
    "import threading, time; threading.Thread(target=lambda: (time.sleep(0.2), print('late'))).start(); print('early')",
    "import threading, time; threading.Thread(target=time.sleep, args=(30,), daemon=True).start(); print('daemon')",
    "1 +",
    "print(__name__, __file__ if '__file__' in globals() else '-', __spec__, sorted(k for k in globals() if "
    "k.startswith('__')))",
    "import sys; print(sys.path[0] == '', sys.stdin.read() == '')",
    "raise KeyboardInterrupt",
    "import os; print(os.getcwd(), os.environ['HOME'], os.environ.get('DISPLAY', '')[:1])",
]


@pytest.mark.parametrize("code", SNIPPETS)
def test_a_forked_action_behaves_like_a_new_interpreter(env: DesktopEnvClient, code: str) -> None:
    forked, fresh = _zygote(env, code, "arg 1", "-x"), _interpreter(env, code, "arg 1", "-x")
    assert (forked.output, forked.error, forked.returncode) == (fresh.output, fresh.error, fresh.returncode)
    assert forked.status == fresh.status == "success"


def test_nothing_leaks_from_one_action_to_the_next(env: DesktopEnvClient) -> None:
    dirty = _zygote(env, "import os, sys, json, pyautogui, threading, time\n"
                         "os.chdir('/tmp'); os.environ['LEAK'] = '1'; os.putenv('PUT', '1')\n"
                         "pyautogui.LEAKED = json.LEAKED = True; pyautogui.PAUSE = 5; pyautogui.FAILSAFE = True\n"
                         "sys.modules['leaky'] = json; sys.path.append('/leak'); sys.argv.append('leak')\n"
                         "threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
                         "print(os.getpid())")
    assert dirty.returncode == 0, dirty
    clean = _zygote(env, "import os, sys, json, pyautogui, threading\n"
                         "print(os.getcwd(), os.environ.get('LEAK'), os.environ.get('PUT'), hasattr(pyautogui, "
                         "'LEAKED'), hasattr(json, 'LEAKED'), pyautogui.PAUSE, pyautogui.FAILSAFE, 'leaky' in "
                         "sys.modules, '/leak' in sys.path, sys.argv, threading.active_count())")
    assert clean.output == "/home/user None None False False 0 False False False ['-c'] 1\n"
    wait_until(lambda: not is_alive(int(dirty.output or 0)), 5, "the first action's process to be gone")


def test_a_timed_out_action_dies_with_its_children(env: DesktopEnvClient) -> None:
    result = _zygote(env, "import os, subprocess, time\n"
                          "child = subprocess.Popen(['sleep', '300'])\n"
                          "print(os.getpid(), child.pid, flush=True)\n"
                          "time.sleep(300)", timeout_s=1.0)
    assert (result.status, result.returncode) == ("error", 124)
    assert result.error is not None and result.error.startswith("Command timed out after 1 seconds.")
    pids = [int(p) for p in (result.output or "").split()]
    assert len(pids) == 2
    wait_until(lambda: not any(is_alive(p) for p in pids), 5, "the action and its child to be gone")


def test_children_left_by_actions_do_not_survive_reset(env: DesktopEnvClient) -> None:
    left = _zygote(env, "import subprocess\n"
                        "a = subprocess.Popen(['sleep', '301'])\n"
                        "b = subprocess.Popen(['sleep', '302'], start_new_session=True)\n"
                        "print(a.pid, b.pid)")
    pids = [int(p) for p in (left.output or "").split()]
    assert len(pids) == 2 and all(is_alive(p) for p in pids)  # as after `python -c`: they keep running
    zygote_before = _zygote(env, "import os; print(os.getppid())").output
    env.reset()
    assert not any(is_alive(p) for p in pids)
    after = _zygote(env, "import os, pyautogui; print(os.getppid(), os.getcwd(), hasattr(pyautogui, 'LEAKED'))")
    assert after.output is not None and after.output.split()[1:] == ["/home/user", "False"]
    assert after.output.split()[0] != (zygote_before or "").strip()  # a new zygote after the reset
    assert not is_alive(int(zygote_before or 0))


def test_an_action_running_during_a_reset_is_answered_as_killed(client: DesktopEnvClient, home: Path) -> None:
    client.reset()
    replies: list[ExecuteResult] = []
    second = DesktopEnvClient(client.base_url)  # an httpx client per thread
    code = "import os, pathlib, time; pathlib.Path('running').write_text(str(os.getpid())); time.sleep(300)"
    worker = threading.Thread(target=lambda: replies.append(_zygote(second, code, timeout_s=300)))
    worker.start()
    pid = int(wait_until(lambda: (home / "running").read_text(), 10, "the long action to run"))
    client.reset()
    worker.join(30)
    second.close()
    assert replies and replies[0].returncode == -9 and "reset" in (replies[0].error or "")
    assert not is_alive(pid)
