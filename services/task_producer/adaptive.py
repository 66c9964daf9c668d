"""Adaptive rollouts: add rollouts to a task only while its results are informative (DART's dynamic
rollout number; see `common.run.AdaptiveRollouts`).

One producer replica at a time (a Redis lease) runs the controller: it follows each adaptive run's
finished-rollouts stream (`keys.run_finished`, from a cursor kept in Redis, so a restarted producer
resumes where it stopped). When every rollout of a task has ended, the task's curriculum decides how
many to add; zero settles the task. A run finishes once all its tasks are settled and all its
rollouts ended.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable

import redis

from common import keys
from common import redis_typed as rt
from common.run import AdaptiveRollouts, RunRequest, make_rollout_id
from common.runstate import RolloutRecord, is_cancelled, read_finished
from services.task_producer.queueing import enqueue_rollouts, queue_for
from services.task_producer.settings import ProducerSettings

log = logging.getLogger(__name__)

#: A curriculum: (task id, the task's ended rollouts, the run's policy) -> rollouts to add (0: settle).
Curriculum = Callable[[str, list[RolloutRecord], AdaptiveRollouts], int]
_CURRICULA: dict[str, Curriculum] = {}
#: Lease of the controller (ms); renewed every round, so a dead producer's lease lapses quickly.
LEADER_TTL_MS = 10_000


def informative(task_id: str, rollouts: list[RolloutRecord], policy: AdaptiveRollouts) -> int:
    """The default curriculum: add `batch` more (up to `max_rollouts`) while the rewarded rollouts
    are mixed, or while fewer than `min_rollouts` got a reward (infrastructure failures carry no
    information); stop at all-success or all-failure."""
    room = policy.max_rollouts - len(rollouts)
    rewards = [r.reward for r in rollouts if r.reward is not None]
    if room <= 0:
        return 0
    if len(rewards) < policy.min_rollouts:
        return min(policy.batch, room, policy.min_rollouts - len(rewards))
    successes = sum(1 for reward in rewards if reward >= 1.0)
    if successes in (0, len(rewards)):
        return 0
    return min(policy.batch, room)


def register_curriculum(name: str, curriculum: Curriculum) -> None:
    """Make `curriculum` selectable by runs (`adaptive.curriculum: name`)."""
    _CURRICULA[name] = curriculum


def curriculum_named(name: str | None) -> Curriculum:
    """The registered curriculum `name` (None: `informative`). Raises: KeyError naming the known ones."""
    if name is None:
        return informative
    if name not in _CURRICULA:
        raise KeyError(f"unknown curriculum {name!r} (registered: {sorted(_CURRICULA) or 'none'})")
    return _CURRICULA[name]


register_curriculum("informative", informative)


def _task_rollouts(client: redis.Redis, run_id: str, task_id: str, count: int) -> list[RolloutRecord | None]:
    ids = [make_rollout_id(run_id, task_id, i) for i in range(count)]
    raw = rt.hmget(client, keys.run_results(run_id), ids)
    return [RolloutRecord.model_validate_json(r) if r else None for r in raw]


def step_task(client: redis.Redis, settings: ProducerSettings, request: RunRequest, run_id: str,
              task_id: str) -> int:
    """Decide for one task of an adaptive run whose rollout just ended: returns how many rollouts
    were added (0 also when the task is still running or now settled)."""
    if client.sismember(keys.run_settled(run_id), task_id):
        return 0
    count = int(rt.hget(client, keys.run_task_rollouts(run_id), task_id) or 0)
    records = _task_rollouts(client, run_id, task_id, count)
    if any(r is None or not r.status.is_terminal for r in records):
        return 0
    assert request.adaptive is not None
    ended = [r for r in records if r is not None]
    add = 0 if is_cancelled(client, run_id) else \
        curriculum_named(request.adaptive.curriculum)(task_id, ended, request.adaptive)
    add = max(0, min(add, request.adaptive.max_rollouts - count))
    if add == 0:
        client.sadd(keys.run_settled(run_id), task_id)
        return 0
    task = next(t for t in request.tasks if t.id == task_id)
    pipe = client.pipeline(transaction=True)  # counts first: a reader never sees a job it cannot count
    pipe.hincrby(keys.run_task_rollouts(run_id), task_id, add)
    pipe.incrby(keys.run_added(run_id), add)
    pipe.execute()
    enqueue_rollouts(client, queue_for(client, request.priority.value), settings, run_id, task,
                     range(count, count + add), request)
    return add


class AdaptiveController:
    """Background loop of the producer that extends adaptive runs (see module docstring)."""

    def __init__(self, client: redis.Redis, settings: ProducerSettings, interval_s: float = 0.5) -> None:
        self.client = client
        self.settings = settings
        self.interval_s = interval_s
        self.identity = uuid.uuid4().hex
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Run the loop in a daemon thread until `stop()`."""
        self._thread = threading.Thread(target=self._loop, name="adaptive-controller", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the loop and wait for it (up to 5 s)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                if self._lead():
                    for run_id in rt.smembers(self.client, keys.ADAPTIVE_RUNS):
                        self.step_run(rt.text(run_id))
            except redis.RedisError as exc:  # Redis away: try again next round, nothing is lost
                log.warning("adaptive controller: %s", exc)
            self._stop.wait(self.interval_s)

    def _lead(self) -> bool:
        """Hold or take the controller lease; only the holder extends runs."""
        held = rt.get(self.client, keys.ADAPTIVE_LEADER)
        if held is not None and rt.text(held) == self.identity:
            return bool(self.client.pexpire(keys.ADAPTIVE_LEADER, LEADER_TTL_MS))
        return bool(self.client.set(keys.ADAPTIVE_LEADER, self.identity, nx=True, px=LEADER_TTL_MS))

    def step_run(self, run_id: str) -> None:
        """Handle the rollouts of `run_id` that ended since the stored cursor; retire the run once
        every task is settled."""
        raw = rt.get(self.client, keys.adaptive_request(run_id))
        if raw is None:
            self.client.srem(keys.ADAPTIVE_RUNS, run_id)
            return
        request = RunRequest.model_validate_json(raw)
        cursor_raw = self.client.get(keys.adaptive_cursor(run_id))
        cursor = cursor_raw.decode() if isinstance(cursor_raw, bytes) else "0-0"
        for entry_id, record in read_finished(self.client, run_id, cursor, count=500):
            step_task(self.client, self.settings, request, run_id, record.task_id)
            self.client.set(keys.adaptive_cursor(run_id), entry_id)
        if rt.scard(self.client, keys.run_settled(run_id)) >= len(request.tasks):
            self._retire(run_id)

    def _retire(self, run_id: str) -> None:
        """Stop watching a settled run; its adaptive keys expire with the run's other keys (`RUN_TTL_S`)."""
        pipe = self.client.pipeline(transaction=True)
        pipe.srem(keys.ADAPTIVE_RUNS, run_id)
        for key in (keys.adaptive_request(run_id), keys.adaptive_cursor(run_id), keys.run_task_rollouts(run_id),
                    keys.run_settled(run_id)):
            pipe.expire(key, self.settings.run_ttl_s)
        pipe.execute()
