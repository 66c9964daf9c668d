"""The whole pipeline's own ceiling: producer -> RQ -> runner -> gateway -> scripted policy -> Redis
stream -> sink -> local store, with the bench-only null env (`bench/null_env.py`) and a zero-latency
scripted policy, for 1, 2 and 4 runners per env, each with a forked work-horse per rollout and with
rollouts run inline in the worker (`RUNNER_EXECUTION`), side by side in one run.

For each runners-per-env setting a fresh stack (`services.cli.stack.LocalStack`: private
redis-server, one scripted replica, gateway, producer, sink, M runner workers) is started on the
same null envs, one run of `--rollouts` rollouts of a `--steps`-step scripted task is submitted over
HTTP, and the run is timed until the sink has stored every trajectory's manifest. Printed per setting:

- steps/s through the whole pipeline (steps stored / submit -> last manifest stored);
- per-step orchestration overhead p50/p99: step wall time minus model, action, screenshot and
  settle time, from the stored step events (`StepTimings`), plus the step's share of publishing
  (the rollout's `publish_ms` / steps: an event cannot carry its own publishing time);
- per-rollout start-up p50/p95 (job picked by the worker -> first model request, `startup_ms`),
  the same without reset and lease wait, the work-horse's share (`job_start_ms`), and teardown
  (last step -> lease freed, `teardown_ms`);
- CPU time per step by service (user + system, work-horses counted in their runner): where the
  2 cores go, so what caps steps/s;
- env utilisation over the run's window (first rollout started -> last ended, x envs): in-step,
  start-up, reset, evaluation (`common.envtime.env_split`) and idle (the rest);
- event-stream bytes per step (issue 27): the bytes of the entries the runners XADDed (field names and
  values, the runners' `cua_runner_stream_bytes_total{type}`, read from their metrics port) over the steps
  stored: step entries alone, and all entries (start and end events included); and the bytes the runners
  put to the store as blobs per step (`cua_runner_blob_bytes_total`). The runners put screenshots to the
  stack's store and send keys (`RUNNER_STORE_URL`); `--no-store` makes them send the PNGs in the entries
  (the way before), for comparison.

Usage: `python bench/pipeline.py [--envs 2] [--per-env 1,2,4] [--execution fork,inline] [--rollouts 48]
[--steps 15] [--timeout 240] [--real-envs] [--no-store]`. `--real-envs` runs the same on real Xvfb desktops (local
env pods, the runners' default screen settle): the in-step share of real env time. Figures on a shared
machine vary with its load; the load average is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil
from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common.envtime import ENV_STATES, env_split  # noqa: E402
from common.polling import wait_until  # noqa: E402
from common.processes import child_pids  # noqa: E402
from common.stats import percentile  # noqa: E402
from common.task import OSWorldTask  # noqa: E402
from services.cli.api_client import ProducerClient  # noqa: E402
from services.cli.stack import LocalStack, StackConfig  # noqa: E402
from services.desktop_env.launcher import LocalEnvLauncher  # noqa: E402

INSTRUCTION = "Bench pipeline task: click the same spot until told to stop"


@dataclass
class Result:
    """Figures of one runners-per-env setting (ms unless named otherwise)."""

    per_env: int
    execution: str
    rollouts: int
    steps: int
    seconds: float
    overhead: list[float]
    startup: list[float]
    startup_net: list[float]
    job_start: list[float]
    teardown: list[float]
    utilisation: dict[str, float]
    statuses: dict[str, int]
    cpu_ms: dict[str, float]
    stream_bytes: dict[str, float]
    blob_bytes: float

    @property
    def steps_per_s(self) -> float:
        return self.steps / self.seconds if self.seconds else 0.0


def write_script(directory: Path, steps: int) -> None:
    """A scripted-policy script: `steps - 1` clicks, then `finished`."""
    replies = [f"Thought: click {i}\nAction: click(start_box='(100,{100 + i})')" for i in range(steps - 1)]
    replies.append("Thought: done\nAction: finished(content='done')")
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "bench.json").write_text(json.dumps({"instruction": INSTRUCTION, "replies": replies}))


def bench_task() -> OSWorldTask:
    """The task: no setup, scored by `infeasible` (no env call, reward 0 on `finished`)."""
    return OSWorldTask.model_validate({"id": "bench-pipeline", "instruction": INSTRUCTION, "config": [],
                                       "evaluator": {"func": "infeasible"}, "domain": "bench"})


def start_null_envs(count: int, noise_kb: int = 0) -> tuple[subprocess.Popen[str], list[str]]:
    """Start `bench/null_env.py` serving `count` envs (screenshots with `noise_kb` KB of random pixels); returns
    the process and their URLs."""
    process = subprocess.Popen([sys.executable, "-m", "bench.null_env", "--count", str(count),
                                "--noise-kb", str(noise_kb)],
                               stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[1])
    assert process.stdout is not None
    urls = [process.stdout.readline().strip() for _ in range(count)]
    if not all(u.startswith("http://") for u in urls):
        process.kill()
        raise RuntimeError(f"null env did not start: {urls}")
    return process, urls


def cpu_seconds(pid: int) -> float:
    """CPU seconds of process `pid` and its waited-for children (user + system, its own and theirs)."""
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system + times.children_user + times.children_system


def service_pids(stack: LocalStack, null_env_pid: int | None) -> dict[str, list[int]]:
    """Service name (runner, policy, gateway, producer, sink, redis, null env) -> its processes' pids
    (no `null env` entry with real envs: `null_env_pid` None)."""
    pids: dict[str, list[int]] = {"null env": [null_env_pid]} if null_env_pid is not None else {}
    for process in stack.processes:
        if process.process is not None:
            # The runners are one pool process and its forked workers (services/runner/pool.py): a worker's CPU
            # (its work-horses' included, once it reaped them) reaches the pool's only when the worker exits.
            is_runner = process.module == "services.runner"
            group = pids.setdefault("runner" if is_runner else process.name.split("-")[0], [])
            group.append(process.process.pid)
            if is_runner:
                group += child_pids(process.process.pid)
    if stack.redis_server is not None and stack.redis_server.process is not None:
        pids["redis"] = [stack.redis_server.process.pid]
    return pids


def runner_counters(stack: LocalStack) -> dict[str, float]:
    """The runners' counters (`name{labels}` -> value) from their metrics port (the pool process serves all)."""
    (runner,) = [p for p in stack.processes if p.module == "services.runner"]
    port = runner.env["RUNNER_METRICS_PORT"]
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items()))
            out[f"{sample.name}{{{labels}}}"] = sample.value
    return out


