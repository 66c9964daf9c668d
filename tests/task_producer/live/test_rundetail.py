"""The run page's curves and groups, from rollout records written as the runner writes them."""

from __future__ import annotations

import redis

from common.runstate import RolloutRecord, RunMeta, record_rollout, save_run_meta
from common.stats import wilson_interval
from common.status import RolloutStatus
from services.task_producer.live.rundetail import CURVE_POINTS, run_curve, run_detail


def _record(index: int, reward: float | None, ended_at: float | None, task: str = "t",
            status: RolloutStatus = RolloutStatus.COMPLETED) -> RolloutRecord:
    return RolloutRecord(rollout_id=f"run:{task}:{index}", run_id="run", task_id=task, rollout_index=index,
                         status=status, reward=reward, ended_at=ended_at, num_steps=index + 1,
                         trajectory=f"run/{task}_{index}")


def test_curve_counts_finished_rollouts_and_the_success_rate_with_its_wilson_interval() -> None:
    records = [_record(2, 0.0, 30.0), _record(0, 1.0, 10.0), _record(1, None, 20.0, status=RolloutStatus.ENV_ERROR),
               _record(3, None, None, status=RolloutStatus.RUNNING)]
    curve = run_curve(records)
    assert curve.t == [10.0, 20.0, 30.0] and curve.completed == [1, 2, 3]
    assert curve.rate == [1.0, 1.0, 0.5]  # the env error has no reward: not in the rate
    assert (curve.low[-1], curve.high[-1]) == wilson_interval(1, 2)


def test_curve_of_a_big_run_is_thinned_but_ends_at_its_last_rollout() -> None:
    records = [_record(i, float(i % 2), float(i)) for i in range(1000)]
    curve = run_curve(records)
    assert len(curve.t) <= CURVE_POINTS + 1 and curve.completed[-1] == 1000 and curve.rate[-1] == 0.5


def test_detail_groups_each_tasks_rollouts_and_lists_failures_first(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    save_run_meta(client, RunMeta(run_id="run", created_at=1.0, total_rollouts=4, queue="cua-default",
                                  priority="default", rollouts_per_task=2, max_steps=5, model="m",
                                  task_ids=["a", "b"]))
    for record in (_record(0, 1.0, 5.0, "a"), _record(1, 0.0, 6.0, "a"), _record(0, 1.0, 7.0, "b")):
        record_rollout(client, record)
    detail = run_detail(client, "run")
    assert detail is not None and run_detail(client, "nope") is None
    assert [(g.rollout_index, g.reward, g.num_steps) for g in detail.groups["a"]] == [(0, 1.0, 1), (1, 0.0, 2)]
    assert detail.rollouts[0].reward == 0.0 and detail.rollouts_total == 3
    assert detail.summary.total == 4 and detail.summary.rollouts == [] and not detail.summary.finished
    assert detail.stats.overall.successes == 2 and detail.curve.completed == [1, 2, 3]
