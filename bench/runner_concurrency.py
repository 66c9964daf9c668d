"""Rollouts at once in one runner worker (`RUNNER_EXECUTION=inline`, `RUNNER_CONCURRENCY`, issue 27 point 3):
steps/s and the worker's memory at concurrency 1, 2, 4, 8, through the whole pipeline, with null envs
(`bench/null_env.py`, screenshots of `--noise-kb` KB of random pixels: the size of a real desktop's PNG, which
the agent keeps in its history) and the scripted policy answering after `--latency-ms` (0: the pipeline's own
CPU ceiling; 100-1000 ms: a model step, where rollouts at once hide the wait).

For each (latency, concurrency) a fresh stack (`services.cli.stack.LocalStack`: private redis-server, scripted
replica, gateway, producer, sink, ONE runner worker) runs one run of `--rollouts` rollouts of a `--steps`-step
task on `max(--concurrency)` null envs; timed from submission until the sink stored every manifest. Printed:

- steps/s (steps stored / submit -> last manifest);
- the worker's RSS (psutil, every 0.1 s): idle (stack up, before the run), peak during the run, and the peak
  minus idle per rollout at once; the memory per in-flight rollout is the slope of the peak over concurrency
  (least squares), which leaves out what the first rollout loads once;
- the worker's CPU ms per step (user + system);
- rollout statuses when not all completed.

Usage: `python bench/runner_concurrency.py [--concurrency 1,2,4,8] [--latency-ms 0,200] [--rollouts 32]
[--steps 15] [--noise-kb 300] [--timeout 300]`. Figures on a shared machine vary with its load (printed).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.pipeline import bench_task, cpu_seconds, start_null_envs, write_script  # noqa: E402
from common.polling import wait_until  # noqa: E402
from services.cli.api_client import ProducerClient  # noqa: E402
from services.cli.stack import LocalStack, StackConfig  # noqa: E402

MIB = 1024 * 1024


@dataclass
class Result:
    """One (latency, concurrency) setting: steps, seconds, worker RSS (bytes) idle and peak, worker CPU s."""

    latency_ms: float
    concurrency: int
    steps: int
    seconds: float
    idle_rss: int
    peak_rss: int
    cpu_s: float
    statuses: dict[str, int]

    @property
    def steps_per_s(self) -> float:
        return self.steps / self.seconds if self.seconds else 0.0


class PeakRss:
    """Samples a process's RSS every `interval_s` in a thread; `peak` is the largest seen (bytes)."""

    def __init__(self, pid: int, interval_s: float = 0.1) -> None:
        self.process = psutil.Process(pid)
        self.interval_s = interval_s
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.peak = max(self.peak, self.process.memory_info().rss)

    def __enter__(self) -> PeakRss:
        self.peak = self.process.memory_info().rss
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def runner_pid(stack: LocalStack) -> int:
    """The pid of the stack's one runner worker (`RUNNER_WORKERS=1`: the runner process is the worker)."""
    (pid,) = [p.process.pid for p in stack.processes if p.module == "services.runner" and p.process is not None]
    return pid


