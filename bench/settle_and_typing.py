"""Typing through the clipboard and waiting for the screen, each against its old way, side by side.

1. Typing: the same strings (`tests/runner/agent/test_clipboard.py` corpus) typed into a real xterm by the code the
   parser generated before (`xclip` in the background, ctrl+v, sleep 0.5 s) and by today's checked paste
   (`services/runner/agent/clipboard.py`); prints wrong strings and seconds per string.
2. Settling: the example tasks of `examples/tasks/fast/` (no `wait()` after opening a terminal), run
   by `RolloutRunner` with a zero-latency scripted policy, with no wait after actions (the old
   default) and with the screen-settle wait; prints rollouts as expected, and settle time mean / p95
   per acting step against OSWorld's fixed 2 s.

Usage: `python bench/settle_and_typing.py [strings] [rollouts_per_task]` (defaults 200 and 3).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import redis  # noqa: E402

from common import keys  # noqa: E402
from common.env_client import DesktopEnvClient  # noqa: E402
from common.envpool import EnvPool  # noqa: E402
from common.events import StepEvent, decode_event  # noqa: E402
from common.polling import wait_until  # noqa: E402
from common.redis_server import RedisServerProcess  # noqa: E402
from common.run import RolloutJob, SamplingParams  # noqa: E402
from common.task import load_task_file  # noqa: E402
from services.desktop_env.launcher import LocalEnvLauncher  # noqa: E402
from services.runner.agent.parser import type_code, writable_by_pyautogui  # noqa: E402
from services.runner.rollout import RolloutRunner  # noqa: E402
from services.runner.settings import RunnerSettings  # noqa: E402
from services.scripted_policy.server import create_app as create_policy  # noqa: E402
from services.scripted_policy.settings import ScriptedPolicySettings  # noqa: E402
from tests.runner.agent.test_clipboard import corpus  # noqa: E402
from tests.servers import serve_app  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OSWORLD_FIXED_WAIT_MS = 2000.0
END = "__END__"


def old_type_code(text: str) -> str:
    """The parser's `type` code before the checked paste (commit 92a8834), kept as the baseline."""
    submit = text.endswith("\n")
    body = text[:-1] if submit else text
    lines = ["import pyautogui"]
    if body:
        if writable_by_pyautogui(body):
            lines.append(f"pyautogui.write({body!r}, interval=0.0)")
        else:
            lines += ["import subprocess", "import time",
                      f"subprocess.run(['xclip', '-selection', 'clipboard'], input={body!r}.encode(), check=True)",
                      "pyautogui.hotkey('ctrl', 'v')", "time.sleep(0.5)"]
    if submit:
        lines.append("pyautogui.press('enter')")
    return "\n".join(lines)


def type_strings(env: DesktopEnvClient, strings: list[str], generate: Callable[[str], str]) -> tuple[int, int, float]:
    """Type `strings` into `cat > file` in a fresh terminal; returns (wrong strings, failed actions, s/string)."""
    env.reset()
    env.execute(["python", "-c", "import pyautogui; pyautogui.hotkey('ctrl', 'alt', 't')"])
    wait_until(lambda: "Terminal" in (env.execute(["wmctrl", "-l"]).output or ""), 20, "a terminal")
    env.activate_window("Terminal")
    env.execute(["python", "-c", "import pyautogui; pyautogui.write('stty -echo; cat > ~/typed.txt'); "
                                 "pyautogui.press('enter')"])
    wait_until(lambda: "cat" in (env.execute(["ps", "-eo", "comm"]).output or "").split(), 20, "cat")
    started, failed = time.perf_counter(), 0
    for text in strings:
        failed += env.execute(["python", "-c", generate(text)], timeout_s=60).returncode != 0
    seconds = (time.perf_counter() - started) / len(strings)
    env.execute(["python", "-c", f"import pyautogui; pyautogui.write('{END}'); pyautogui.press('enter')"])
    data = wait_until(lambda: (lambda b: b if b and END.encode() in b else None)(env.get_file("~/typed.txt")), 30,
                      "the end marker")
    typed = data.decode("utf-8", "replace")
    return sum(1 for text in strings if text not in typed), failed, seconds


def run_tasks(redis_url: str, policy_url: str, rollouts: int, settle_max_s: float) -> tuple[int, int, list[float]]:
    """Run every fast example task `rollouts` times; returns (as expected, total, settle ms per acting step)."""
    client = redis.Redis.from_url(redis_url)
    client.delete(keys.EVENTS_STREAM)
    runner = RolloutRunner(client, RunnerSettings(redis_url=redis_url, gateway_url=policy_url,
                                                  settle_max_s=settle_max_s))
    ok = total = 0
    for path in sorted((ROOT / "examples" / "tasks" / "fast").glob("*.json")):
        task = load_task_file(path)
        for index in range(rollouts):
            job = RolloutJob(run_id="bench", task=task, rollout_index=index, max_steps=10, agent="ui_tars_1_5",
                             model="ui-tars-1.5-7b", sampling=SamplingParams())
            outcome = runner.run(job, 1, True)
            ok += (outcome.status.value, outcome.reward) == ("completed", 1.0)
            total += 1
    settle = []
    for _, fields in client.xrange(keys.EVENTS_STREAM):  # type: ignore[union-attr]
        event, _ = decode_event(fields)
        if isinstance(event, StepEvent) and any(a.code for a in event.actions):
            settle.append(event.timings.settle_ms)
    client.close()
    return ok, total, settle


def main(strings: int = 200, rollouts: int = 3) -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-settle-"))
    server = RedisServerProcess(work / "redis").start()
    try:
        with LocalEnvLauncher(count=1, root_dir=work / "envs") as launcher, \
                serve_app(create_policy(ScriptedPolicySettings(scripts_dir=ROOT / "examples" / "scripts"))) as policy:
            env = DesktopEnvClient(launcher.urls[0])
            texts = corpus(strings)
            print(f"typing {strings} strings into an xterm (ASCII, <>|&;\"', newlines, non-ASCII, long)")
            print(f"{'code':<34}{'wrong strings':>15}{'failed actions':>16}{'s per string':>14}")
            for name, generate in (("xclip; ctrl+v; sleep 0.5 (before)", old_type_code),
                                   ("checked paste (now)", type_code)):
                wrong, failed, seconds = type_strings(env, texts, generate)
                print(f"{name:<34}{wrong:>15}{failed:>16}{seconds:>14.3f}")
            EnvPool(redis.Redis.from_url(server.url)).register(launcher.urls[0], "local")
            print(f"\nexample tasks with no wait() after opening a window, {rollouts} rollouts each")
            print(f"{'after each action':<34}{'as expected':>15}{'settle mean':>14}{'p95':>10}{'vs 2 s':>10}")
            for name, cap in (("no wait (before)", 0.0), ("screen settle (now)", 2.0)):
                ok, total, settle = run_tasks(server.url, policy, rollouts, cap)
                ms = sorted(settle)
                mean = statistics.mean(ms) if ms else 0.0
                p95 = ms[min(len(ms) - 1, int(len(ms) * 0.95))] if ms else 0.0
                print(f"{name:<34}{f'{ok}/{total}':>15}{mean:>12.0f}ms{p95:>8.0f}ms"
                      f"{mean / OSWORLD_FIXED_WAIT_MS:>10.2f}")
            print(f"{'OSWorld fixed wait':<34}{'':>15}{OSWORLD_FIXED_WAIT_MS:>12.0f}ms{OSWORLD_FIXED_WAIT_MS:>8.0f}ms"
                  f"{1.0:>10.2f}")
            env.close()
    finally:
        server.stop()


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
