"""`cua-rollout export`, `diff` and `rescore`: results for trainers and evaluators."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, cast

import typer

from common.objectstore import open_store
from common.settings import ObjectStoreSettings
from cua_rollout.client import RolloutClient, RolloutClientError
from services.cli.api_client import auth_token
from services.cli.app import DEFAULT_PRODUCER, JsonOption, ProducerOption, app, console, fail, usage_errors
from services.cli.export import LEVELS, Format, Level, iter_records, write_export
from services.cli.results_views import diff_table, flaky_table


def _client(producer: str) -> RolloutClient:
    return RolloutClient(producer, token=auth_token())


@app.command()
def export(
    run_id: str,
    fmt: Annotated[str, typer.Option("--format", help="jsonl or parquet")] = "jsonl",
    level: Annotated[str, typer.Option(
        help="one record per `step`, per `trajectory`, or per `session` (multi-turn token sequence with its "
             "loss mask: prompt_ids, response_ids, response_mask, rollout_log_probs)")] = "step",
    out: Annotated[Path | None, typer.Option(help="output file (default: <run_id>.<level>.<format>)")] = None,
    producer: ProducerOption = DEFAULT_PRODUCER,
) -> None:
    """Export a run's trajectories for training: GRPO group ids, rewards, statuses, policy versions,
    token ids, logprobs and screenshot references, as JSON Lines or Parquet. The run of gateway sessions
    opened without one (`GATEWAY_SESSION_RUN_ID`, default `sessions`) exports too: it has trajectories but no
    run record."""
    if fmt not in ("jsonl", "parquet"):
        fail(f"--format must be jsonl or parquet, got {fmt!r}")
    levels = {name: name for name in LEVELS}
    if level not in levels:
        fail(f"--level must be one of {', '.join(LEVELS)}, got {level!r}")
    path = out or Path(f"{run_id}.{level}.{fmt}")
    with usage_errors(), _client(producer) as client:
        level_ = cast(Level, levels[level])
        format_: Format = "jsonl" if fmt == "jsonl" else "parquet"
        try:
            client.run(run_id)  # an unknown run is an error (404), not an empty export
        except RolloutClientError:
            if not client.trajectories(run_id):  # sessions' runs have trajectories but no run record
                raise
        count = write_export(iter_records(client, run_id, level_), path, format_)
    console.print(f"exported {count} {level} records of run {run_id} to {path}")


@app.command()
def diff(
    run_a: str,
    run_b: str,
    as_json: JsonOption = False,
    producer: ProducerOption = DEFAULT_PRODUCER,
) -> None:
    """Compare two runs: per task fixed / broken / unchanged, per domain with Fisher's exact test."""
    with usage_errors(), _client(producer) as client:
        result = client.diff(run_a, run_b)
    if as_json:
        print(result.model_dump_json(indent=2))
        return
    console.print(diff_table(result))
    counts = ", ".join(f"{n} {change}" for change, n in result.counts.items() if n)
    console.print(f"tasks: {counts or 'none'}")
    for task in result.tasks:
        if task.change in ("fixed", "broken"):
            console.print(f"  {task.change:7} {task.task_id} ({task.domain}): "
                          f"{task.a_successes}/{task.a_n} -> {task.b_successes}/{task.b_n}")


@app.command()
def rescore(
    run_id: str,
    store_url: Annotated[str | None, typer.Option(help="object store (default: $STORE_URL; S3 settings "
                                                       "from S3_ENDPOINT, S3_ACCESS_KEY, ...)")] = None,
    as_json: JsonOption = False,
) -> None:
    """Score a run's stored trajectories again with the current metrics, from what each evaluation
    read (no episode re-runs); writes score_v<N>.json beside each reward and lists what changed."""
    from services.runner.osworld.rescore import rescore_run  # the OSWorld evaluation layer: only for rescore

    settings = ObjectStoreSettings(store_url=store_url) if store_url else ObjectStoreSettings()
    with usage_errors():
        results = rescore_run(open_store(settings), run_id)
    if not results:
        fail(f"run {run_id!r} has no stored trajectory with evaluation inputs in {settings.store_url}")
    if as_json:
        print(json.dumps([{**r.model_dump(), "changed": r.changed} for r in results], indent=2))
        return
    for result in results:
        if result.changed:
            new = result.error or result.reward
            console.print(f"  changed {result.trajectory}: {result.previous_reward} -> {new}")
    changed = sum(1 for r in results if r.changed)
    console.print(f"rescored {len(results)} trajectories of run {run_id} (score version "
                  f"{max(r.version for r in results)}): {changed} changed")


@app.command()
def flaky(
    runs: Annotated[int, typer.Option(min=1, help="newest runs to look at")] = 50,
    as_json: JsonOption = False,
    producer: ProducerOption = DEFAULT_PRODUCER,
) -> None:
    """Tasks whose outcome varies under one policy version across runs, or that often end in
    infrastructure failures, with their rates."""
    with usage_errors(), _client(producer) as client:
        report = client.flaky(runs)
    if as_json:
        print(report.model_dump_json(indent=2))
        return
    console.print(flaky_table(report))


@app.command()
def quarantine(
    task_ids: Annotated[list[str] | None, typer.Argument(help="tasks to put on (or take off) the list")] = None,
    remove: Annotated[bool, typer.Option("--remove", help="take the tasks off the list")] = False,
    as_json: JsonOption = False,
    producer: ProducerOption = DEFAULT_PRODUCER,
) -> None:
    """Show the quarantine list, or put tasks on it (runs submitted later record them as
    `quarantined` instead of running them) or take them off with `--remove`."""
    with usage_errors(), _client(producer) as client:
        listed = client.quarantine(task_ids or [], remove=remove)
    if as_json:
        print(json.dumps(listed))
        return
    console.print("quarantined: " + (", ".join(listed) or "none"))
