"""The chaos run: the local stack (`services.cli.stack.LocalStack`, S3 = moto behind a `TcpProxy`), one run
of fast example tasks with the zero-latency scripted policy, faults injected on a schedule, a
supervisor that restarts dead children (as `cua-rollout up` does), then `checks.check_run`.

Faults: `horse` (SIGKILL a runner work-horse), `worker` (SIGKILL a worker parent and its work-horse),
`sink`, `replica` (a scripted-policy replica), `env` (a desktop env's server, left dead), `redis`
(SIGKILL redis-server, restarted on its port and AOF), `store` (the object store unreachable for
`store_outage_s`). Recovery time per fault: runner faults, until the killed rollout runs again (or
ends); the others, until the pipeline progresses again (a rollout ends, or the sink persists again).
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import redis

from common import keys
from common.envpool import env_id_for_url
from common.objectstore import S3Store
from common.polling import free_port, wait_until
from common.processes import parent_pid
from common.runstate import load_rollout, summarize_run
from common.status import RolloutStatus
from services.cli.stack import LocalStack, StackConfig
from tests.chaos.checks import CheckReport, check_run
from tests.chaos.proxy import TcpProxy

ROOT = Path(__file__).resolve().parents[2]
FAST_TASKS = ROOT / "examples" / "tasks" / "fast"
#: A killed runner's rollout must run again within this many seconds (issue 15).
RUNNER_RECOVERY_TARGET_S = 60.0


@dataclass
class ChaosConfig:
    """Size, faults (in order, spread over the run) and time bounds (s) of one chaos run."""

    rollouts: int = 500
    envs: int = 4
    runners: int = 4
    replicas: int = 2
    faults: list[str] = field(default_factory=lambda: [
        "horse", "worker", "sink", "replica", "horse", "env", "redis", "store", "worker", "horse", "sink",
        "replica", "worker"])
    fault_gap_s: float = 20.0
    store_outage_s: float = 120.0
    deadline_s: float = 1800.0
    seed: int = 0
    work_dir: Path = Path(".cua/chaos")


@dataclass
class FaultResult:
    """One injected fault: what, when (s after submit), and recovery time (s; None = never)."""

    name: str
    at_s: float
    detail: str
    recovery_s: float | None = None


@dataclass
class ChaosResult:
    """Faults, the end-of-run checks, wall time (s) and whether anything was lost."""

    faults: list[FaultResult]
    report: CheckReport
    wall_s: float

    @property
    def ok(self) -> bool:
        """No problem found and every runner fault recovered within the target."""
        late = [f for f in self.faults if f.recovery_s is None
                or (f.name in ("horse", "worker") and f.recovery_s > RUNNER_RECOVERY_TARGET_S)]
        return not self.report.problems and not late

    def table(self) -> str:
        """The figures as a plain-text table."""
        r = self.report
        lines = ["fault      at(s)  recovery(s)  detail", "-" * 72]
        for f in self.faults:
            rec = "never" if f.recovery_s is None else f"{f.recovery_s:.1f}"
            lines.append(f"{f.name:<9} {f.at_s:>6.0f}  {rec:>11}  {f.detail}")
        terminal = sum(v for k, v in r.counts.items() if k not in ("queued", "running"))
        lines += ["-" * 72,
                  f"rollouts {r.total}, terminal {terminal}, by status {dict(sorted(r.counts.items()))}",
                  f"trajectories {r.trajectories}, steps {r.steps}, leases held {r.leases_held}, envs idle "
                  f"{r.envs_idle}, unhealthy {r.envs_unhealthy}, stream backlog {r.stream_backlog}, dead letters "
                  f"{r.dead_letters}",
                  f"problems (lost/duplicated/leaked): {len(r.problems)}", f"wall time {self.wall_s:.0f} s",
                  "RESULT: " + ("PASS" if self.ok else "FAIL")]
        lines += [f"  - {p}" for p in r.problems[:30]]
        return "\n".join(lines)


class Chaos:
    """Runs one chaos run (see the module docstring)."""

    def __init__(self, config: ChaosConfig) -> None:
        self.config = config
        self.rng = random.Random(config.seed)
        self.results: list[FaultResult] = []
        self.pending: list[tuple[FaultResult, float, Callable[[], bool]]] = []
        self.killed_envs: set[str] = set()

    # -- the run -----------------------------------------------------------------------------
    def run(self) -> ChaosResult:
        """Start everything, submit, inject faults, wait for the end (bounded), check, stop everything."""
        from moto.server import ThreadedMotoServer

        cfg = self.config
        moto_port, front_port = free_port(), free_port()
        moto = ThreadedMotoServer(ip_address="127.0.0.1", port=moto_port, verbose=False)
        moto.start()
        self.proxy = TcpProxy(("127.0.0.1", moto_port), front_port).start()
        endpoint = f"127.0.0.1:{front_port}"
        extra = {"S3_ENDPOINT": endpoint, "S3_ACCESS_KEY": "testing", "S3_SECRET_KEY": "testing",
                 "RUNNER_SETTLE_MAX_S": "0.5", "RUNNER_LEASE_TTL_MS": "10000", "SINK_CLAIM_IDLE_MS": "10000",
                 "LOG_LEVEL": "INFO"}
        stack_config = StackConfig(work_dir=cfg.work_dir, scripts_dir=ROOT / "examples" / "scripts",
                                   store_url="s3://chaos", envs=cfg.envs, replicas=cfg.replicas, runners=cfg.runners,
                                   max_infra_retries=3, policy_latency_ms=0.0, extra_env=extra,
                                   fixtures_dir=ROOT / "examples" / "fixtures")
        started = time.monotonic()
        try:
            with LocalStack(stack_config) as stack:
                self.stack = stack
                self.client = redis.Redis.from_url(stack.redis_url, socket_timeout=10)
                run_id = self._submit(stack)
                self.t0 = time.monotonic()
                self._drive(run_id)
                report = check_run(self.client, S3Store("chaos", endpoint, "testing", "testing"), run_id,
                                   self.killed_envs)
                self.client.close()
        finally:
            self.proxy.stop()
            moto.stop()
        return ChaosResult(self.results, report, time.monotonic() - started)

    def _submit(self, stack: LocalStack) -> str:
        import json

        tasks = [json.loads(p.read_text()) for p in sorted(FAST_TASKS.glob("*.json"))]
        per_task = -(-self.config.rollouts // len(tasks))
        run_id = f"chaos-{int(time.time())}"
        body = {"tasks": tasks, "rollouts_per_task": per_task, "run_id": run_id, "max_steps": 10}
        response = httpx.post(f"{stack.producer_url}/v1/runs", json=body, timeout=60)
        response.raise_for_status()
        return run_id

    def _drive(self, run_id: str) -> None:
        cfg = self.config
        queue = list(cfg.faults)
        next_fault = time.monotonic() + cfg.fault_gap_s / 2
        deadline = self.t0 + cfg.deadline_s
        while time.monotonic() < deadline:
            self.stack.restart_dead()  # the supervisor, as `cua-rollout up`
            self._poll_recoveries()
            summary = self._summary(run_id)
            if queue and time.monotonic() >= next_fault:
                self._inject(queue.pop(0), run_id)
                next_fault = time.monotonic() + cfg.fault_gap_s
            if summary is not None and summary.finished and not queue and not self.pending:
                break
            time.sleep(0.5)  # the driver's polling interval
        self._settle_store(deadline)

    def _summary(self, run_id: str):  # type: ignore[no-untyped-def]
        try:
            return summarize_run(self.client, run_id)
        except redis.RedisError:
            return None

    def _settle_store(self, deadline: float) -> None:
        """After the last rollout: wait (bounded) for the sink to persist everything and leases to go."""
        def drained() -> bool:
            self.stack.restart_dead()
            groups = self.client.xinfo_groups(keys.EVENTS_STREAM) if self.client.exists(keys.EVENTS_STREAM) else []
            pending = sum(int(g["pending"]) for g in groups)
            leases = list(self.client.scan_iter(match=f"{keys.PREFIX}:env:*:lease"))
            tracked = self.client.zcard(keys.ENV_LEASED)  # leases of killed owners: reclaimed by a reaper
            return self.client.xlen(keys.EVENTS_STREAM) == 0 and pending == 0 and not leases and not tracked
        try:
            wait_until(drained, max(30.0, deadline - time.monotonic()), "the sink to drain and leases to go",
                       interval_s=1.0)
        except Exception:  # the checks report what is left
            pass

    # -- faults ------------------------------------------------------------------------------
    def _record(self, name: str, detail: str, recovered: Callable[[], bool]) -> None:
        result = FaultResult(name, time.monotonic() - self.t0, detail)
        self.results.append(result)
        self.pending.append((result, time.monotonic(), recovered))

    def _poll_recoveries(self) -> None:
        still = []
        for result, t_fault, recovered in self.pending:
            try:
                done = recovered()
            except redis.RedisError:
                done = False
            if done:
                result.recovery_s = time.monotonic() - t_fault
            elif time.monotonic() - t_fault < 600:
                still.append((result, t_fault, recovered))
        self.pending = still

    def _progress(self, run_id: str) -> Callable[[], bool]:
        summary = self._summary(run_id)
        done = summary.done if summary else 0
        return lambda: bool((s := self._summary(run_id)) and (s.done > done or s.finished))

    def _inject(self, name: str, run_id: str) -> None:
        getattr(self, f"_fault_{name}")(run_id)

    def _running_job(self) -> tuple[str, int] | None:
        beats = list(self.client.scan_iter(match=f"{keys.PREFIX}:job:*:alive"))
        if not beats:
            return None
        key = self.rng.choice(beats).decode()
        value = self.client.get(key)
        if value is None:
            return None
        return key.split(":")[2], int(value.decode().split("@")[0])

    def _rollout_back(self, job_id: str) -> Callable[[], bool]:
        run_id, task_id, index = job_id.split("__")
        rollout_id = f"{run_id}:{task_id}:{index}"
        before = load_rollout(self.client, run_id, rollout_id)
        attempt = before.attempt if before else 0

        def back() -> bool:
            record = load_rollout(self.client, run_id, rollout_id)
            return bool(record and (record.attempt > attempt and record.status is RolloutStatus.RUNNING
                                    or record.status.is_terminal))
        return back

    def _fault_horse(self, run_id: str) -> None:
        job = wait_until(self._running_job, 60, "a running rollout")
        back = self._rollout_back(job[0])
        os.kill(job[1], signal.SIGKILL)
        self._record("horse", f"work-horse {job[1]} of {job[0]}", back)

    def _running_job_with_worker(self) -> tuple[str, int, int] | None:
        """A running rollout's job id, work-horse pid and worker pid; None when none runs or the
        work-horse ended before its parent could be read (the next poll picks another)."""
        job = self._running_job()
        if job is None:
            return None
        parent = parent_pid(job[1])
        return None if parent is None else (job[0], job[1], parent)

    def _fault_worker(self, run_id: str) -> None:
        job_id, horse, parent = wait_until(self._running_job_with_worker, 60, "a running rollout")
        back = self._rollout_back(job_id)
        os.killpg(os.getpgid(parent), signal.SIGKILL)  # the worker and its RQ scheduler child, as a dead pod
        os.kill(horse, signal.SIGKILL)  # RQ puts the work-horse in a process group of its own
        self._record("worker", f"worker {parent} + work-horse {horse} of {job_id}", back)

    def _kill_child(self, prefix: str) -> str:
        process = self.rng.choice([p for p in self.stack.processes if p.name.startswith(prefix) and p.alive()])
        assert process.process is not None
        os.kill(process.process.pid, signal.SIGKILL)
        return f"{process.name} (pid {process.process.pid})"

    def _fault_sink(self, run_id: str) -> None:
        read_before = self._entries_read()
        detail = self._kill_child("sink")
        self._record("sink", detail, lambda: self._entries_read() > read_before + 1)

    def _entries_read(self) -> int:
        groups = self.client.xinfo_groups(keys.EVENTS_STREAM)
        return sum(int(g.get("entries-read") or 0) for g in groups)

    def _fault_replica(self, run_id: str) -> None:
        detail = self._kill_child("policy-")
        self._record("replica", detail, self._progress(run_id))

    def _fault_env(self, run_id: str) -> None:
        launcher = self.stack.env_launcher
        assert launcher is not None
        index = self.rng.randrange(len(launcher.pids))
        os.kill(launcher.pids[index], signal.SIGKILL)
        self.killed_envs.add(env_id_for_url(launcher.urls[index]))
        self._record("env", f"env {launcher.urls[index]} (pid {launcher.pids[index]}), left dead",
                     self._progress(run_id))

    def _fault_redis(self, run_id: str) -> None:
        server = self.stack.redis_server
        assert server is not None and server.process is not None
        progress = self._progress(run_id)
        server.process.send_signal(signal.SIGKILL)
        server.process.wait()
        server.start()
        self._record("redis", f"redis-server SIGKILLed, restarted on port {server.port} (AOF)", progress)

    def _fault_store(self, run_id: str) -> None:
        self.proxy.stop()
        t_stop = time.monotonic()
        while time.monotonic() - t_stop < self.config.store_outage_s:  # the outage, supervised meanwhile
            self.stack.restart_dead()
            self._poll_recoveries()
            time.sleep(0.5)
        read_before = self._entries_read()
        backlog = int(self.client.xlen(keys.EVENTS_STREAM))
        self.proxy.start()
        self._record("store", f"object store unreachable {self.config.store_outage_s:.0f} s (recovery from its "
                              f"return, backlog {backlog} events)",
                     lambda: self._entries_read() > read_before and self.client.xlen(keys.EVENTS_STREAM) < max(
                         backlog, 1))
