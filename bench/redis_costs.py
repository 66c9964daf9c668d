"""Measures what cua-rollout's Redis operations cost, on a real `redis-server`, for bench/cluster_sim.py.

Runs the project's own code paths against a private server (AOF everysec, noeviction, as in
production), one operation kind at a time, and reports per operation:

- `sent`: commands the client sent (counted in the client: a Lua script is one EVALSHA);
- `run`: commands Redis ran (`total_commands_processed`: a script's own calls included);
- `cpu_usec`: Redis main-thread CPU (`used_cpu_user_main_thread + used_cpu_sys_main_thread` of
  `INFO cpu`: command execution plus reading, parsing and answering, and the AOF write; not the AOF
  fsync, which runs in a background thread), in microseconds, less what the idle server's timers take
  meanwhile (measured first for 1 s). One client sends one command at a time here, so each wakes the
  event loop alone: an upper bound of what a busy server spends;
- `exec_usec`: the execution time of the commands sent (`usec` of `INFO commandstats`; a script's
  includes its own calls): a lower bound.

Operations: the env pool (`common.envpool.EnvPool`) with `envs` registered envs: `lease` (one script:
ZPOPMIN of a free id, SET NX PX of its lease key), `lease_none_free` (a waiter's retry when every env
is leased) and `wait_release` (its BLPOP, 10 ms), `take_clean`, `renew`, `release`; for comparison the
two parts of the lease of before issue 27, which read the whole registry (`scan_read`: SMEMBERS +
HGETALL) and then tried SET NX PX on each env in id order until one was free (`scan_set_nx`, one try
that fails). The step path: `is_cancelled` (EXISTS) and `EventPublisher.publish` (MEMORY USAGE + XADD)
with a `png_kb` KiB screenshot in the entry (`publish_png`) or without it (`publish_key`: the entry of
issue 27 point 2, which carries the screenshot's object key instead); the sink (`SinkConsumer`, real
code, local store) per entry of either kind, 32 episodes interleaved so that a batch spans many
trajectories as at scale (`sink_png`, `sink_key`). Per rollout: `rollout_bookkeeping` (attempt
counter, job heartbeat start and end, the `running` and the terminal record) and RQ's bookkeeping of
its job, enqueue to finish (`rq_job`); while it runs, `job_heartbeat` (every 5 s). Per reaper round:
`reaper_per_job` (each started job's heartbeat checked), `reclaim` (the pool's expired leases), and
`reaper_lock` (a runner's reaper finding the round taken by another's).

`measure()` returns `{operation: {"sent", "run", "cpu_usec", "exec_usec"}}`. Takes ~30-90 s.
Run alone: `python bench/redis_costs.py`.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import redis  # noqa: E402
from rq import Queue, SimpleWorker  # noqa: E402
from rq.registry import StartedJobRegistry  # noqa: E402

from common import keys  # noqa: E402
from common.envpool import EnvPool, Lease  # noqa: E402
from common.events import EpisodeEvent, ParsedAction, StepEvent  # noqa: E402
from common.objectstore import LocalDirStore  # noqa: E402
from common.redis_server import RedisServerProcess  # noqa: E402
from common.runstate import RolloutRecord, RunMeta, is_cancelled, record_rollout, save_run_meta  # noqa: E402
from common.status import RolloutStatus  # noqa: E402
from services.runner.publisher import EventPublisher  # noqa: E402
from services.runner.reaper import JobHeartbeat, Reaper  # noqa: E402
from services.storage_sink.consumer import SinkConsumer  # noqa: E402
from services.storage_sink.settings import SinkSettings  # noqa: E402
from services.storage_sink.writer import TrajectoryWriter  # noqa: E402

Costs = dict[str, dict[str, float]]


class CountingConnection(redis.Connection):
    """A redis-py connection counting the commands it sends, by name (pipelines included)."""

    sent: Counter[str] = Counter()

    def send_command(self, *args: Any, **kwargs: Any) -> None:
        CountingConnection.sent[str(args[0]).lower()] += 1
        super().send_command(*args, **kwargs)

    def pack_commands(self, commands: Any) -> list[bytes | memoryview]:
        for command in commands:
            CountingConnection.sent[str(command[0]).lower()] += 1
        return super().pack_commands(commands)  # type: ignore[no-any-return]


def each(items: Iterable[Any], call: Callable[[Any], object]) -> None:
    """`call` on every item, in order."""
    for item in items:
        call(item)


def noop() -> None:
    """The RQ job of the bookkeeping measurement (does nothing)."""


def step_event(run_id: str = "r" * 32, rollout: int = 3, step: int = 7) -> StepEvent:
    """A typical step: a UI-TARS answer with its thought and one click (logprobs off)."""
    thought = "The spreadsheet is open; I need to select column B before applying the filter. " * 3
    task_id = "t" * 36
    return StepEvent(run_id=run_id, task_id=task_id, rollout_index=rollout, rollout_id=f"{run_id}:{task_id}:{rollout}",
                     step=step, policy_version="v12", model_version="v12", replica="vllm-7:8000", thought=thought,
                     response=f"Thought: {thought}\nAction: click(start_box='(812,433)')",
                     actions=[ParsedAction(action_type="click", inputs={"start_box": [812, 433]},
                                           code="import pyautogui; pyautogui.click(812, 433)")])


class Meter:
    """Measures one operation kind at a time on `client` (a counting connection pool) through `stats`
    (a plain connection, whose INFO calls are subtracted)."""

    def __init__(self, client: redis.Redis, stats: redis.Redis) -> None:
        self.client, self.stats = client, stats
        self.costs: Costs = {}
        self.idle_cpu_per_s = 0.0  # the event loop's own timers (serverCron), subtracted from each window

    def measure_idle(self, seconds: float = 1.0) -> None:
        """Main-thread CPU per second of a server doing nothing (its cron: expiry, stats)."""
        cpu0, _ = self._snapshot()
        time.sleep(seconds)
        cpu1, _ = self._snapshot()
        self.idle_cpu_per_s = (cpu1 - cpu0) / seconds

    def _snapshot(self) -> tuple[float, int]:
        cpu: dict[str, Any] = self.stats.info("cpu")  # type: ignore[assignment]
        processed = int(self.stats.info("stats")["total_commands_processed"])  # type: ignore[index]
        return float(cpu["used_cpu_user_main_thread"]) + float(cpu["used_cpu_sys_main_thread"]), processed

    def measure(self, name: str, ops: int, run: Callable[[], object]) -> None:
        """Run `run` (doing `ops` operations) and record the per-operation cost under `name`: commands
        sent and run, main-thread CPU, and `exec_usec`, the execution time of the commands sent
        (`INFO commandstats`; a script's includes its own calls)."""
        sent0 = Counter(CountingConnection.sent)
        self.stats.config_resetstat()
        cpu0, run0 = self._snapshot()
        started = time.monotonic()
        run()
        cpu1, run1 = self._snapshot()
        cpu1 -= self.idle_cpu_per_s * (time.monotonic() - started)
        sent = CountingConnection.sent - sent0
        stats: dict[str, Any] = self.stats.info("commandstats")  # type: ignore[assignment]
        exec_usec = sum(float(v["usec"]) for k, v in stats.items() if k.removeprefix("cmdstat_") in sent)
        # Counted between the two reads of total_commands_processed: the first snapshot's INFO stats
        # (counted once it ran) and the second snapshot's INFO cpu.
        self.costs[name] = {"sent": sum(sent.values()) / ops, "run": (run1 - run0 - 2) / ops,
                            "cpu_usec": (cpu1 - cpu0) * 1e6 / ops, "exec_usec": exec_usec / ops}


def measure(envs: int = 10_000, png_kb: int = 300, leases: int = 2_000, steps: int = 400,
            jobs: int = 200) -> Costs:
    """Run the measurements on a fresh private redis-server; returns the costs per operation.

    Raises: RuntimeError when `redis-server` is not installed.
    """
    with tempfile.TemporaryDirectory() as tmp:
        server = RedisServerProcess(Path(tmp) / "redis").start()
        try:
            host, port = server.url.removeprefix("redis://").split("/")[0].split(":")
            pool = redis.ConnectionPool(connection_class=CountingConnection, host=host, port=int(port))
            meter = Meter(redis.Redis(connection_pool=pool), redis.Redis.from_url(server.url))
            meter.measure_idle()
            _env_pool(meter, envs, leases)
            _step_path(meter, Path(tmp), png_kb, steps)
            _bookkeeping(meter, jobs)
            return meter.costs
        finally:
            server.stop()


def _env_pool(meter: Meter, envs: int, leases: int) -> None:
    client = meter.client
    with client.pipeline(transaction=False) as pipe:
        registrar = EnvPool(pipe)  # type: ignore[arg-type]  # the pool's own register(), in one round trip
        for index in range(envs):
            registrar.register(f"http://10.{index // 65536}.{index // 256 % 256}.{index % 256}:5000", "kubernetes")
        pipe.execute()
    pool = EnvPool(client)
    warm = pool.try_lease("warm-up", 30_000)  # loads the scripts: not part of a lease
    assert warm is not None
    pool.renew(warm)
    pool.release(warm)
    held: list[Lease] = []
    meter.measure("lease", leases, lambda: held.extend(
        lease for i in range(leases) if (lease := pool.try_lease(f"rollout-{i}#1", 30_000)) is not None))
    assert len(held) == leases
    meter.measure("take_clean", leases, lambda: [pool.take_clean(lease) for lease in held])
    meter.measure("renew", leases, lambda: [pool.renew(lease) for lease in held])
    meter.measure("release", leases, lambda: each(held, lambda lease: pool.release(lease, clean=True)))
    scans = 20  # each reads the whole registry: a few suffice
    meter.measure("scan_read", scans, lambda: [(client.smembers(keys.ENV_UNHEALTHY), client.hgetall(keys.ENV_REGISTRY))
                                               for _ in range(scans)])
    meter.measure("scan_set_nx", leases, lambda: [client.set(keys.env_lease(held[0].env.env_id), "x", nx=True,
                                                             px=30_000) for _ in range(leases)])
    client.flushall()
    with client.pipeline(transaction=False) as pipe:
        registrar = EnvPool(pipe)  # type: ignore[arg-type]
        for index in range(100):
            registrar.register(f"http://10.0.0.{index}:5000", "kubernetes")
        pipe.execute()
    while pool.try_lease("taken#1", 30_000) is not None:
        pass
    meter.measure("lease_none_free", 200, lambda: [pool.try_lease(f"waiter-{i}#1", 30_000)
                                                   for i in range(200)])
    meter.measure("reclaim", 200, lambda: [pool.reclaim() for _ in range(200)])
    client.flushall()


def _step_path(meter: Meter, tmp: Path, png_kb: int, steps: int) -> None:
    png = os.urandom(png_kb * 1024)  # PNG is already compressed: random bytes have its size
    event = step_event()
    meter.measure("is_cancelled", steps, lambda: [is_cancelled(meter.client, event.run_id) for _ in range(steps)])
    _publish_and_sink(meter, tmp / "store-png", "png", png, steps)
    _publish_and_sink(meter, tmp / "store-key", "key", None, steps)


def _publish_and_sink(meter: Meter, store_dir: Path, kind: str, image: bytes | None, steps: int) -> None:
    client = meter.client
    publisher = EventPublisher(client, backlog_bytes=10 * 1024 ** 3, wait_s=1.0)
    publisher.CHECK_EVERY_S = 0.0  # a step is ~2 s apart: each publish measures the stream (> 1 s)
    event = step_event()
    meter.measure(f"publish_{kind}", steps, lambda: [publisher.publish(event, image) for _ in range(steps)])
    client.delete(keys.EVENTS_STREAM)
    # The sink, at scale: each batch spans many trajectories (32 episodes interleaved, step by step).
    settings = SinkSettings(redis_url="redis://unused", consumer="sink-1", block_ms=0)
    sink = SinkConsumer(client, TrajectoryWriter(LocalDirStore(store_dir)), settings)
    sink.ensure_group()
    episodes, per_episode = 32, max(1, steps // 32)
    refs = [step_event(run_id=f"run-{kind}", rollout=index, step=0) for index in range(episodes)]
    for ref in refs:
        publisher.publish(EpisodeEvent(phase="start", run_id=ref.run_id, task_id=ref.task_id,
                                       rollout_index=ref.rollout_index, rollout_id=ref.rollout_id,
                                       task_config={"id": ref.task_id}), wait=False)
    for step in range(per_episode):
        for ref in refs:
            publisher.publish(step_event(run_id=ref.run_id, rollout=ref.rollout_index, step=step), image, wait=False)
    for ref in refs:
        publisher.publish(EpisodeEvent(phase="end", run_id=ref.run_id, task_id=ref.task_id,
                                       rollout_index=ref.rollout_index, rollout_id=ref.rollout_id,
                                       status=RolloutStatus.COMPLETED, reward=1.0, num_steps=per_episode), wait=False)

    def drain() -> None:
        deadline = time.monotonic() + 300
        while meter.stats.xlen(keys.EVENTS_STREAM) and time.monotonic() < deadline:
            sink.process_once(block_ms=None)

    meter.measure(f"sink_{kind}", episodes * (per_episode + 2), drain)
    sink.close()
    client.delete(keys.EVENTS_STREAM)


def _rollout_bookkeeping(client: redis.Redis, index: int) -> None:
    """What a rollout attempt writes besides its events and lease (`services/runner/job.py`,
    `rollout.py`): attempt counter, heartbeat start and end, records `running` and terminal."""
    rollout_id = f"run-b:task:{index}"
    client.incr(keys.attempt_counter(rollout_id))
    with JobHeartbeat(client, f"run-b__task__{index}", ttl_s=15):
        for status in (RolloutStatus.RUNNING, RolloutStatus.COMPLETED):
            record_rollout(client, RolloutRecord(rollout_id=rollout_id, run_id="run-b", task_id="task",
                                                 rollout_index=index, status=status, attempt=1))


def _bookkeeping(meter: Meter, jobs: int) -> None:
    client = meter.client
    save_run_meta(client, RunMeta(run_id="run-b", created_at=time.time(), total_rollouts=10 ** 6, queue="cua-default",
                                  priority="default", rollouts_per_task=1, max_steps=15, model="m", task_ids=["task"]))
    meter.measure("rollout_bookkeeping", 200, lambda: each(range(200), lambda i: _rollout_bookkeeping(client, i)))
    meter.measure("wait_release", 100, lambda: [client.blpop([keys.ENV_FREED], timeout=0.01) for _ in range(100)])
    queue = Queue("cua-default", connection=client)
    for _ in range(jobs):
        queue.enqueue("bench.redis_costs.noop")
    worker = SimpleWorker([queue], connection=client)
    meter.measure("rq_job", jobs, lambda: worker.work(burst=True, with_scheduler=False, logging_level="WARNING"))
    meter.measure("job_heartbeat", 1000, lambda: [client.set(keys.job_heartbeat(f"job-{i}"), "1@host", px=15_000)
                                                  for i in range(1000)])
    registry = StartedJobRegistry("cua-default", connection=client)
    client.zadd(registry.key, {f"job-{i}": time.time() + 600 for i in range(1000)})  # their heartbeats: above
    reaper = Reaper(client, ["cua-default"], interval_s=5, grace_s=5, env_recheck_s=3600)
    meter.measure("reaper_per_job", 1000, lambda: reaper.reap_dead_jobs(time.monotonic()))
    client.set(keys.REAPER_LOCK, "another runner's reaper", px=60_000)
    meter.measure("reaper_lock", 200, lambda: [reaper.run_once() for _ in range(200)])  # the lock is held


def main() -> None:
    """Print the measured costs."""
    print(f"{'operation':18s} {'sent':>8s} {'run':>8s} {'cpu_usec':>10s} {'exec_usec':>10s}")
    for name, cost in measure().items():
        print(f"{name:18s} {cost['sent']:8.2f} {cost['run']:8.2f} {cost['cpu_usec']:10.1f} {cost['exec_usec']:10.1f}")


if __name__ == "__main__":
    main()
