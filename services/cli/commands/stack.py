"""`cua-rollout up` (the stack until Ctrl+C, with any part given as an external URL) and `demo`."""

from __future__ import annotations

import json
import shutil
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from common.task import load_tasks
from services.cli.api_client import ProducerClient
from services.cli.app import EXIT_FAILURES, app, console, err_console, fail, usage_errors
from services.cli.output import watch_run
from services.cli.preflight import check_http_url, check_redis, check_store, policy_warning
from services.cli.views import domain_table, matches_expectation, rollout_table

if TYPE_CHECKING:
    from services.cli.stack import StackConfig

REPO_ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = REPO_ROOT / "examples"


def stack_config(**options: Any) -> StackConfig:
    """A `StackConfig` from `up`'s options, every external part checked first.

    Raises: ValueError naming the option and the problem (bad URL, Redis or store unreachable, an
    option that does not apply, e.g. `--latency-ms` with `--policy-url`).
    """
    from services.cli.stack import StackConfig

    for option, path in (("--scripts", options["scripts_dir"]), ("--fixtures", options["fixtures_dir"])):
        if path is not None and not path.is_dir():
            raise ValueError(f"{option} {str(path)!r}: not a directory")
    policy_urls = [check_http_url(u, "--policy-url") for u in options.pop("policy_urls")]
    env_urls = [check_http_url(u, "--env-url") for u in options.pop("env_urls")]
    if policy_urls and options["policy_latency_ms"]:
        raise ValueError("--latency-ms simulates model time on the scripted replicas; it does not apply "
                         "with --policy-url")
    if options["redis_url"]:
        check_redis(options["redis_url"])
    if options["store_url"]:
        check_store(options["store_url"])
    for url in policy_urls:
        warning = policy_warning(url)
        if warning:
            err_console.print(f"warning: {warning}", soft_wrap=True, markup=False, highlight=False)
    return StackConfig(policy_urls=policy_urls, env_urls=env_urls, **options)


