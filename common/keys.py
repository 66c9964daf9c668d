"""Every Redis key, stream and queue name of cua-rollout, in one place (SPEC section 8)."""

from __future__ import annotations

PREFIX = "cua"

#: Stream of step and episode events (shard 0 of `events_stream`); consumed by the `sink` consumer group.
EVENTS_STREAM = f"{PREFIX}:events"
#: Consumer group of the sinks on each shard's stream.
SINK_GROUP = "sink"
#: Entries the sink could not decode or persist after retries.
DEAD_LETTER_STREAM = f"{PREFIX}:events:dead"

#: RQ queue name per run priority; workers listen to them in this order.
QUEUE_NAMES = {"high": f"{PREFIX}-high", "default": f"{PREFIX}-default", "low": f"{PREFIX}-low"}
QUEUES_IN_PRIORITY_ORDER = [QUEUE_NAMES["high"], QUEUE_NAMES["default"], QUEUE_NAMES["low"]]

#: Sorted set of run ids scored by creation time (seconds).
RUNS_INDEX = f"{PREFIX}:runs"

#: Hash of env id -> JSON `{"url", "provider", ...}`: every env the pool knows.
ENV_REGISTRY = f"{PREFIX}:envs"
#: Set of env ids whose last health check or reset failed.
ENV_UNHEALTHY = f"{PREFIX}:envs:unhealthy"
#: Set of the env ids a lease may take now (registered, healthy, not dedicated, not leased), whatever their
#: provider; `env_free(provider)` holds the same ids split by provider. `common.envpool` keeps both.
ENV_FREE = f"{PREFIX}:envs:free"
#: Sorted set of leased env id -> the lease's deadline (ms since the epoch, Redis' clock), kept up by lease,
#: renew and release: a lease whose key is gone (its owner died) is found here and its env freed.
ENV_LEASED = f"{PREFIX}:envs:leased"
#: Set of env ids reset right after their last release and not leased since: handed out without a reset.
ENV_CLEAN = f"{PREFIX}:envs:clean"
#: List of release numbers, one pushed each time `EnvPool.release` frees an env (newest first, the last
#: 64 kept): a leaser waiting for an env blocks on it (BLPOP) instead of sleeping between polls.
ENV_FREED = f"{PREFIX}:envs:freed"
#: Counter numbering the releases pushed to `ENV_FREED`.
ENV_FREED_SEQ = f"{PREFIX}:envs:freed:seq"
#: Held (SET NX PX) by the runner whose reaper runs a round, so rounds of several runners never overlap.
REAPER_LOCK = f"{PREFIX}:reaper:lock"


def events_stream(shard: int) -> str:
    """Stream of event shard `shard` (`common.eventshards`): `EVENTS_STREAM` for shard 0, so one shard
    (`EVENT_SHARDS=1`, the default) is the single stream of before; `cua:events:{shard}` for the others."""
    return EVENTS_STREAM if shard == 0 else f"{EVENTS_STREAM}:{shard}"


def run_meta(run_id: str) -> str:
    """Hash: the run's request (JSON), creation time, rollout count, queue."""
    return f"{PREFIX}:run:{run_id}"


def run_results(run_id: str) -> str:
    """Hash: rollout id -> JSON of its latest status record (status, reward, task, timings)."""
    return f"{PREFIX}:run:{run_id}:results"


def run_cancelled(run_id: str) -> str:
    """String flag set when a run is cancelled; runners check it before and during a rollout."""
    return f"{PREFIX}:run:{run_id}:cancelled"


def run_terminal(run_id: str) -> str:
    """Set: rollout ids of the run whose record is terminal (a run ends when it holds every rollout)."""
    return f"{PREFIX}:run:{run_id}:terminal"


def run_enqueued(run_id: str) -> str:
    """String flag set once every rollout of the run was enqueued (a crashed producer leaves it unset)."""
    return f"{PREFIX}:run:{run_id}:enqueued"


def idempotency(key: str) -> str:
    """String: idempotency key -> run id, so a re-submitted run maps to the first one."""
    return f"{PREFIX}:idem:{key}"


#: `env_lease(id)` is `ENV_LEASE_PREFIX + id + ENV_LEASE_SUFFIX` (the pool's Lua scripts build it so).
ENV_LEASE_PREFIX = f"{PREFIX}:env:"
ENV_LEASE_SUFFIX = ":lease"


