"""Run bookkeeping in Redis: run metadata written by the producer, rollout records by the runner.

`RunSummary` is what `GET /v1/runs/{run_id}` and `cua-rollout watch/stats` show.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, cast

import redis
from pydantic import BaseModel, Field

from common import keys
from common import redis_typed as rt
from common.run import AdaptiveRollouts
from common.status import EXCLUDED_FROM_SCORE, RolloutStatus

#: Default lifetime (s) of a finished run's keys (`RUN_TTL_S` overrides it through the settings).
DEFAULT_RUN_TTL_S = 7 * 24 * 3600

# Write a rollout record unless a newer attempt's record is already there; keep the set of terminal
# rollouts; when it holds every rollout of the run, give every per-run key a TTL.
# KEYS: results, terminal set, meta, cancelled flag, enqueued flag, the rollout's attempt counter.
# ARGV: rollout id, record JSON, attempt, 1 if terminal, ttl (s). Returns 1 written, 0 dropped (stale).
_RECORD_LUA = """
local old = redis.call('hget', KEYS[1], ARGV[1])
if old then
  local ok, prev = pcall(cjson.decode, old)
  if ok and tonumber(prev['attempt'] or 0) > tonumber(ARGV[3]) then return 0 end
end
redis.call('hset', KEYS[1], ARGV[1], ARGV[2])
if ARGV[4] == '1' then
  if redis.call('sadd', KEYS[2], ARGV[1]) == 1 then
    redis.call('xadd', KEYS[7], '*', 'rollout_id', ARGV[1])
  end
  redis.call('expire', KEYS[6], ARGV[5])
  local meta = redis.call('get', KEYS[3])
  if meta then
    local total = tonumber(cjson.decode(meta)['total_rollouts'] or 0) + tonumber(redis.call('get', KEYS[8]) or 0)
    if redis.call('scard', KEYS[2]) >= total then
      for _, i in ipairs({1, 2, 3, 4, 5, 7, 8}) do redis.call('expire', KEYS[i], ARGV[5]) end
    end
  end
else
  redis.call('srem', KEYS[2], ARGV[1])
  redis.call('persist', KEYS[1])
  redis.call('persist', KEYS[3])
end
return 1
"""


class RolloutRecord(BaseModel):
    """Latest known state of one rollout (stored as JSON in `keys.run_results(run_id)`).

    Times are epoch seconds; durations are milliseconds.
    """

    rollout_id: str
    run_id: str
    task_id: str
    rollout_index: int
    domain: str = "default"
    status: RolloutStatus
    reward: float | None = None
    num_steps: int = 0
    attempt: int = 1
    error: str | None = None
    env_id: str | None = None
    started_at: float | None = None
    ended_at: float | None = None
    duration_ms: float | None = None
    model_ms: float = 0.0
    env_ms: float = 0.0
    #: The attempt's timings (ms): see `services.runner.timings.TIMING_KEYS`.
    timings: dict[str, float] = Field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    trajectory: str | None = None


class RunMeta(BaseModel):
    """What the producer stored about a run when it accepted it."""

    run_id: str
    created_at: float
    total_rollouts: int
    queue: str
    priority: str
    rollouts_per_task: int
    max_steps: int
    model: str
    policy_version: str | None = None
    task_ids: list[str]
    domains: dict[str, str] = Field(default_factory=dict)
    cancelled: bool = False
    adaptive: AdaptiveRollouts | None = None


class RunSummary(BaseModel):
    """Counts by status; the benchmark score first (`score` = `total_reward` / `score_n`: the sum of
    rewards over every rollout submitted but those that never ran by decision, see `common.stats`), the
    infrastructure failures that exhausted their retries (`infra_failures`, counted 0 in the score), then
    the success rate over rewarded rollouts only; mean timings (ms)."""

    run_id: str
    created_at: float
    total: int
    counts: dict[str, int]
    done: int
    score: float | None = None
    total_reward: float = 0.0
    score_n: int = 0
    infra_failures: int = 0
    success_rate: float | None
    mean_reward: float | None
    mean_duration_ms: float | None
    mean_model_ms: float | None
    mean_env_ms: float | None
    cancelled: bool
    finished: bool
    rollouts: list[RolloutRecord] = Field(default_factory=list)


def save_run_meta(client: redis.Redis, meta: RunMeta, ttl_s: int = DEFAULT_RUN_TTL_S) -> None:
    """Store the run's metadata (keeping its TTL if it has one) and index it by creation time; runs
    created more than `ttl_s` seconds ago leave the index (their keys have expired or will)."""
    pipe = client.pipeline()
    pipe.set(keys.run_meta(meta.run_id), meta.model_dump_json(), keepttl=True)
    pipe.zadd(keys.RUNS_INDEX, {meta.run_id: meta.created_at})
    pipe.zremrangebyscore(keys.RUNS_INDEX, "-inf", meta.created_at - ttl_s)
    pipe.execute()


def load_run_meta(client: redis.Redis, run_id: str) -> RunMeta | None:
    """The run's metadata, or None when the run does not exist."""
    raw: Any = client.get(keys.run_meta(run_id))
    return RunMeta.model_validate_json(raw) if raw else None