def cpu_by_service(pids: dict[str, list[int]]) -> dict[str, float]:
    """Service -> CPU seconds so far."""
    return {name: sum(cpu_seconds(pid) for pid in group) for name, group in pids.items()}


def step_overheads(store_dir: Path, run_id: str, publish_per_step: dict[str, float]) -> list[float]:
    """Per stored step event: step_ms - model - env - settle, plus its rollout's publishing share (ms)."""
    out = []
    for step_file in (store_dir / run_id).glob("*/step_*.json"):
        event = json.loads(step_file.read_text())
        t = event["timings"]
        own = max(0.0, t["step_ms"] - t["model_ms"] - t["env_ms"] - t["settle_ms"])
        out.append(own + publish_per_step.get(step_file.parent.name, 0.0))
    return out


def utilisation(records: list[dict[str, Any]], envs: int) -> dict[str, float]:
    """Shares (0-1) of the envs' time over the run's window, by `ENV_STATES` and `idle`."""
    started = min(r["started_at"] for r in records)
    ended = max(r["ended_at"] for r in records)
    total_ms = (ended - started) * 1000.0 * envs
    sums = dict.fromkeys(ENV_STATES, 0.0)
    for record in records:
        for state, ms in env_split(record.get("timings") or {}).items():
            sums[state] += ms
    shares = {state: ms / total_ms for state, ms in sums.items()}
    shares["idle"] = max(0.0, 1.0 - sum(shares.values()))
    return shares