def env_lease(env_id: str) -> str:
    """String with TTL: the rollout id that holds the env's lease."""
    return f"{ENV_LEASE_PREFIX}{env_id}{ENV_LEASE_SUFFIX}"


def env_free(provider: str) -> str:
    """Set: the ids of `ENV_FREE` registered by `provider` (a provider leasing only its own envs pops here)."""
    return f"{ENV_FREE}:{provider}"


def sink_lock(trajectory_prefix: str) -> str:
    """Lock (redis-py `Lock`) held by the sink writing a trajectory, so two sinks never interleave."""
    return f"{PREFIX}:sinklock:{trajectory_prefix}"


def job_heartbeat(job_id: str) -> str:
    """String with a short TTL, renewed by the work-horse running the job: gone = the job's process died."""
    return f"{PREFIX}:job:{job_id}:alive"


def job_beat_seen(job_id: str) -> str:
    """String set with the job's first heartbeat (TTL `JOB_BEAT_SEEN_TTL_S`), deleted with the heartbeat at its
    end: the job got past its start, so any reaper may reclaim it as soon as its heartbeat is gone."""
    return f"{PREFIX}:job:{job_id}:beat-seen"


#: Seconds a `job_beat_seen` marker lives (longer than any rollout; deleted at the job's end anyway).
JOB_BEAT_SEEN_TTL_S = 7 * 24 * 3600


def attempt_counter(rollout_id: str) -> str:
    """Integer: how many attempts a rollout has started (INCR at each start)."""
    return f"{PREFIX}:attempts:{rollout_id}"


def run_finished(run_id: str) -> str:
    """Stream: one entry per rollout of the run that reached a terminal status, in finishing order
    (field `rollout_id`); the cursor of `GET /v1/runs/{run_id}/events` is an entry id of it."""
    return f"{PREFIX}:run:{run_id}:finished"


def run_added(run_id: str) -> str:
    """Integer: rollouts added to an adaptive run after submission (beyond `RunMeta.total_rollouts`)."""
    return f"{PREFIX}:run:{run_id}:added"


def run_task_rollouts(run_id: str) -> str:
    """Hash of an adaptive run: task id -> rollouts enqueued for it so far."""
    return f"{PREFIX}:run:{run_id}:task_rollouts"


def run_settled(run_id: str) -> str:
    """Set of an adaptive run: task ids that will get no more rollouts."""
    return f"{PREFIX}:run:{run_id}:settled"


#: Set of adaptive run ids still adding rollouts; the producer's adaptive controller follows them.
ADAPTIVE_RUNS = f"{PREFIX}:adaptive:runs"
#: Lease (SET NX PX) of the producer replica that runs the adaptive controller.
ADAPTIVE_LEADER = f"{PREFIX}:adaptive:leader"


def adaptive_cursor(run_id: str) -> str:
    """String: the last `run_finished` entry id the adaptive controller handled for a run."""
    return f"{PREFIX}:adaptive:{run_id}:cursor"


def adaptive_request(run_id: str) -> str:
    """String: JSON of an adaptive run's request, from which the controller builds more rollouts."""
    return f"{PREFIX}:adaptive:{run_id}:request"
def k8s_pool_manager(namespace: str, pool: str) -> str:
    """String with TTL: the runner id that manages the `kubernetes` warm pool `pool` of `namespace`."""
    return f"{PREFIX}:k8s:{namespace}:{pool}:manager"


def k8s_creations(namespace: str, window: int) -> str:
    """Integer with TTL: pods created in `namespace` during rate-cap window number `window`."""
    return f"{PREFIX}:k8s:{namespace}:created:{window}"


#: Set of task ids the producer does not run (recorded `quarantined`): flaky tasks set aside.
QUARANTINE = f"{PREFIX}:quarantine"


#: Held (SET NX PX) by the sink running a blob reconciliation round (`services/storage_sink/reconcile.py`), so
#: that one sink at a time lists and deletes blobs.
BLOB_RECONCILE_LOCK = f"{PREFIX}:sink:blob-reconcile:lock"


#: Stream of the dashboard's series points (queue depth, envs, in-flight requests, step rate), one entry per
#: `DASHBOARD_SERIES_INTERVAL_S`, trimmed to the last hour (`services/task_producer/live/series.py`).
DASHBOARD_SERIES = f"{PREFIX}:dashboard:series"
#: Held (SET NX PX) by the producer replica writing the next series point, so replicas never write twice.
DASHBOARD_SERIES_LOCK = f"{PREFIX}:dashboard:series:lock"
