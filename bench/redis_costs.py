"""Measures what cua-rollout's Redis commands cost, on a real `redis-server`, for bench/cluster_sim.py.

Runs the project's own code paths against a private server (AOF everysec, noeviction, as in
production) and reads Redis' `INFO commandstats` (calls and `usec_per_call`: server CPU time per
command, without network or client time):

- env pool (`common.envpool.EnvPool`) with `envs` registered envs: `try_lease` (SMEMBERS, HGETALL of
  the whole registry, SET NX PX per env tried), `renew` and `release` (EVALSHA);
- the step path: `is_cancelled` (EXISTS), the runner's `EventPublisher.publish` (XLEN + XADD of an
  entry carrying a `png_kb` KiB screenshot), the sink's read (XREADGROUP, batch 32, XAUTOCLAIM) and
  its per-entry XACK + XDEL;
- RQ's bookkeeping for one job, enqueue to finish (`Queue.enqueue` + a burst `SimpleWorker`).

`measure()` returns `{command: usec_per_call}` plus `rq_commands_per_job`, `rq_usec_per_job`,
`hgetall_fields`. Takes ~10-30 s. Run alone: `python bench/redis_costs.py`.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import redis  # noqa: E402
from rq import Queue, SimpleWorker  # noqa: E402

from common import keys  # noqa: E402
from common.envpool import EnvPool  # noqa: E402
from common.events import ParsedAction, StepEvent, encode_event  # noqa: E402
from common.redis_server import RedisServerProcess  # noqa: E402
from common.runstate import is_cancelled  # noqa: E402
from services.runner.publisher import EventPublisher  # noqa: E402


def noop() -> None:
    """The RQ job of the bookkeeping measurement (does nothing)."""


def _commandstats(client: redis.Redis) -> dict[str, dict[str, float]]:
    stats: dict[str, Any] = client.info("commandstats")  # type: ignore[assignment]
    return {name.removeprefix("cmdstat_"): {"calls": float(v["calls"]), "usec": float(v["usec"])}
            for name, v in stats.items()}


def step_event() -> StepEvent:
    """A typical step: a UI-TARS answer with its thought and one click (logprobs off)."""
    thought = "The spreadsheet is open; I need to select column B before applying the filter. " * 3
    return StepEvent(run_id="r" * 32, task_id="t" * 36, rollout_index=3, rollout_id="o" * 40, step=7,
                     policy_version="v12", model_version="v12", replica="vllm-7:8000", thought=thought,
                     response=f"Thought: {thought}\nAction: click(start_box='(812,433)')",
                     actions=[ParsedAction(action_type="click", inputs={"start_box": [812, 433]},
                                           code="import pyautogui; pyautogui.click(812, 433)")])


def measure(envs: int = 10_000, png_kb: int = 300, steps: int = 300, leases: int = 40,
            jobs: int = 200) -> dict[str, float]:
    """Run the measurements on a fresh private redis-server; returns usec per call per command.

    Raises: RuntimeError when `redis-server` is not installed.
    """
    with tempfile.TemporaryDirectory() as tmp:
        server = RedisServerProcess(Path(tmp)).start()
        try:
            return _measure(redis.Redis.from_url(server.url), envs, png_kb, steps, leases, jobs)
        finally:
            server.stop()


def _measure(client: redis.Redis, envs: int, png_kb: int, steps: int, leases: int, jobs: int) -> dict[str, float]:
    pipe = client.pipeline(transaction=False)
    registrar = EnvPool(pipe)  # the pool's own register(), its HSETs sent in one round trip
    for index in range(envs):
        registrar.register(f"http://10.{index // 65536}.{index // 256 % 256}.{index % 256}:5000", provider="kubernetes")
    pipe.execute()
    pool = EnvPool(client)
    client.config_resetstat()
    held = [pool.try_lease(f"rollout-{i}", 30_000) for i in range(leases)]
    for lease in held:
        assert lease is not None
        pool.renew(lease)
    for lease in held:
        assert lease is not None
        pool.release(lease)

    publisher = EventPublisher(client, backlog_limit=10_000_000, wait_s=1.0)
    client.xgroup_create(keys.EVENTS_STREAM, keys.SINK_GROUP, id="0", mkstream=True)
    png = os.urandom(png_kb * 1024)  # PNG is already compressed: random bytes have its size
    event = step_event()
    for _ in range(steps):
        is_cancelled(client, event.run_id)
        publisher.publish(event, png)
    while True:
        client.xautoclaim(keys.EVENTS_STREAM, keys.SINK_GROUP, "sink-1", min_idle_time=60_000,
                          start_id="0-0", count=32)
        batch: Any = client.xreadgroup(keys.SINK_GROUP, "sink-1", {keys.EVENTS_STREAM: ">"}, count=32)
        if not batch:
            break
        for _, entries in batch:
            for entry_id, _fields in entries:
                pipe = client.pipeline()
                pipe.xack(keys.EVENTS_STREAM, keys.SINK_GROUP, entry_id)
                pipe.xdel(keys.EVENTS_STREAM, entry_id)
                pipe.execute()
    stats = _commandstats(client)
    costs = {name: s["usec"] / s["calls"] for name, s in stats.items() if s["calls"]}
    costs["set_calls_per_lease"] = stats["set"]["calls"] / leases
    costs["hgetall_fields"] = float(envs)
    costs["step_entry_bytes"] = float(sum(len(v) for v in encode_event(event, png).values()))

    client.config_resetstat()
    queue = Queue("cua-default", connection=client)
    for _ in range(jobs):
        queue.enqueue("bench.redis_costs.noop")
    SimpleWorker([queue], connection=client).work(burst=True, with_scheduler=False, logging_level="WARNING")
    rq_stats = _commandstats(client)
    costs["rq_commands_per_job"] = sum(s["calls"] for s in rq_stats.values()) / jobs
    costs["rq_usec_per_job"] = sum(s["usec"] for s in rq_stats.values()) / jobs
    return costs


def main() -> None:
    """Print the measured costs."""
    for name, value in sorted(measure().items()):
        print(f"{name:24s} {value:10.2f}")


if __name__ == "__main__":
    main()
