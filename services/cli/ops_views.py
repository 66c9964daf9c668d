"""Rich renderings of the producer's list views (`runs`, `envs`, `queues`, `trajectory`) and the
failure summary behind `--fail-on-error` (pure functions over the API's JSON)."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from rich.table import Table

#: Statuses still in flight; every other status is terminal.
IN_FLIGHT = ("queued", "running")


def failed_rollouts(run: dict[str, Any]) -> list[dict[str, Any]]:
    """Terminal rollouts of `GET /v1/runs/{id}` that did not succeed: no reward (an error status,
    `unsupported`, `cancelled`) or a reward below 1 (the success rate's threshold, see `views`)."""
    return [r for r in run.get("rollouts", [])
            if r["status"] not in IN_FLIGHT and (r.get("reward") is None or float(r["reward"]) < 1)]


def failure_summary(run: dict[str, Any]) -> str:
    """`3 of 38 rollouts did not succeed: 2 completed/reward 0, 1 env_error` (empty when none failed)."""
    failed = failed_rollouts(run)
    if not failed:
        return ""
    kinds = Counter(r["status"] if r.get("reward") is None else f"{r['status']}/reward {float(r['reward']):g}"
                    for r in failed)
    parts = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
    return f"run {run['run_id']}: {len(failed)} of {run['total']} rollouts did not succeed: {parts}"


def score_line(run: dict[str, Any]) -> str:
    """`score 16.7% (1/6)  infra failures 5  success 100% of 1 rewarded`: the benchmark score first, the
    infrastructure failures that exhausted their retries (counted 0 in it) beside it, then the success
    rate over rewarded rollouts, labelled so that it never reads as the run's result."""
    score = run.get("score")
    rate = run.get("success_rate")
    rewarded = sum(1 for r in run.get("rollouts", []) if r.get("reward") is not None)
    rewarded_text = f" of {rewarded} rewarded" if run.get("rollouts") else " of rewarded"
    return (f"score {'-' if score is None else f'{float(score):.1%}'} "
            f"({float(run.get('total_reward', 0.0)):g}/{run.get('score_n', run.get('total', 0))})  "
            f"infra failures {run.get('infra_failures', 0)}  "
            f"success {'-' if rate is None else f'{float(rate):.0%}'}{rewarded_text}")


def _ago(timestamp: float | None) -> str:
    if timestamp is None:
        return "-"
    seconds = max(0.0, time.time() - float(timestamp))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f}{unit} ago"
    return f"{seconds:.0f}s ago"


def runs_table(runs: list[dict[str, Any]]) -> Table:
    """`GET /v1/runs`: one row per run (newest first): id, age, done/total, queued, running, benchmark score,
    infrastructure failures, success over rewarded rollouts, state."""
    table = Table(title=f"runs ({len(runs)})")
    for column in ("run", "created", "done", "queued", "running", "score", "infra failures", "success of rewarded",
                   "state"):
        table.add_column(column, no_wrap=True, justify="left" if column in ("run", "state") else "right")
    for run in runs:
        counts = run.get("counts", {})
        rate = run.get("success_rate")
        state = "cancelled" if run.get("cancelled") else ("finished" if run.get("finished") else "in progress")
        score = run.get("score")
        table.add_row(run["run_id"], _ago(run.get("created_at")), f"{run['done']}/{run['total']}",
                      str(counts.get("queued", 0)), str(counts.get("running", 0)),
                      "-" if score is None else f"{float(score):.1%}", str(run.get("infra_failures", 0)),
                      "-" if rate is None else f"{float(rate):.0%}", state)
    return table


def envs_table(pool: dict[str, Any]) -> Table:
    """`GET /v1/envs`: one row per registered env (id, URL, provider, state, lease holder); counts in the title."""
    table = Table(title=f"envs: {pool['total']} total, {pool['idle']} idle, {pool['leased']} leased, "
                        f"{pool['unhealthy']} unhealthy")
    for column in ("env", "url", "provider", "state", "leased by"):
        table.add_column(column, no_wrap=True)
    for env in pool.get("envs", []):
        table.add_row(env["env_id"], env["url"], env["provider"], env["state"], env.get("leased_by") or "-")
    return table


def queues_table(queues: list[dict[str, Any]]) -> Table:
    """`GET /v1/queues`: one row per RQ queue: depth, started, failed, deferred, scheduled, finished, workers."""
    columns = ("depth", "started", "failed", "deferred", "scheduled", "finished", "workers")
    table = Table(title="queues")
    table.add_column("queue", no_wrap=True)
    table.add_column("priority", no_wrap=True)
    for column in columns:
        table.add_column(column, justify="right", no_wrap=True)
    for queue in queues:
        table.add_row(queue["queue"], queue["priority"], *(str(queue.get(c, 0)) for c in columns))
    return table


def trajectory_table(trajectory: dict[str, Any]) -> Table:
    """`GET /v1/trajectories/{run}/{name}`: the manifest's status, reward, steps, env, error, and the files."""
    manifest = trajectory.get("manifest") or {}
    table = Table(title=f"trajectory {trajectory['trajectory']}", show_header=False)
    table.add_column("field", no_wrap=True)
    table.add_column("value")
    reward = manifest.get("reward")
    rows = [("status", manifest.get("status", "- (no manifest yet)")),
            ("reward", "-" if reward is None else f"{float(reward):.2f}"),
            ("steps", str(manifest.get("num_steps", "-"))),
            ("env", str((manifest.get("env") or {}).get("id") or "-")),
            ("error", manifest.get("error") or "-"),
            ("files", f"{len(trajectory.get('files', []))}: " + ", ".join(trajectory.get("files", [])))]
    for field, value in rows:
        table.add_row(field, str(value))
    return table
