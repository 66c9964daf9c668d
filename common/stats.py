"""Evaluation statistics of a run: the benchmark score, success rates with Wilson intervals, unbiased
pass@k, latency breakdown and cost per success (what `GET /v1/runs/{id}/stats` and `cua-rollout stats` show).

The benchmark score comes first: the sum of rewards over every rollout submitted, as OSWorld's leaderboard
counts ("209.55/361"): a rollout that ended without a reward (an infrastructure failure that exhausted its
retries, `setup_error`, `eval_error`, `runner_error`, an older run's unrewarded `parse_error`) counts 0 and is
listed by status; only rollouts that never ran by decision (`unsupported`, `quarantined`, `cancelled`) are
left out of the denominator, and listed. Then the success rate over rewarded rollouts (labelled as such):
success means reward >= 1 (OSWorld's convention: a task is solved when its metric returns 1.0), and only
rollouts with a reward count towards it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, Field

from common.envtime import ENV_STATES, env_split
from common.runstate import RolloutRecord
from common.status import EXCLUDED_FROM_SCORE

#: Latency components of a rollout, in ms: keys of `RolloutRecord.timings` (runner's episode timings).
LATENCY_PARTS = ("model_ms", "env_ms", "setup_ms", "eval_ms", "overhead_ms")


class Rate(BaseModel):
    """`successes` of `n` rewarded rollouts; `rate` in [0, 1] (None when n = 0) with its Wilson
    score 95 % interval [`low`, `high`] (Wilson 1927; scipy's `binomtest(...).proportion_ci`)."""

    successes: int
    n: int
    rate: float | None
    low: float | None
    high: float | None


class BenchmarkScore(BaseModel):
    """Sum of rewards over the rollouts submitted (`total_reward` / `n`, `score` in [0, 1], None when n = 0).

    `zero`: status -> rollouts counted 0 because they ended without a reward (infrastructure failures
    that exhausted their retries, deterministic failures); `excluded`: status -> rollouts left out of `n`
    (`common.status.EXCLUDED_FROM_SCORE`); `pending`: rollouts in `n` still queued or running (the score
    is then a lower bound)."""

    total_reward: float
    n: int
    score: float | None
    zero: dict[str, int] = Field(default_factory=dict)
    excluded: dict[str, int] = Field(default_factory=dict)
    pending: int = 0


def benchmark_score(records: Iterable[RolloutRecord], submitted: int | None = None) -> BenchmarkScore:
    """The benchmark score of `records` (see `BenchmarkScore`). `submitted`: how many rollouts the run has
    (records not written yet are queued: pending, in `n`); None: just the records given."""
    total_reward, n, pending = 0.0, 0, 0
    zero: dict[str, int] = defaultdict(int)
    excluded: dict[str, int] = defaultdict(int)
    seen = 0
    for record in records:
        seen += 1
        if record.status in EXCLUDED_FROM_SCORE:
            excluded[record.status.value] += 1
            continue
        n += 1
        if not record.status.is_terminal:
            pending += 1
        elif record.reward is None:
            zero[record.status.value] += 1
        else:
            total_reward += float(record.reward)
    unrecorded = max(0, (submitted or 0) - seen)
    n, pending = n + unrecorded, pending + unrecorded
    return BenchmarkScore(total_reward=total_reward, n=n, score=total_reward / n if n else None,
                          zero=dict(sorted(zero.items())), excluded=dict(sorted(excluded.items())), pending=pending)


class Percentiles(BaseModel):
    """p50 / p95 of a latency component over the run's finished rollouts, in ms (None: no data)."""

    p50: float | None
    p95: float | None


class Cost(BaseModel):
    """Resources spent per success: env-seconds (wall time an env was held), model-seconds (time
    waiting on the model) and model tokens (prompt + completion). None when there is no success."""

    env_seconds: float | None
    model_seconds: float | None
    tokens: float | None


class EnvUtilisation(BaseModel):
    """Where the run's env time went: `env_seconds` held by its finished attempts (lease acquired ->
    freed, summed over rollouts that leased an env and recorded it), and `shares` of that time by what
    the env did (`common.envtime.ENV_STATES`: `in_step`, `startup`, `reset`, `evaluation`; each in
    [0, 1], summing to 1; empty when no rollout recorded it). Idle time between rollouts is not in it:
    a run does not own its envs."""

    env_seconds: float
    shares: dict[str, float]


class RunStats(BaseModel):
    """Statistics of one run (see module docstring for the score and what counts as success)."""

    run_id: str
    score: BenchmarkScore
    domain_scores: dict[str, BenchmarkScore] = Field(default_factory=dict)
    overall: Rate
    domains: dict[str, Rate]
    pass_at_k: dict[int, float] = Field(description="k -> mean unbiased pass@k over tasks with >= k rewarded rollouts")
    infra_failures: int
    unrewarded: dict[str, int] = Field(description="status -> rollouts that ended without a reward")
    latency_ms: dict[str, Percentiles]
    cost_per_success: Cost
    env_utilisation: EnvUtilisation = Field(default_factory=lambda: EnvUtilisation(env_seconds=0.0, shares={}))


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float] | None:
    """Wilson score interval of a binomial proportion `successes / n`; None when n = 0.

    Raises: ValueError when successes is outside [0, n].
    """
    if n == 0:
        return None
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be in [0, {n}], got {successes}")
    from scipy.stats import binomtest  # ~0.5 s to import: not at the start of every CLI command

    ci = binomtest(successes, n).proportion_ci(confidence_level=confidence, method="wilson")
    return float(ci.low), float(ci.high)