def record_rollout(client: redis.Redis, record: RolloutRecord, ttl_s: int = DEFAULT_RUN_TTL_S) -> bool:
    """Store the rollout's latest state, atomically (one Lua script), unless the stored record is of a
    newer attempt (a late older attempt never overwrites it). Returns False when dropped as stale.

    A terminal record adds the rollout to the run's terminal set (the first time, it is also
    announced on the run's `keys.run_finished` stream) and gives its attempt counter a TTL; once
    that set holds the run's rollouts (`total_rollouts` plus those an adaptive run added), every key
    of the run (meta, results, terminal set, cancelled and enqueued flags, finished stream, added
    count) expires `ttl_s` seconds later. A non-terminal record (a retry) undoes both.
    """
    run_id = record.run_id
    script = client.register_script(_RECORD_LUA)
    written = script(
        keys=[keys.run_results(run_id), keys.run_terminal(run_id), keys.run_meta(run_id),
              keys.run_cancelled(run_id), keys.run_enqueued(run_id), keys.attempt_counter(record.rollout_id),
              keys.run_finished(run_id), keys.run_added(run_id)],
        args=[record.rollout_id, record.model_dump_json(), record.attempt, 1 if record.status.is_terminal else 0,
              ttl_s],
    )
    return bool(written)


def load_rollout(client: redis.Redis, run_id: str, rollout_id: str) -> RolloutRecord | None:
    """One rollout's latest record, or None when it has none yet."""
    raw: Any = client.hget(keys.run_results(run_id), rollout_id)
    return RolloutRecord.model_validate_json(raw) if raw else None


def read_finished(client: redis.Redis, run_id: str, cursor: str = "0-0", count: int = 100,
                  block_ms: int | None = None) -> list[tuple[str, RolloutRecord]]:
    """Rollouts of `run_id` that finished after `cursor` (a `keys.run_finished` entry id; "0-0" =
    from the start), in finishing order, as (entry id, current record); waits up to `block_ms`
    for the first one when given.
    """
    reply: Any = client.xread({keys.run_finished(run_id): cursor}, count=count, block=block_ms)
    if not reply:
        return []
    entries = reply[0][1]
    ids = [fields[b"rollout_id"].decode() if b"rollout_id" in fields else fields["rollout_id"]
           for _, fields in entries]
    raw = rt.hmget(client, keys.run_results(run_id), ids)
    out = []
    for (entry_id, _), data in zip(entries, raw, strict=True):
        if data is not None:
            out.append((entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id),
                        RolloutRecord.model_validate_json(data)))
    return out


def load_rollouts(client: redis.Redis, run_id: str) -> dict[str, RolloutRecord]:
    """All rollout records of a run, by rollout id."""
    raw = rt.hgetall(client, keys.run_results(run_id))
    return {rt.text(k): RolloutRecord.model_validate_json(v) for k, v in raw.items()}


