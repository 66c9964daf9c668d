"""What the run page draws, from one read of a run's records: its summary and statistics (`common.stats`:
benchmark score, success with Wilson 95 % intervals, pass@k), the curve of completed rollouts and of the
success rate with its Wilson 95 % interval over time, and each task's group of rollouts (the GRPO view:
every rollout of a task side by side with its reward and step count)."""

from __future__ import annotations

import redis
from pydantic import BaseModel

from common.runstate import RolloutRecord, RunSummary, summarize_run
from common.stats import RunStats, is_success, run_stats, wilson_interval

#: Most points of a run's curves (evenly spaced over its finished rollouts, the last one always kept).
CURVE_POINTS = 150
#: Most rollouts listed in a run's detail (failures first); the statistics count them all.
ROLLOUTS_SHOWN = 500


class RunCurve(BaseModel):
    """Over the run's time (`t`: epoch seconds of rollouts finishing): rollouts finished so far
    (`completed`), and the success rate over the rewarded ones so far (`rate`, None before the first)
    with its Wilson 95 % interval [`low`, `high`]."""

    t: list[float] = []
    completed: list[int] = []
    rate: list[float | None] = []
    low: list[float | None] = []
    high: list[float | None] = []


class GroupRollout(BaseModel):
    """One rollout of a task's group: index, status, reward (None: none), steps, trajectory, duration (ms)."""

    rollout_index: int
    status: str
    reward: float | None
    num_steps: int
    trajectory: str | None
    duration_ms: float | None


class RunDetail(BaseModel):
    """A run's page: summary (without its records), statistics, curve, groups by task (index order) and its
    rollouts, failures first (at most `ROLLOUTS_SHOWN`; `rollouts_total` says how many there are)."""

    summary: RunSummary
    stats: RunStats
    curve: RunCurve
    groups: dict[str, list[GroupRollout]]
    rollouts: list[RolloutRecord]
    rollouts_total: int


def run_curve(records: list[RolloutRecord]) -> RunCurve:
    """The curve of `records` (see `RunCurve`): terminal records ordered by `ended_at` (those without one
    are left out), at most `CURVE_POINTS` points."""
    ended = sorted((r for r in records if r.status.is_terminal and r.ended_at is not None),
                   key=lambda r: float(r.ended_at or 0.0))
    if not ended:
        return RunCurve()
    step = max(1, -(-len(ended) // CURVE_POINTS))  # ceil: at most CURVE_POINTS points, plus the last
    keep = set(range(step - 1, len(ended), step)) | {len(ended) - 1}
    curve = RunCurve()
    successes = rewarded = 0
    for index, record in enumerate(ended):
        if record.reward is not None:
            rewarded += 1
            successes += is_success(record)
        if index not in keep:
            continue
        interval = wilson_interval(successes, rewarded)
        curve.t.append(float(record.ended_at or 0.0))
        curve.completed.append(index + 1)
        curve.rate.append(successes / rewarded if rewarded else None)
        curve.low.append(interval[0] if interval else None)
        curve.high.append(interval[1] if interval else None)
    return curve


def groups_of(records: list[RolloutRecord]) -> dict[str, list[GroupRollout]]:
    """Task id -> its rollouts in index order (the GRPO group of the task in this run)."""
    groups: dict[str, list[GroupRollout]] = {}
    for record in sorted(records, key=lambda r: (r.task_id, r.rollout_index)):
        groups.setdefault(record.task_id, []).append(GroupRollout(
            rollout_index=record.rollout_index, status=record.status.value, reward=record.reward,
            num_steps=record.num_steps, trajectory=record.trajectory, duration_ms=record.duration_ms))
    return groups


def run_detail(client: redis.Redis, run_id: str) -> RunDetail | None:
    """The detail of run `run_id` (one `summarize_run`: its meta and records), None when it is unknown."""
    summary = summarize_run(client, run_id, include_rollouts=True)
    if summary is None:
        return None
    records = summary.rollouts
    failures_first = sorted(records, key=lambda r: (r.reward is not None and r.reward >= 1.0,
                                                    r.status.is_terminal, r.task_id, r.rollout_index))
    return RunDetail(summary=summary.model_copy(update={"rollouts": []}),
                     stats=run_stats(run_id, records, summary.total), curve=run_curve(records),
                     groups=groups_of(records), rollouts=failures_first[:ROLLOUTS_SHOWN],
                     rollouts_total=len(records))