def rate(successes: int, n: int) -> Rate:
    """A `Rate` with its Wilson 95 % interval."""
    interval = wilson_interval(successes, n)
    return Rate(successes=successes, n=n, rate=successes / n if n else None,
                low=interval[0] if interval else None, high=interval[1] if interval else None)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one task with `c` successes among `n` samples: 1 - C(n-c, k) / C(n, k)
    (Chen et al. 2021, "Evaluating Large Language Models Trained on Code", eq. 1, in its numerically
    stable product form).

    Raises: ValueError unless 0 <= c <= n and 1 <= k <= n.
    """
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, got n={n} c={c} k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def mean_pass_at_k(per_task: Iterable[tuple[int, int]]) -> dict[int, float]:
    """k -> mean pass@k over the tasks given as (n, c); each k up to the largest n, averaged over
    the tasks with n >= k."""
    tasks = [(n, c) for n, c in per_task if n > 0]
    out: dict[int, float] = {}
    for k in range(1, max((n for n, _ in tasks), default=0) + 1):
        values = [pass_at_k(n, c, k) for n, c in tasks if n >= k]
        out[k] = sum(values) / len(values)
    return out


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100) by linear interpolation between closest ranks (numpy's default)."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _latency_parts(record: RolloutRecord) -> dict[str, float]:
    timings = dict(record.timings)
    timings.setdefault("model_ms", record.model_ms)
    timings.setdefault("env_ms", record.env_ms)
    known = sum(timings.get(part, 0.0) for part in LATENCY_PARTS if part != "overhead_ms")
    if record.duration_ms is not None:
        timings["overhead_ms"] = max(0.0, record.duration_ms - known)
    return timings


def is_success(record: RolloutRecord) -> bool:
    """Rewarded and reward >= 1."""
    return record.reward is not None and record.reward >= 1.0


def run_stats(run_id: str, records: Iterable[RolloutRecord], submitted: int | None = None) -> RunStats:
    """Statistics of a run's `records`: the benchmark score over every rollout (`submitted`: the run's
    rollout count, for the ones without a record yet), the rest over the terminal ones."""
    records = list(records)
    finished = [r for r in records if r.status.is_terminal]
    all_by_domain: dict[str, list[RolloutRecord]] = defaultdict(list)
    for record in records:
        all_by_domain[record.domain].append(record)
    rewarded = [r for r in finished if r.reward is not None]
    by_domain: dict[str, list[RolloutRecord]] = defaultdict(list)
    by_task: dict[str, list[RolloutRecord]] = defaultdict(list)
    for record in rewarded:
        by_domain[record.domain].append(record)
        by_task[record.task_id].append(record)
    unrewarded: dict[str, int] = defaultdict(int)
    for record in finished:
        if record.reward is None:
            unrewarded[record.status.value] += 1
    parts = [_latency_parts(r) for r in finished]
    successes = sum(1 for r in rewarded if is_success(r))
    tokens = [r.prompt_tokens + r.completion_tokens for r in finished]
    return RunStats(
        run_id=run_id,
        score=benchmark_score(records, submitted),
        domain_scores={d: benchmark_score(rs) for d, rs in sorted(all_by_domain.items())},
        overall=rate(successes, len(rewarded)),
        domains={d: rate(sum(1 for r in rs if is_success(r)), len(rs)) for d, rs in sorted(by_domain.items())},
        pass_at_k=mean_pass_at_k((len(rs), sum(1 for r in rs if is_success(r))) for rs in by_task.values()),
        infra_failures=sum(1 for r in finished if r.status.is_infra_failure),
        unrewarded=dict(sorted(unrewarded.items())),
        latency_ms=_latency_table(finished, parts),
        cost_per_success=Cost(
            env_seconds=sum(r.duration_ms or 0.0 for r in finished) / 1000.0 / successes if successes else None,
            model_seconds=sum(r.model_ms for r in finished) / 1000.0 / successes if successes else None,
            tokens=sum(tokens) / successes if successes else None,
        ),
        env_utilisation=env_utilisation(finished),
    )


def env_utilisation(records: Iterable[RolloutRecord]) -> EnvUtilisation:
    """The env time of `records` split by what the env did (see `EnvUtilisation`), from each record's
    timings (`held_ms`, `steps_ms`, `reset_ms`, `release_ms`, `eval_ms`)."""
    sums = dict.fromkeys(ENV_STATES, 0.0)
    for record in records:
        for state, ms in env_split(record.timings).items():
            sums[state] += ms
    total = sum(sums.values())
    return EnvUtilisation(env_seconds=total / 1000.0,
                          shares={state: ms / total for state, ms in sums.items()} if total else {})


def _latency_table(finished: list[RolloutRecord], parts: list[dict[str, float]]) -> dict[str, Percentiles]:
    columns = {"total_ms": [r.duration_ms for r in finished if r.duration_ms is not None]}
    columns.update({part: [p[part] for p in parts if part in p] for part in LATENCY_PARTS})
    return {name: Percentiles(p50=percentile(values, 50), p95=percentile(values, 95))
            for name, values in columns.items()}
