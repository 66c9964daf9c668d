"""Fast recovery from dead runners, and re-admission of envs that recovered.

RQ reclaims a job whose worker died only when the started-job entry expires (about 90 s after the
last heartbeat) *and* a live worker runs its periodic maintenance (every 10 minutes by default). Here:

- `JobHeartbeat`: the work-horse running a rollout renews `keys.job_heartbeat(job_id)` (TTL
  `heartbeat_ttl_s`) every third of the TTL from a daemon thread.
- `Reaper`: a daemon thread in every worker parent. Every `interval_s`, under a Redis lock (one
  reaper at a time across workers), it lists the started jobs of the rollout queues; a job whose
  heartbeat has been missing for `grace_s` seconds (its work-horse died, with or without its parent)
  (`grace_s + startup_grace_s` for a job never seen beating: it may still be starting; "seen" is
  the `keys.job_beat_seen` marker of its first beat, so a reaper that took over from a dead worker's
  knows it too) gets its
  started-job entry expired and RQ's own registry cleanup run on it: RQ retries it (at the
  front, `Retry(enqueue_at_front=True)`) or fails it, and runs the `on_failure` callback that records
  the lost attempt (`services/runner/rq_callbacks.py`). Recovery: heartbeat TTL + grace + interval (about 30 s
  with the defaults), instead of 10 minutes.
- Scheduled retries overdue by `OVERDUE_S` (RQ's scheduler died with its worker) are enqueued.
- Each round frees the envs of env leases past their deadline whose owner died (`EnvPool.reclaim`);
  every `env_recheck_s` the same thread probes unhealthy envs and re-admits those that answer and
  reset (`common.envhealth.readmit_recovered`); every `env_reconcile_s` (300 s: it is O(envs)) it
  settles every registered env again (`EnvPool.reconcile`: a free env missing from the free set,
  e.g. of a pool written by an older version, is added).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid

import redis
from rq.registry import ScheduledJobRegistry, StartedJobRegistry
from rq.timeouts import TimerDeathPenalty

from common import keys, rqjobs
from common import redis_typed as rt
from common.envhealth import readmit_recovered
from common.envpool import EnvPool

log = logging.getLogger(__name__)

#: Seconds past its time after which a scheduled job counts as forgotten by a dead RQ scheduler.
OVERDUE_S = 10.0


class JobHeartbeat:
    """Renews `keys.job_heartbeat(job_id)` (TTL `ttl_s`; value `{pid}@{host}` of the work-horse) every
    `ttl_s / 3` s until closed; Redis errors are skipped (the TTL leaves room for two more tries).
    Use as a context manager."""

    def __init__(self, client: redis.Redis, job_id: str, ttl_s: float) -> None:
        self.client = client
        self.key = keys.job_heartbeat(job_id)
        self.seen_key = keys.job_beat_seen(job_id)
        self.ttl_ms = int(ttl_s * 1000)
        self.value = f"{os.getpid()}@{socket.gethostname()}"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="job-heartbeat", daemon=True)

    def _beat(self) -> None:
        try:
            self.client.set(self.key, self.value, px=self.ttl_ms)
        except redis.RedisError as exc:
            log.warning("job heartbeat failed: %r", exc)

    def _run(self) -> None:
        while not self._stop.wait(self.ttl_ms / 3000.0):
            self._beat()

    def __enter__(self) -> JobHeartbeat:
        self._beat()
        try:
            self.client.set(self.seen_key, "1", ex=keys.JOB_BEAT_SEEN_TTL_S)
        except redis.RedisError as exc:  # the reaper then waits its longer start-up grace: slower, not wrong
            log.warning("job heartbeat marker failed: %r", exc)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        try:
            self.client.delete(self.key, self.seen_key)
        except redis.RedisError:
            pass  # it expires by itself


class Reaper:
    """Reclaims jobs of dead work-horses and re-admits recovered envs (see the module docstring)."""

    def __init__(self, client: redis.Redis, queue_names: list[str], interval_s: float, grace_s: float,
                 env_recheck_s: float, startup_grace_s: float = 60.0, env_reconcile_s: float = 300.0) -> None:
        self.client = client
        self.queue_names = queue_names
        self.interval_s = interval_s
        self.grace_s = grace_s
        self.env_recheck_s = env_recheck_s
        self.env_reconcile_s = env_reconcile_s
        self._next_reconcile = 0.0
        self.token = uuid.uuid4().hex
        self.startup_grace_s = startup_grace_s
        self._missing_since: dict[str, float] = {}
        self._seen_alive: set[str] = set()
        self._next_env_check = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="reaper", daemon=True)

    def start(self) -> Reaper:
        """Start the daemon thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the thread (at its next wake-up)."""
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.run_once()
            except redis.RedisError as exc:
                log.warning("reaper: redis unavailable (%r)", exc)
            except Exception:  # a bug here must not stop reaping for good
                log.exception("reaper round failed")

    def run_once(self, now: float | None = None) -> list[str]:
        """One round (if this reaper gets the lock): returns the ids of the jobs handed back to RQ."""
        now = time.monotonic() if now is None else now
        lock_ms = int(max(self.interval_s * 2, 10) * 1000)
        if not self.client.set(keys.REAPER_LOCK, self.token, nx=True, px=lock_ms):
            held = self.client.get(keys.REAPER_LOCK)
            if (held.decode() if isinstance(held, bytes) else held) != self.token:
                return []
            self.client.pexpire(keys.REAPER_LOCK, lock_ms)
        reaped = self.reap_dead_jobs(now)
        self.enqueue_overdue(time.time())
        pool = EnvPool(self.client)
        if freed := pool.reclaim():
            log.info("%d envs whose lease expired (owner died) are free again", freed)
        if now >= self._next_env_check:
            self._next_env_check = now + self.env_recheck_s
            for env_id in readmit_recovered(pool):
                log.info("env %s answers again: re-admitted", env_id)
        if now >= self._next_reconcile:
            self._next_reconcile = now + self.env_reconcile_s
            if freed := pool.reconcile():
                log.info("%d free envs were missing from the free set (expired leases, or a pool written "
                         "by an older version): added", freed)
        return reaped

    def enqueue_overdue(self, now_epoch: float) -> list[str]:
        """Enqueue scheduled jobs (retries with an interval) overdue by more than `OVERDUE_S`: RQ's
        scheduler, which runs every second in one worker, died with that worker, and a live worker
        takes its lock over only at its next maintenance. Returns the job ids enqueued."""
        moved: list[str] = []
        for name in self.queue_names:
            registry = ScheduledJobRegistry(name, connection=self.client, **rqjobs.REGISTRY_OPTIONS)
            job_ids = registry.get_jobs_to_schedule(int(now_epoch - OVERDUE_S))
            if not job_ids:
                continue
            queue = rqjobs.queue(name, self.client)
            with self.client.pipeline() as pipe:
                for job in rqjobs.fetch_many(job_ids, self.client):
                    if job is not None:
                        queue._enqueue_job(job, pipeline=pipe, at_front=job.should_enqueue_at_front())
                        moved.append(job.id)
                for job_id in job_ids:
                    registry.remove(job_id, pipeline=pipe)
                pipe.execute()
            log.warning("enqueued %d overdue scheduled jobs of %s (no live RQ scheduler)", len(moved), name)
        return moved

    def _beating(self, job_ids: list[str]) -> list[bool]:
        """Whether each job's heartbeat key exists: one MGET per 1,000 jobs, not one EXISTS per job (at
        10,000 rollouts in flight, 2,000 commands/s less with the default 5 s interval)."""
        beating: list[bool] = []
        for start in range(0, len(job_ids), 1000):
            chunk = [keys.job_heartbeat(job_id) for job_id in job_ids[start:start + 1000]]
            values = rt.mget(self.client, chunk)
            beating += [value is not None for value in values]
        return beating

    def reap_dead_jobs(self, now: float) -> list[str]:
        """Hand every started job whose heartbeat has been missing for `grace_s` back to RQ."""
        reaped: list[str] = []
        seen: set[str] = set()
        for name in self.queue_names:
            # Timer-based timeouts: RQ's default (SIGALRM) works only in the main thread.
            registry = StartedJobRegistry(name, connection=self.client, death_penalty_class=TimerDeathPenalty,
                                          **rqjobs.REGISTRY_OPTIONS)
            entries = rt.zrange(self.client, registry.key, 0, -1)
            dead_entries = []
            job_ids = [registry.parse_job_id(rt.text(entry)) for entry in entries]
            for entry, job_id, beating in zip(entries, job_ids, self._beating(job_ids), strict=True):
                seen.add(job_id)
                if beating:
                    self._missing_since.pop(job_id, None)
                    self._seen_alive.add(job_id)
                    continue
                first = self._missing_since.setdefault(job_id, now)
                # A job never seen beating may still be starting (fork, imports): a longer grace.
                seen_alive = job_id in self._seen_alive or self.client.exists(keys.job_beat_seen(job_id))
                grace = self.grace_s if seen_alive else self.grace_s + self.startup_grace_s
                if now - first >= grace:
                    dead_entries.append((entry, job_id))
            if dead_entries:
                # Expire just these entries, then let RQ's own cleanup retry or fail them (score <= 1).
                self.client.zadd(registry.key, {rt.text(entry): 0 for entry, _ in dead_entries}, xx=True)
                registry.cleanup(timestamp=1)
                for _, job_id in dead_entries:
                    self.client.delete(keys.job_beat_seen(job_id))
                    log.warning("job %s: work-horse heartbeat gone for %.0fs: handed back to RQ", job_id,
                                now - self._missing_since.pop(job_id, now))
                    self._seen_alive.discard(job_id)
                    reaped.append(job_id)
        for job_id in list(self._missing_since):
            if job_id not in seen:
                del self._missing_since[job_id]
        self._seen_alive &= seen
        return reaped