@app.command()
def up(
    envs: Annotated[int, typer.Option(min=1, help="local desktop envs (when no --env-url)")] = 2,
    runners: Annotated[int, typer.Option(min=1, help="runner workers (forked by one runner process)")] = 2,
    replicas: Annotated[int, typer.Option(min=1, help="scripted policy replicas (when no --policy-url)")] = 2,
    port: Annotated[int, typer.Option(min=0, max=65535, help="producer port (0: a free one)")] = 8080,
    policy_url: Annotated[list[str] | None, typer.Option(
        help="OpenAI-compatible policy server (e.g. vLLM) instead of the scripted replicas; repeat for "
             "several, the gateway balances across them")] = None,
    env_url: Annotated[list[str] | None, typer.Option(
        help="OSWorld server (env pod or OSWorld VM) instead of local desktops; repeat, or give a DNS "
             "name that resolves to every env")] = None,
    redis_url: Annotated[str | None, typer.Option(help="external Redis instead of a private redis-server")] = None,
    store_url: Annotated[str | None, typer.Option(
        help="trajectory store: s3://bucket (S3_ENDPOINT, S3_ACCESS_KEY, S3_SECRET_KEY, S3_SECURE, S3_REGION "
             "from the environment) or file:///dir; default WORK_DIR/trajectories")] = None,
    gateway_port: Annotated[int, typer.Option(min=0, max=65535, help="gateway port (0: a free one)")] = 0,
    display_base: Annotated[int | None, typer.Option(
        min=1, help="first X display number of the local desktops (default: spread by pid)")] = None,
    settle: Annotated[float | None, typer.Option(
        min=0, help="runners' max screen-settle wait after each step, s (RUNNER_SETTLE_MAX_S; 0: none)")] = None,
    latency_ms: Annotated[float, typer.Option(min=0, help="simulated model time of the scripted replicas, ms")] = 0,
    scripts: Annotated[Path, typer.Option(help="scripted policy scripts directory")] = EXAMPLES / "scripts",
    fixtures: Annotated[Path | None, typer.Option(
        help="files for tasks' downloads, seeded into the runners' URL cache (every index.json under it)")]
    = EXAMPLES / "fixtures",
    work_dir: Annotated[Path, typer.Option(help="logs, local envs, trajectories")] = Path(".cua/stack"),
    cache_dir: Annotated[Path | None, typer.Option(
        help="the runners' URL cache (default WORK_DIR/cache, where `cua-rollout cache` puts files)")] = None,
) -> None:
    """Start the stack and keep it up until Ctrl+C (then stop every process it started).

    Every part not given as a URL starts locally: a private Redis, local desktops, scripted policy
    replicas, a trajectory directory. Exits 2 with one line when an external part is unreachable.
    """
    from services.cli.stack import LocalStack

    with usage_errors():
        config = stack_config(
            policy_urls=policy_url or [], env_urls=env_url or [], redis_url=redis_url, store_url=store_url,
            work_dir=work_dir, scripts_dir=scripts, fixtures_dir=fixtures, envs=envs, runners=runners,
            replicas=replicas, producer_port=port, gateway_port=gateway_port, display_base=display_base,
            settle_max_s=settle, policy_latency_ms=latency_ms, cache_dir=cache_dir)
    stop = False

    def _on_signal(*_: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, _on_signal)
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:  # `up &` from a script: shells ignore SIGINT there
        signal.signal(signal.SIGINT, signal.default_int_handler)
    stack = LocalStack(config)
    try:
        stack.start()
    except (RuntimeError, ValueError) as exc:  # a part did not start: the message names it (log tail follows)
        stack.stop()
        fail(f"{str(exc).splitlines()[0]} (logs: {stack.log_dir})")
    except BaseException:
        stack.stop()
        raise
    try:
        policy = f"{len(config.policy_urls)} policy servers" if config.policy_urls else \
            f"{config.replicas} scripted replicas"
        console.print(f"[green]stack up[/green]: producer {stack.producer_url} (docs at /docs), "
                      f"gateway {stack.gateway_url} -> {policy}, redis {stack.redis_url}, {len(stack.env_urls)} envs")
        console.print(f"trajectories: {stack.store_url}   logs: {stack.log_dir}   Ctrl+C stops everything")
        try:
            while not stop:
                for process in stack.restart_dead():  # a dead child (killed runner, sink...) comes back
                    console.print(f"[yellow]{process.name} exited: restarted[/yellow]; the end of its log:")
                    console.print(process.log_tail(), markup=False, highlight=False)
                time.sleep(0.5)  # supervisor idle loop, not a race workaround
        except KeyboardInterrupt:
            pass
        console.print("stopping...")
    finally:
        stack.stop()


def load_expectations(scripts_dir: Path, agent: str = "ui_tars_1_5") -> dict[str, dict[str, Any]]:
    """`task_id -> {"status", "reward"}` from the `expected` field of example scripts (searched
    recursively: OSWorld tasks' scripts live in `scripts/osworld/<task id>.json`) of `agent`: scripts
    naming another agent (`scripts/agents/<agent>/`) are left out, scripts naming none are UI-TARS'."""
    out = {}
    for file in sorted(scripts_dir.rglob("*.json")):
        data = json.loads(file.read_text())
        if "expected" in data and data.get("agent", "ui_tars_1_5") == agent:
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


def export_demo_run(producer_url: str, run_id: str, rollouts: int, out_dir: Path, timeout_s: float = 60) -> Path:
    """Export the finished run's steps to `out_dir/<run_id>.step.parquet` once the sink has stored
    every trajectory's manifest (it writes asynchronously); returns the file's path.

    Raises: TimeoutError when the manifests are not all stored within `timeout_s`."""
    from common.polling import wait_until
    from cua_rollout.client import RolloutClient
    from services.cli.export import iter_records, write_export

    path = out_dir / f"{run_id}.step.parquet"
    with RolloutClient(producer_url) as client:
        wait_until(lambda: sum(1 for t in client.trajectories(run_id) if t.get("manifest")) >= rollouts,
                   timeout_s, f"the sink to store run {run_id}'s trajectories", interval_s=0.5)
        write_export(iter_records(client, run_id, "step"), path, "parquet")
    return path