def run_setting(per_env: int, execution: str, env_urls: list[str], args: argparse.Namespace, root: Path,
                null_env_pid: int | None) -> Result:
    """One stack with `per_env` runners per env running rollouts `execution` (`RUNNER_EXECUTION`: fork or
    inline), one run, its figures."""
    work = root / f"{execution}-per-env-{per_env}"
    scripts = work / "scripts"
    write_script(scripts, args.steps)
    extra = {"LOG_LEVEL": args.log_level, "RUNNER_EXECUTION": execution,
             "RUNNER_CONCURRENCY": "1"}  # a rollout at a time per worker: runners per env as before
    if args.no_store:
        extra["RUNNER_STORE_URL"] = ""  # PNGs in the stream entries (services.cli.stack.runner_store_env)
    config = StackConfig(work_dir=work, scripts_dir=scripts, env_urls=env_urls, runners=per_env * len(env_urls),
                         replicas=args.replicas, policy_latency_ms=0.0,
                         settle_max_s=None if args.real_envs else 0.0,  # real desktops: the default settle
                         extra_env=extra, api_token="")
    store_dir = work / "trajectories"
    with LocalStack(config) as stack, ProducerClient(stack.producer_url) as client:
        pids = service_pids(stack, null_env_pid)
        cpu_before = cpu_by_service(pids)
        submitted = time.perf_counter()
        run_id = client.submit([bench_task()], rollouts_per_task=args.rollouts, max_steps=args.steps + 2)["run_id"]

        def finished() -> bool:
            run = client.run(run_id)
            return all(r["status"] not in ("queued", "running") for r in run["rollouts"]) \
                and len(run["rollouts"]) == args.rollouts

        wait_until(finished, args.timeout, f"run {run_id} to finish", interval_s=0.2)
        wait_until(lambda: len(list((store_dir / run_id).glob("*/manifest.json"))) >= args.rollouts,
                   args.timeout, "the sink to store every manifest", interval_s=0.1)
        seconds = time.perf_counter() - submitted
        cpu = {name: used - cpu_before[name] for name, used in cpu_by_service(pids).items()}
        records = client.run(run_id)["rollouts"]
        counters = runner_counters(stack)
    statuses: dict[str, int] = {}
    for r in records:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    timed = [r.get("timings") or {} for r in records]
    publish = {f"{r['task_id']}_{r['rollout_index']}": (r.get("timings") or {}).get("publish_ms", 0.0)
               / max(1, r["num_steps"]) for r in records}
    startup = [t["startup_ms"] for t in timed if "startup_ms" in t]
    stream = {kind: counters.get(f'cua_runner_stream_bytes_total{{type="{kind}"}}', 0.0)
              for kind in ("step", "episode")}
    return Result(
        per_env=per_env, execution=execution, rollouts=len(records), steps=sum(r["num_steps"] for r in records),
        seconds=seconds,
        overhead=step_overheads(store_dir, run_id, publish), startup=startup,
        startup_net=[t["startup_ms"] - t.get("reset_ms", 0.0) - t.get("lease_wait_ms", 0.0)
                     for t in timed if "startup_ms" in t],
        job_start=[t["job_start_ms"] for t in timed if "job_start_ms" in t],
        teardown=[t["teardown_ms"] for t in timed if "teardown_ms" in t],
        utilisation=utilisation(records, len(env_urls)), statuses=statuses,
        cpu_ms={name: 1000.0 * s / max(1, sum(r["num_steps"] for r in records)) for name, s in cpu.items()},
        stream_bytes=stream, blob_bytes=counters.get("cua_runner_blob_bytes_total{}", 0.0))


def _p(values: Iterable[float], q: float) -> str:
    value = percentile(list(values), q)
    return "-" if value is None else f"{value:.1f}"


