"""`cua-rollout` commands: up, submit, watch, stats, demo."""

from __future__ import annotations

import json
import shutil
import signal
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn

from common.task import load_tasks
from services.cli.api_client import ProducerClient, ProducerError
from services.cli.stack import LocalStack, StackConfig
from services.cli.views import domain_table, matches_expectation, rollout_table

app = typer.Typer(add_completion=False, help="cua-rollout: run computer-use agents at scale.")
console = Console()
if not console.is_terminal:  # piped or CI logs: 80 columns would truncate task ids
    console.width = 120
err_console = Console(stderr=True)

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = REPO_ROOT / "examples"
DEFAULT_PRODUCER = "http://127.0.0.1:8080"


@app.command()
def up(
    envs: Annotated[int, typer.Option(help="desktop envs (local provider)")] = 2,
    runners: Annotated[int, typer.Option(help="runner worker processes")] = 2,
    replicas: Annotated[int, typer.Option(help="scripted policy replicas behind the gateway")] = 2,
    port: Annotated[int, typer.Option(help="producer port")] = 8080,
    scripts: Annotated[Path, typer.Option(help="scripted policy scripts directory")] = EXAMPLES / "scripts",
    work_dir: Annotated[Path, typer.Option(help="logs, envs, trajectories")] = Path(".cua/stack"),
) -> None:
    """Start the whole stack locally and keep it up until Ctrl+C (then stop every process)."""
    config = StackConfig(work_dir=work_dir, scripts_dir=scripts, envs=envs, runners=runners,
                         replicas=replicas, producer_port=port)
    stop = False

    def _on_signal(*_: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, _on_signal)
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:  # `up &` from a script: shells ignore SIGINT there
        signal.signal(signal.SIGINT, signal.default_int_handler)
    with LocalStack(config) as stack:
        console.print(f"[green]stack up[/green]: producer {stack.producer_url} (docs at /docs), "
                      f"gateway {stack.gateway_url}, redis {stack.redis_url}, {len(stack.env_urls)} envs")
        console.print(f"trajectories: {stack.store_url}   logs: {stack.log_dir}   Ctrl+C stops everything")
        try:
            while not stop:
                dead = stack.dead_processes()
                if dead:
                    console.print(f"[red]{dead[0].name} exited[/red]:\n{dead[0].log_tail()}")
                    raise typer.Exit(1)
                time.sleep(0.5)  # supervisor idle loop, not a race workaround
        except KeyboardInterrupt:
            pass
        console.print("stopping...")


@app.command()
def submit(
    path: Annotated[Path, typer.Argument(help="task JSON file, directory, or test_all.json-style index")],
    producer: Annotated[str, typer.Option(help="producer URL")] = DEFAULT_PRODUCER,
    rollouts: Annotated[int, typer.Option(help="rollouts per task")] = 1,
    max_steps: Annotated[int, typer.Option(help="max steps per rollout")] = 15,
    priority: Annotated[str, typer.Option(help="high|default|low")] = "default",
    run_id: Annotated[str | None, typer.Option(help="explicit run id")] = None,
) -> None:
    """Submit OSWorld tasks as a run; prints the run id."""
    try:
        tasks = load_tasks(path)
        with ProducerClient(producer) as client:
            result = client.submit(tasks, rollouts_per_task=rollouts, max_steps=max_steps, priority=priority,
                                   **({"run_id": run_id} if run_id else {}))
    except (ValueError, ProducerError) as exc:
        err_console.print(f"[red]error:[/red] {exc}", soft_wrap=True)
        raise typer.Exit(2) from None
    console.print(f"run {result['run_id']}: {result['enqueued']} rollouts enqueued")
    print(result["run_id"])


def watch_run(client: ProducerClient, run_id: str, timeout_s: float) -> dict[str, Any]:
    """Show a progress bar (queued / running / done, success rate) until the run finishes.

    Raises: TimeoutError after `timeout_s` seconds.
    """
    deadline = time.monotonic() + timeout_s
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TextColumn("{task.fields[detail]}"), console=console, transient=False) as progress:
        bar = progress.add_task(f"run {run_id}", total=None, detail="")
        while True:
            run = client.run(run_id)
            counts = run["counts"]
            rate = run.get("success_rate")
            detail = (f"queued {counts.get('queued', 0)}  running {counts.get('running', 0)}  done {run['done']}"
                      f"  success {'-' if rate is None else f'{rate:.0%}'}")
            progress.update(bar, total=run["total"], completed=run["done"], detail=detail)
            if run["finished"]:
                return run
            if time.monotonic() > deadline:
                raise TimeoutError(f"run {run_id} not finished after {timeout_s:.0f}s: {detail}")
            time.sleep(0.5)  # polling interval of the progress display


