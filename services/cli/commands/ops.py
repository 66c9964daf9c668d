"""Operations commands against a producer: envs, queues, trajectory."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from services.cli.api_client import ProducerClient
from services.cli.app import DEFAULT_PRODUCER, JsonOption, ProducerOption, app, console, err_console, usage_errors
from services.cli.ops_views import envs_table, queues_table, trajectory_table
from services.cli.output import print_json


@app.command()
def envs(producer: ProducerOption = DEFAULT_PRODUCER, as_json: JsonOption = False) -> None:
    """The env pool: every registered env with its state (idle, leased, unhealthy) and lease holder."""
    with usage_errors(), ProducerClient(producer) as client:
        pool = client.envs()
    if as_json:
        print_json(pool)
    else:
        console.print(envs_table(pool))


@app.command()
def queues(producer: ProducerOption = DEFAULT_PRODUCER, as_json: JsonOption = False) -> None:
    """Per RQ queue: depth (waiting rollouts), started, failed, deferred, scheduled, finished, workers."""
    with usage_errors(), ProducerClient(producer) as client:
        result = client.queues()
    if as_json:
        print_json(result)
    else:
        console.print(queues_table(result["queues"]))


def safe_file_name(name: str) -> str:
    """`name` when it is a plain file name (no directory part, not hidden, not `..`).

    Raises: ValueError naming the file, so a producer's answer cannot write outside `--out`.
    """
    if not name or "/" in name or "\\" in name or name.startswith(".") or Path(name).name != name:
        raise ValueError(f"refusing to write trajectory file {name!r}: not a plain file name")
    return name


@app.command()
def trajectory(
    run_id: str,
    task_id: str,
    index: Annotated[int, typer.Argument(min=0, help="rollout index (0-based)")],
    producer: ProducerOption = DEFAULT_PRODUCER,
    out: Annotated[Path | None, typer.Option(help="download every file of the trajectory into this directory")] = None,
    as_json: JsonOption = False,
) -> None:
    """A stored trajectory: status, reward, steps and files from its manifest.

    `--out DIR` downloads its files (task_config.json, image_XXXX.png, step_XXXX.json, final_messages.json, reward.txt,
    manifest.json) into DIR."""
    name = f"{task_id}_{index}"
    with usage_errors(), ProducerClient(producer) as client:
        result = client.trajectory(run_id, name)
        if out is not None:
            files = [safe_file_name(str(f)) for f in result.get("files", [])]
            try:
                out.mkdir(parents=True, exist_ok=True)
                for file in files:
                    (out / file).write_bytes(client.trajectory_file(run_id, name, file))
            except OSError as exc:
                raise ValueError(f"cannot write into {out}: {exc}") from exc
            err_console.print(f"wrote {len(files)} files of {run_id}/{name} to {out}")
    if as_json:
        print_json(result)
    else:
        console.print(trajectory_table(result))