def run_setting(latency_ms: float, concurrency: int, env_urls: list[str], args: argparse.Namespace,
                root: Path) -> Result:
    """One stack with one inline worker running `concurrency` rollouts at once; one run; its figures."""
    work = root / f"latency-{latency_ms:g}-c{concurrency}"
    write_script(work / "scripts", args.steps)
    config = StackConfig(work_dir=work, scripts_dir=work / "scripts", env_urls=env_urls, runners=1, replicas=1,
                         policy_latency_ms=latency_ms, settle_max_s=0.0, api_token="",
                         extra_env={"LOG_LEVEL": args.log_level, "RUNNER_EXECUTION": "inline",
                                    "RUNNER_CONCURRENCY": str(concurrency)})
    with LocalStack(config) as stack, ProducerClient(stack.producer_url) as client:
        pid = runner_pid(stack)
        time.sleep(1.0)  # the worker settles after registering (RQ maintenance, first heartbeat)
        idle = psutil.Process(pid).memory_info().rss
        cpu_before = cpu_seconds(pid)
        with PeakRss(pid) as rss:
            submitted = time.perf_counter()
            run_id = client.submit([bench_task()], rollouts_per_task=args.rollouts, max_steps=args.steps + 2)["run_id"]
            wait_until(lambda: len(list((work / "trajectories" / run_id).glob("*/manifest.json"))) >= args.rollouts,
                       args.timeout, "the sink to store every manifest", interval_s=0.1)
            seconds = time.perf_counter() - submitted
        cpu = cpu_seconds(pid) - cpu_before
        records = client.run(run_id)["rollouts"]
    statuses: dict[str, int] = {}
    for record in records:
        statuses[record["status"]] = statuses.get(record["status"], 0) + 1
    return Result(latency_ms, concurrency, sum(r["num_steps"] for r in records), seconds, idle, rss.peak, cpu,
                  statuses)


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of y over x."""
    n = len(points)
    mx, my = sum(x for x, _ in points) / n, sum(y for _, y in points) / n
    var = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / var if var else 0.0


def print_table(results: list[Result]) -> None:
    """One row per setting; per latency, the memory per in-flight rollout (slope of peak RSS over concurrency)."""
    print("latency ms | at once | steps | steps/s | x of 1 | idle RSS MiB | peak RSS MiB | (peak-idle)/at once MiB "
          "| worker CPU ms/step")
    for r in results:
        base = next(x for x in results if x.latency_ms == r.latency_ms and x.concurrency == min(
            y.concurrency for y in results if y.latency_ms == r.latency_ms))
        print(f"{r.latency_ms:g} | {r.concurrency} | {r.steps} | {r.steps_per_s:.1f} | "
              f"{r.steps_per_s / base.steps_per_s:.2f} | {r.idle_rss / MIB:.0f} | {r.peak_rss / MIB:.0f} | "
              f"{(r.peak_rss - r.idle_rss) / MIB / r.concurrency:.1f} | {1000 * r.cpu_s / max(1, r.steps):.1f}")
    for latency in sorted({r.latency_ms for r in results}):
        points = [(float(r.concurrency), r.peak_rss / MIB) for r in results if r.latency_ms == latency]
        if len(points) > 1:
            print(f"latency {latency:g} ms: memory per in-flight rollout (slope of peak RSS) {slope(points):.1f} MiB")
    for r in results:
        if set(r.statuses) != {"completed"}:
            print(f"note: latency {r.latency_ms:g} ms, {r.concurrency} at once ended as {r.statuses}")


def main(argv: list[str] | None = None) -> None:
    """Parse flags, run every setting, print the table."""
    parser = argparse.ArgumentParser(description="rollouts at once in one runner worker (see module docstring)")
    parser.add_argument("--concurrency", default="1,2,4,8", help="RUNNER_CONCURRENCY settings, comma-separated")
    parser.add_argument("--latency-ms", default="0,200", help="scripted policy latency settings (ms), comma-separated")
    parser.add_argument("--rollouts", type=int, default=32, help="rollouts per setting")
    parser.add_argument("--steps", type=int, default=15, help="steps per rollout")
    parser.add_argument("--noise-kb", type=int, default=300, help="random pixels in each null env screenshot (KB)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per setting before giving up")
    parser.add_argument("--log-level", default="WARNING", help="services' LOG_LEVEL")
    args = parser.parse_args(argv)
    settings = [int(x) for x in args.concurrency.split(",") if x]
    latencies = [float(x) for x in args.latency_ms.split(",") if x]
    results = []
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="bench-concurrency-") as tmp:
        null_env, urls = start_null_envs(max(settings), args.noise_kb)
        stack.callback(null_env.wait, timeout=10)
        stack.callback(null_env.terminate)
        for latency in latencies:
            for concurrency in settings:
                results.append(run_setting(latency, concurrency, urls, args, Path(tmp)))
                print(f"  latency {latency:g} ms, {concurrency} at once: {results[-1].steps_per_s:.1f} steps/s, "
                      f"peak RSS {results[-1].peak_rss / MIB:.0f} MiB (load average {os.getloadavg()[0]:.1f})",
                      flush=True)
    print_table(results)
    print(f"load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())} ({os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