def print_table(results: list[Result], envs: int, kind: str = "null") -> None:
    """The figures side by side, one row per runners-per-env setting."""
    head = ("execution", "runners/env", "rollouts", "steps", "steps/s", "ovh p50", "ovh p99", "start p50", "start p95",
            "net p50", "net p95", "horse p50", "tear p50", "in-step", "start-up", "reset", "eval", "idle")
    print(f"{kind} envs: {envs}; times in ms; start = job picked -> first model request, net = start minus "
          "reset and lease wait, horse = job picked -> attempt started in the work-horse; env time in %")
    print(" | ".join(head))
    for r in results:
        u = r.utilisation
        cells = (r.execution, str(r.per_env), str(r.rollouts), str(r.steps), f"{r.steps_per_s:.1f}", _p(r.overhead, 50),
                 _p(r.overhead, 99), _p(r.startup, 50), _p(r.startup, 95), _p(r.startup_net, 50),
                 _p(r.startup_net, 95), _p(r.job_start, 50), _p(r.teardown, 50),
                 *(f"{100 * u[s]:.1f}" for s in (*ENV_STATES, "idle")))
        print(" | ".join(cells))
    print("CPU ms per step by service (all processes, both cores):")
    for r in results:
        parts = sorted(r.cpu_ms.items(), key=lambda kv: -kv[1])
        print(f"  {r.execution}, {r.per_env} runners/env: total {sum(r.cpu_ms.values()):.1f} = "
              + ", ".join(f"{name} {ms:.1f}" for name, ms in parts))
    print("event stream bytes per step (entries XADDed by the runners / steps stored), blob bytes put per step:")
    for r in results:
        steps = max(1, r.steps)
        print(f"  {r.execution}, {r.per_env} runners/env: step entries {r.stream_bytes['step'] / steps:,.0f} B, "
              f"all entries {sum(r.stream_bytes.values()) / steps:,.0f} B, blobs {r.blob_bytes / steps:,.0f} B")
    for r in results:
        if set(r.statuses) != {"completed"}:
            print(f"note: {r.execution}, {r.per_env} runners/env ended as {r.statuses}")


def main(argv: list[str] | None = None) -> None:
    """Parse flags, run every setting, print the table."""
    parser = argparse.ArgumentParser(description="pipeline ceiling with null envs (see module docstring)")
    parser.add_argument("--envs", type=int, default=2, help="null envs")
    parser.add_argument("--per-env", default="1,2,4", help="runners per env, comma-separated settings")
    parser.add_argument("--rollouts", type=int, default=48, help="rollouts per setting")
    parser.add_argument("--steps", type=int, default=15, help="steps per rollout")
    parser.add_argument("--execution", default="fork,inline",
                        help="RUNNER_EXECUTION settings, comma-separated: fork (a work-horse per rollout), inline")
    parser.add_argument("--replicas", type=int, default=1, help="scripted policy replicas")
    parser.add_argument("--timeout", type=float, default=240.0, help="seconds per setting before giving up")
    parser.add_argument("--log-level", default="WARNING", help="services' LOG_LEVEL")
    parser.add_argument("--real-envs", action="store_true",
                        help="real Xvfb desktops (local env pods, default screen settle) instead of null envs: "
                             "the in-step share of real env time")
    parser.add_argument("--no-store", action="store_true",
                        help="runners without a store (RUNNER_STORE_URL empty): PNGs ride in the stream entries")
    args = parser.parse_args(argv)
    settings = [int(x) for x in args.per_env.split(",") if x]
    results = []
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="bench-pipeline-") as tmp:
        if args.real_envs:
            launcher = stack.enter_context(LocalEnvLauncher(count=args.envs, root_dir=Path(tmp) / "envs"))
            urls, null_env_pid = launcher.urls, None
        else:
            null_env, urls = start_null_envs(args.envs)
            stack.callback(null_env.wait, timeout=10)  # callbacks run last-in first-out: terminate, then wait
            stack.callback(null_env.terminate)
            null_env_pid = null_env.pid
        for execution in [x for x in args.execution.split(",") if x]:
            for per_env in settings:
                results.append(run_setting(per_env, execution, urls, args, Path(tmp), null_env_pid))
                print(f"  {execution}, {per_env} runners/env done: {results[-1].steps_per_s:.1f} steps/s "
                      f"(load average {os.getloadavg()[0]:.1f})", flush=True)
    print_table(results, args.envs, "real" if args.real_envs else "null")
    print(f"load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())} "
          f"({os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