def submitted_rollouts(client: redis.Redis, meta: RunMeta) -> int:
    """How many rollouts the run has: those submitted plus those an adaptive run added since."""
    return meta.total_rollouts + rt.get_int(client, keys.run_added(meta.run_id))


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def summarize_run(client: redis.Redis, run_id: str, include_rollouts: bool = False) -> RunSummary | None:
    """Summary of a run; rollouts with no record yet count as `queued`. None if the run is unknown.

    score = sum of rewards / rollouts submitted (minus `EXCLUDED_FROM_SCORE`); success_rate = fraction
    of rewarded rollouts (completed/agent_fail/truncated/parse_error) with reward >= 1;
    rollouts without a reward (infrastructure failures, `unsupported`, `setup_error`, `eval_error`,
    `runner_error`, `cancelled`) are not counted in it, but are `done` (terminal).
    """
    meta = load_run_meta(client, run_id)
    if meta is None:
        return None
    records = load_rollouts(client, run_id)
    counts: Counter[str] = Counter(r.status.value for r in records.values())
    total = submitted_rollouts(client, meta)
    unrecorded = total - len(records)
    if unrecorded > 0:
        counts[RolloutStatus.QUEUED.value] += unrecorded
    terminal = [r for r in records.values() if r.status.is_terminal]
    rewarded = [r for r in terminal if r.reward is not None]
    rewards = [float(r.reward) for r in rewarded if r.reward is not None]
    excluded = sum(counts.get(status.value, 0) for status in EXCLUDED_FROM_SCORE)
    score_n = total - excluded
    return RunSummary(
        run_id=run_id,
        created_at=meta.created_at,
        total=total,
        counts=dict(counts),
        done=len(terminal),
        score=sum(rewards) / score_n if score_n else None,
        total_reward=sum(rewards),
        score_n=score_n,
        infra_failures=sum(1 for r in terminal if r.status.is_infra_failure),
        success_rate=_mean([1.0 if r >= 1.0 else 0.0 for r in rewards]),
        mean_reward=_mean(rewards),
        mean_duration_ms=_mean([r.duration_ms for r in terminal if r.duration_ms is not None]),
        mean_model_ms=_mean([r.model_ms for r in terminal]),
        mean_env_ms=_mean([r.env_ms for r in terminal]),
        cancelled=meta.cancelled or bool(client.exists(keys.run_cancelled(run_id))),
        finished=len(terminal) >= total and (meta.adaptive is None or _all_settled(client, meta)),
        rollouts=sorted(records.values(), key=lambda r: (r.task_id, r.rollout_index))
        if include_rollouts
        else [],
    )


def run_is_finished(client: redis.Redis, run_id: str) -> bool | None:
    """Whether every rollout of the run is terminal (and, for an adaptive run, every task settled),
    from counters only: O(1) in the run's size, unlike `summarize_run`. None when the run is unknown."""
    meta = load_run_meta(client, run_id)
    if meta is None:
        return None
    total = submitted_rollouts(client, meta)
    done = rt.scard(client, keys.run_terminal(run_id))
    return done >= total and (meta.adaptive is None or _all_settled(client, meta))


def _all_settled(client: redis.Redis, meta: RunMeta) -> bool:
    """An adaptive run ends only once every task is settled (no more rollouts will be added)."""
    return rt.scard(client, keys.run_settled(meta.run_id)) >= len(meta.task_ids)


def list_run_ids(client: redis.Redis, limit: int = 100) -> list[str]:
    """Newest run ids first."""
    ids = cast("list[rt.RedisValue]", client.zrevrange(keys.RUNS_INDEX, 0, limit - 1))
    return [rt.text(i) for i in ids]


def is_cancelled(client: redis.Redis, run_id: str) -> bool:
    """True once `DELETE /v1/runs/{run_id}` has cancelled the run."""
    return bool(client.exists(keys.run_cancelled(run_id)))