@app.command()
def watch(
    run_id: str,
    producer: Annotated[str, typer.Option(help="producer URL")] = DEFAULT_PRODUCER,
    timeout: Annotated[float, typer.Option(help="give up after this many seconds")] = 3600,
) -> None:
    """Progress bar of a run until it finishes."""
    try:
        with ProducerClient(producer) as client:
            watch_run(client, run_id, timeout)
    except (ProducerError, TimeoutError) as exc:
        err_console.print(f"[red]error:[/red] {exc}", soft_wrap=True)
        raise typer.Exit(2) from None


@app.command()
def stats(run_id: str, producer: Annotated[str, typer.Option(help="producer URL")] = DEFAULT_PRODUCER) -> None:
    """Status and reward per rollout, success rate per domain."""
    try:
        with ProducerClient(producer) as client:
            run = client.run(run_id)
    except ProducerError as exc:
        err_console.print(f"[red]error:[/red] {exc}", soft_wrap=True)
        raise typer.Exit(2) from None
    console.print(rollout_table(run))
    console.print(domain_table(run))


def load_expectations(scripts_dir: Path) -> dict[str, dict[str, Any]]:
    """`task_id -> {"status", "reward"}` from the `expected` field of example scripts."""
    out = {}
    for file in sorted(scripts_dir.glob("*.json")):
        data = json.loads(file.read_text())
        if "expected" in data:
            out[file.stem] = data["expected"]
    return out


def mismatches(run: dict[str, Any], expected: dict[str, dict[str, Any]]) -> list[str]:
    """Rollouts whose status or reward differ from the expectation, one line each."""
    problems = []
    for r in run["rollouts"]:
        exp = expected.get(r["task_id"])
        if exp is None:
            continue
        if not matches_expectation(r, exp):
            problems.append(f"{r['rollout_id']}: got {r['status']}/{r['reward']}, expected "
                            f"{exp['status']}/{exp.get('reward')} ({r.get('error') or 'no error'})")
    return problems


@app.command()
def demo(
    rollouts: Annotated[int, typer.Option(help="rollouts per task")] = 2,
    envs: Annotated[int, typer.Option(help="desktop envs")] = 2,
    runners: Annotated[int, typer.Option(help="runner workers")] = 2,
    work_dir: Annotated[Path, typer.Option(help="where logs and trajectories go")] = Path(".cua/demo"),
    timeout: Annotated[float, typer.Option(help="seconds before giving up")] = 900,
) -> None:
    """Start the stack, submit `examples/` over HTTP, show progress and results, shut down."""
    tasks = load_tasks(EXAMPLES / "tasks")
    expected = load_expectations(EXAMPLES / "scripts")
    shutil.rmtree(work_dir / "trajectories", ignore_errors=True)
    config = StackConfig(work_dir=work_dir, scripts_dir=EXAMPLES / "scripts", envs=envs, runners=runners)
    console.print(f"starting the stack: redis, {envs} desktop envs, 2 scripted policy replicas, gateway, "
                  f"producer, {runners} runners, sink ...")
    with LocalStack(config) as stack, ProducerClient(stack.producer_url) as client:
        result = client.submit(tasks, rollouts_per_task=rollouts, max_steps=15)
        run_id = result["run_id"]
        console.print(f"submitted {len(tasks)} tasks x {rollouts} rollouts over HTTP as run {run_id} "
                      f"(POST {stack.producer_url}/v1/runs)")
        run = watch_run(client, run_id, timeout)
        console.print(rollout_table(run, expected))
        console.print(domain_table(run))
        trajectories = Path(stack.store_url.removeprefix("file://")) / run_id
        console.print(f"trajectories: {trajectories}")
        problems = mismatches(run, expected)
    if problems:
        console.print("[red]unexpected results:[/red]\n" + "\n".join(problems))
        raise typer.Exit(1)
    console.print("[green]demo finished: every rollout ended as its script expects[/green]")



if __name__ == "__main__":
    app()
