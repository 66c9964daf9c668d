"""Run statistics and run diffs: pass@k, Wilson intervals, latency and cost, fixed/broken tasks."""

from __future__ import annotations

import math

import pytest

from common.rundiff import diff_runs
from common.runstate import RolloutRecord
from common.stats import pass_at_k, percentile, run_stats, wilson_interval
from common.status import RolloutStatus


def _record(task: str, index: int, reward: float | None, status: str = "completed", domain: str = "os",
            **extra: object) -> RolloutRecord:
    return RolloutRecord(rollout_id=f"r__{task}__{index}", run_id="r", task_id=task, rollout_index=index,
                         domain=domain, status=RolloutStatus(status), reward=reward, **extra)


def test_pass_at_k_matches_the_hand_computed_combinatorial_formula() -> None:
    # n=5 samples, c=2 correct: pass@1 = 2/5; pass@2 = 1 - C(3,2)/C(5,2) = 1 - 3/10; pass@4 = 1 (n-c < k)
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4)
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)
    assert pass_at_k(5, 2, 3) == pytest.approx(1 - math.comb(3, 3) / math.comb(5, 3))
    assert pass_at_k(5, 2, 4) == 1.0
    assert pass_at_k(5, 0, 5) == 0.0
    with pytest.raises(ValueError, match="1 <= k <= n"):
        pass_at_k(3, 1, 4)


def test_wilson_interval_matches_the_closed_form() -> None:
    z, n, p = 1.959963984540054, 10, 0.8
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    low, high = wilson_interval(8, 10) or (0.0, 0.0)
    assert (low, high) == (pytest.approx(centre - half), pytest.approx(centre + half))
    assert wilson_interval(0, 0) is None
    with pytest.raises(ValueError, match=r"\[0, 3\]"):
        wilson_interval(4, 3)


def test_run_stats_counts_infrastructure_failures_apart_and_averages_pass_at_k_over_tasks() -> None:
    records = [
        _record("a", 0, 1.0, duration_ms=1000, model_ms=300, env_ms=200, prompt_tokens=90, completion_tokens=10,
                timings={"setup_ms": 100, "eval_ms": 50}),
        _record("a", 1, 0.0, status="agent_fail", duration_ms=3000, model_ms=900, env_ms=600,
                timings={"setup_ms": 100, "eval_ms": 50}),
        _record("b", 0, 1.0, domain="calc", duration_ms=2000, model_ms=500, env_ms=500),
        _record("b", 1, None, status="env_error", domain="calc", duration_ms=500),
        _record("c", 0, None, status="running"),  # not finished: ignored
    ]
    stats = run_stats("r", records)
    assert (stats.overall.successes, stats.overall.n) == (2, 3)
    assert (stats.domains["os"].successes, stats.domains["os"].n, stats.domains["calc"].n) == (1, 2, 1)
    assert stats.infra_failures == 1 and stats.unrewarded == {"env_error": 1}
    assert stats.pass_at_k == {1: pytest.approx((0.5 + 1.0) / 2), 2: pytest.approx(1.0)}  # b has one rewarded
    assert stats.latency_ms["total_ms"].p50 == pytest.approx(1500)
    assert stats.latency_ms["overhead_ms"].p50 is not None
    assert stats.cost_per_success.env_seconds == pytest.approx(6.5 / 2)
    assert stats.cost_per_success.tokens == pytest.approx(100 / 2)
    assert percentile([1.0, 2.0, 3.0, 4.0], 95) == pytest.approx(3.85)


def test_diff_lists_fixed_and_broken_tasks_with_a_fisher_p_value_per_domain() -> None:
    before = [_record("a", 0, 0.0), _record("b", 0, 1.0), _record("c", 0, 1.0), _record("d", 0, 0.0)]
    after = [_record("a", 0, 1.0), _record("b", 0, 0.0), _record("c", 0, 1.0), _record("e", 0, 1.0)]
    result = diff_runs("A", before, "B", after)
    changes = {t.task_id: t.change for t in result.tasks}
    assert changes == {"a": "fixed", "b": "broken", "c": "unchanged", "d": "only_a", "e": "only_b"}
    (os_domain,) = result.domains
    assert (os_domain.a_rate, os_domain.b_rate) == (0.5, 0.75)
    assert os_domain.p_value == pytest.approx(1.0)  # 2/4 vs 3/4 is no evidence of a change
    many_a = [_record(f"t{i}", 0, 0.0) for i in range(20)]
    many_b = [_record(f"t{i}", 0, 1.0) for i in range(20)]
    assert diff_runs("A", many_a, "B", many_b).domains[0].p_value < 1e-9


def test_env_utilisation_splits_the_held_env_time_of_finished_rollouts() -> None:
    timed = {"held_ms": 1000.0, "steps_ms": 600.0, "reset_ms": 100.0, "release_ms": 50.0, "eval_ms": 50.0}
    records = [
        _record("a", 0, 1.0, timings=timed),
        _record("a", 1, 1.0, timings={**timed, "held_ms": 3000.0, "steps_ms": 2600.0}),
        _record("b", 0, None, status="env_init_failed", timings={"lease_wait_ms": 5.0}),  # never held an env
        _record("c", 0, None, status="running", timings=timed),  # not finished: ignored
    ]
    usage = run_stats("r", records).env_utilisation
    assert usage.env_seconds == pytest.approx(4.0)
    assert usage.shares == {"in_step": pytest.approx(3.2 / 4), "startup": pytest.approx(0.4 / 4),
                            "reset": pytest.approx(0.3 / 4), "evaluation": pytest.approx(0.1 / 4)}
    assert run_stats("r", [_record("a", 0, 1.0)]).env_utilisation.shares == {}  # recorded before the timings
