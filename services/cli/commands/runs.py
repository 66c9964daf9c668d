"""Run commands against a producer: submit, watch, stats, runs, cancel.

The producer URL is `--producer`, else `$CUA_PRODUCER`, else http://127.0.0.1:8080. `--json` prints
the API's JSON answer on stdout (progress, if any, goes to stderr).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from common.stats import RunStats
from common.task import InvalidTasks, load_task_set
from services.cli.api_client import ProducerClient
from services.cli.app import (
    DEFAULT_PRODUCER,
    EXIT_FAILURES,
    JsonOption,
    ProducerOption,
    app,
    console,
    err_console,
    usage_errors,
)
from services.cli.ops_views import failure_summary, runs_table
from services.cli.output import print_json, watch_run
from services.cli.results_views import detail_table, score_table, success_table, utilisation_table
from services.cli.views import rollout_table

#: `--fail-on-error`: exit 1 when the finished run has a rollout that did not succeed.
FailOnErrorOption = Annotated[bool, typer.Option(
    "--fail-on-error", help="exit 1 when the run finished with a rollout that did not succeed (reward < 1 or none)")]


def exit_on_failures(run: dict[str, Any], fail_on_error: bool) -> None:
    """With `fail_on_error`, exit 1 (one line on stderr) when the finished run has failed rollouts."""
    summary = failure_summary(run) if run.get("finished") else ""
    if fail_on_error and summary:
        err_console.print(summary, soft_wrap=True, markup=False, highlight=False)
        raise typer.Exit(EXIT_FAILURES)


def parse_options(items: list[str]) -> dict[str, Any]:
    """`["k=v", ...]` -> `{k: v}`, each value read as JSON when it parses (numbers, booleans), else the
    text. Raises: ValueError naming an item without `=`."""
    options: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--agent-option {item!r}: expected KEY=VALUE")
        try:
            options[key] = json.loads(value)
        except ValueError:
            options[key] = value
    return options


@app.command()
def submit(
    path: Annotated[Path, typer.Argument(help="task JSON file, directory, or test_all.json-style index")],
    producer: ProducerOption = DEFAULT_PRODUCER,
    rollouts: Annotated[int, typer.Option(help="rollouts per task")] = 1,
    max_steps: Annotated[int, typer.Option(help="max steps per rollout")] = 15,
    priority: Annotated[str, typer.Option(help="high|default|low")] = "default",
    model: Annotated[str | None, typer.Option(help="model name sent to the policy servers "
                                                   "(vLLM's --served-model-name; default ui-tars-1.5-7b)")] = None,
    run_id: Annotated[str | None, typer.Option(help="explicit run id")] = None,
    agent: Annotated[str | None, typer.Option(help="the agent (`cua-rollout agents`; default ui_tars_1_5)")] = None,
    agent_option: Annotated[list[str] | None, typer.Option(
        "--agent-option", help="an agent option KEY=VALUE (repeatable; VALUE read as JSON when it parses, e.g. "
                               "--agent-option observation_type=som --agent-option max_trajectory_length=5)")] = None,
    skip_invalid: Annotated[bool, typer.Option(help="submit the valid tasks, list the invalid ones")] = False,
    as_json: JsonOption = False,
) -> None:
    """Submit OSWorld tasks as a run; prints the run id (with --json: the API's answer).

    An invalid task stops the submission (each is named with its reason) unless `--skip-invalid`."""
    with usage_errors():
        loaded = load_task_set(path)
        if loaded.invalid and not skip_invalid:
            raise InvalidTasks(path, loaded.invalid)
        for item in loaded.invalid:
            err_console.print(f"[yellow]skipped[/yellow] {item.path}: {item.reason}", soft_wrap=True)
        if not loaded.tasks:
            raise ValueError(f"{path}: no valid task to submit")
        options = parse_options(agent_option) if agent_option else None
        with ProducerClient(producer) as client:
            result = client.submit(loaded.tasks, rollouts_per_task=rollouts, max_steps=max_steps, priority=priority,
                                   run_id=run_id or None, model=model or None, agent=agent or None,
                                   agent_options=options)
    if as_json:
        print_json(result)
        return
    err_console.print(f"run {result['run_id']}: {result['enqueued']} rollouts enqueued")
    print(result["run_id"])


@app.command()
def watch(
    run_id: str,
    producer: ProducerOption = DEFAULT_PRODUCER,
    timeout: Annotated[float, typer.Option(help="give up (exit 2) after this many seconds")] = 3600,
    fail_on_error: FailOnErrorOption = False,
    as_json: JsonOption = False,
) -> None:
    """Progress bar of a run until it finishes: the benchmark score, infrastructure failures beside it,
    then the success rate over rewarded rollouts.

    With --json the bar goes to stderr and the finished run's JSON to stdout."""
    with usage_errors(), ProducerClient(producer) as client:
        run = watch_run(client, run_id, timeout, err_console if as_json else console)
    if as_json:
        print_json(run)
    exit_on_failures(run, fail_on_error)


@app.command()
def stats(
    run_id: str,
    producer: ProducerOption = DEFAULT_PRODUCER,
    fail_on_error: FailOnErrorOption = False,
    as_json: JsonOption = False,
) -> None:
    """Status and reward per rollout; the benchmark score per domain (sum of rewards over every rollout,
    failures counted 0 and listed); success over rewarded rollouts per domain with Wilson 95% intervals, pass@k,
    infrastructure failures, latency p50/p95, cost per success and where the env time went (in steps,
    start-up, reset, evaluation) (`--json`: the run with `stats`)."""
    with usage_errors(), ProducerClient(producer) as client:
        run = client.run(run_id)
        run_stats = client.stats(run_id)
    if as_json:
        print_json({**run, "stats": run_stats})
    else:
        stats_model = RunStats.model_validate(run_stats)
        console.print(rollout_table(run))
        console.print(score_table(stats_model))
        console.print(success_table(stats_model))
        console.print(detail_table(stats_model))
        console.print(utilisation_table(stats_model))
    exit_on_failures(run, fail_on_error)


@app.command()
def runs(
    producer: ProducerOption = DEFAULT_PRODUCER,
    limit: Annotated[int, typer.Option(min=1, help="at most this many runs, newest first")] = 50,
    as_json: JsonOption = False,
) -> None:
    """The newest runs with their progress and success rate."""
    with usage_errors(), ProducerClient(producer) as client:
        result = client.runs(limit)
    if as_json:
        print_json(result)
    else:
        console.print(runs_table(result["runs"]))


@app.command()
def cancel(
    run_id: str,
    producer: ProducerOption = DEFAULT_PRODUCER,
    as_json: JsonOption = False,
) -> None:
    """Cancel a run: its queued rollouts are cancelled, running ones stop at their next step."""
    with usage_errors(), ProducerClient(producer) as client:
        result = client.cancel(run_id)
    if as_json:
        print_json(result)
    else:
        console.print(f"run {result['run_id']} cancelled: {result['cancelled_queued']} queued rollouts cancelled, "
                      "running ones stop at their next step")
