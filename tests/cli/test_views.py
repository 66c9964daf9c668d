"""CLI renderings: expectation matching and the per-task / per-domain tables (pure functions, no services)."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from services.cli.main import mismatches
from services.cli.views import domain_table, matches_expectation, rollout_table


def _rollout(task: str, domain: str, status: str, reward: float | None, index: int = 0) -> dict[str, Any]:
    return {"rollout_id": f"run-x:{task}:{index}", "task_id": task, "domain": domain, "rollout_index": index,
            "status": status, "reward": reward, "num_steps": 3, "error": None}


def _render(table: Any) -> str:
    console = Console(width=200, record=True)
    console.print(table)
    return console.export_text()


def test_matches_expectation_checks_status_and_reward() -> None:
    assert matches_expectation(_rollout("a", "os", "completed", 1.0), {"status": "completed", "reward": 1.0})
    assert not matches_expectation(_rollout("a", "os", "completed", 0.0), {"status": "completed", "reward": 1.0})
    assert not matches_expectation(_rollout("a", "os", "agent_fail", 1.0), {"status": "completed", "reward": 1.0})
    # An expectation without a reward means the rollout must not have one (e.g. env_init_failed).
    assert matches_expectation(_rollout("a", "os", "env_init_failed", None), {"status": "env_init_failed"})
    assert not matches_expectation(_rollout("a", "os", "env_init_failed", 0.0), {"status": "env_init_failed"})


def test_mismatches_name_the_rollout_and_the_expectation() -> None:
    run = {"run_id": "run-x", "rollouts": [_rollout("a", "os", "completed", 1.0),
                                           _rollout("b", "os", "completed", 0.0)]}
    problems = mismatches(run, {"a": {"status": "completed", "reward": 1.0},
                                "b": {"status": "completed", "reward": 1.0}})
    assert len(problems) == 1 and problems[0].startswith("run-x:b:0: got completed/0.0, expected completed/1.0")


def test_tables_show_full_task_ids_and_success_rate_per_domain() -> None:
    run = {"run_id": "run-x", "rollouts": [
        _rollout("files-a-rather-long-task-name", "files", "completed", 1.0),
        _rollout("os-b", "os", "completed", 0.0), _rollout("os-b", "os", "completed", 1.0, index=1),
        _rollout("os-c", "os", "running", None)]}
    text = _render(rollout_table(run, {"os-b": {"status": "completed", "reward": 1.0}}))
    assert "files-a-rather-long-task-name" in text
    assert "no: completed / 1.00" in text and "yes" in text
    domains = _render(domain_table(run))
    rows = {line.split("│")[1].strip(): line for line in domains.splitlines() if line.count("│") >= 4}
    assert "100.0%" in rows["files"] and "50.0%" in rows["os"] and "66.7%" in rows["all"]


def test_domain_table_shows_the_score_first_with_zeros_and_left_out_rollouts_by_status() -> None:
    run = {"run_id": "run-x", "rollouts": [
        _rollout("os-a", "os", "completed", 1.0), _rollout("os-b", "os", "unsupported", None),
        _rollout("os-b", "os", "unsupported", None, index=1), _rollout("files-c", "files", "runner_error", None),
        _rollout("files-d", "files", "running", None), _rollout("files-e", "files", "env_error", None)]}
    table = _render(domain_table(run))
    rows = {line.split("│")[1].strip(): line for line in table.splitlines() if line.count("│") >= 5}
    # os: unsupported is left out of the score's denominator; the one rollout scored 1
    assert "100.0% (1/1)" in rows["os"] and "2 unsupported" in rows["os"]
    # files: the runner_error and the env_error count 0 (listed), the running one is pending in n
    assert "0.0% (0/3)" in rows["files"] and "1 env_error, 1 runner_error" in rows["files"]
    assert "running" not in rows["files"]
    # all: 1 reward over 4 counted rollouts; the rate over rewarded rollouts is labelled with its n
    assert "25.0% (1/4)" in rows["all"] and "100.0% of 1" in rows["all"]
    assert table.index("score") < table.index("success of rewarded")


def test_score_line_puts_infrastructure_failures_beside_the_score() -> None:
    from services.cli.ops_views import score_line

    run = {"run_id": "r", "total": 6, "score": 1 / 6, "total_reward": 1.0, "score_n": 6, "infra_failures": 5,
           "success_rate": 1.0, "rollouts": [_rollout("a", "os", "completed", 1.0)] + [
               _rollout(f"b{i}", "os", "env_error", None) for i in range(5)]}
    line = score_line(run)
    assert line == "score 16.7% (1/6)  infra failures 5  success 100% of 1 rewarded"


def test_stats_shows_where_the_env_time_went() -> None:
    from common.stats import EnvUtilisation, RunStats, benchmark_score, rate
    from services.cli.results_views import utilisation_table

    usage = EnvUtilisation(env_seconds=200.0, shares={"in_step": 0.9, "startup": 0.04, "reset": 0.05,
                                                       "evaluation": 0.01})
    stats = RunStats(run_id="r", score=benchmark_score([]), overall=rate(0, 0), domains={}, pass_at_k={},
                     infra_failures=0, unrewarded={},
                     latency_ms={}, cost_per_success={"env_seconds": None, "model_seconds": None, "tokens": None},
                     env_utilisation=usage)
    rows = {line.split("│")[1].strip(): line for line in _render(utilisation_table(stats)).splitlines()
            if line.count("│") >= 3}
    assert "90.0%" in rows["in steps"] and "180.0" in rows["in steps"]
    assert "5.0%" in rows["reset"] and "10.0" in rows["reset"]
    assert "4.0%" in rows["start-up"] and "1.0%" in rows["evaluation"]