@app.command()
def demo(
    rollouts: Annotated[int, typer.Option(min=1, help="rollouts per task")] = 1,
    tasks: Annotated[list[Path] | None, typer.Option(
        "--tasks", help="task files, directories or OSWorld indexes to run instead of all of examples/tasks "
                        "(repeatable; their scripts must be in examples/scripts)")] = None,
    # Four desktops: the demo's rollouts mostly wait for apps and screens, so on 2 cores four envs finish the
    # 38 tasks in ~2.5 min instead of ~3.7 (bench/README.md, demo.py).
    envs: Annotated[int, typer.Option(min=1, help="desktop envs")] = 4,
    runners: Annotated[int, typer.Option(min=1, help="runner workers")] = 4,
    work_dir: Annotated[Path, typer.Option(help="where logs and trajectories go")] = Path(".cua/demo"),
    timeout: Annotated[float, typer.Option(help="seconds before giving up")] = 1800,
    keep_running: Annotated[bool, typer.Option("--keep-running",
                                               help="keep the stack (and its dashboard) up until Ctrl+C")] = False,
) -> None:
    """Start the stack, submit `examples/` (or `--tasks`) over HTTP, show progress and results, export the
    run for training, print the dashboard's URL, shut down (or keep running with `--keep-running`).

    Exits 1 when a rollout ends differently from what its script expects; 2 for a task path that
    cannot be loaded."""
    from services.cli.stack import LocalStack, StackConfig

    with usage_errors():
        task_list = [task for path in (tasks or [EXAMPLES / "tasks"]) for task in load_tasks(path)]
    expected = load_expectations(EXAMPLES / "scripts")
    shutil.rmtree(work_dir / "trajectories", ignore_errors=True)
    config = StackConfig(work_dir=work_dir, scripts_dir=EXAMPLES / "scripts", envs=envs, runners=runners,
                         fixtures_dir=EXAMPLES / "fixtures")
    console.print(f"starting the stack: redis, {envs} desktop envs, 2 scripted policy replicas, gateway, "
                  f"producer, {runners} runners, sink ...")
    with usage_errors(), LocalStack(config) as stack, ProducerClient(stack.producer_url) as client:
        result = client.submit(task_list, rollouts_per_task=rollouts, max_steps=15)
        run_id = result["run_id"]
        console.print(f"submitted {len(task_list)} tasks x {rollouts} rollouts over HTTP as run {run_id} "
                      f"(POST {stack.producer_url}/v1/runs)")
        run = watch_run(client, run_id, timeout, console)
        console.print(rollout_table(run, expected))
        console.print(domain_table(run))
        trajectories = Path(stack.store_url.removeprefix("file://")) / run_id
        console.print(f"trajectories: {trajectories}")
        export_path = export_demo_run(stack.producer_url, run_id, len(run["rollouts"]), work_dir / "export")
        console.print(f"trainer export (one record per step): {export_path}")
        console.print(f"dashboard: {stack.producer_url}/ui   this run: {stack.producer_url}/ui/runs/{run_id}")
        problems = mismatches(run, expected)
        if keep_running:
            console.print("the stack keeps running: Ctrl+C stops it")
            try:
                signal.pause()
            except KeyboardInterrupt:
                pass
    if problems:
        console.print("[red]unexpected results:[/red]\n" + "\n".join(problems))
        raise typer.Exit(EXIT_FAILURES)
    console.print("[green]demo finished: every rollout ended as its script expects[/green]")
