"""Trainer export of a run's stored trajectories: one record per step, per trajectory or per session
(`export_session.py`: multi-turn token sequences with their loss mask, verl's fields), as JSON Lines or Parquet
(pyarrow), read over the producer API (`cua-rollout export`).

A record carries the GRPO group id (`<run_id>/<task_id>`: the rollouts of one task in one run are
one group), the trajectory's reward and status, the policy version that produced each step, the
prompt / response token ids and response logprobs where the model server returned them (vLLM's
OpenAI server), and screenshot references (object keys `<run>/<task>_<index>/image_NNNN.png`,
fetchable at `GET /v1/trajectories/<run>/<task>_<index>/image_NNNN.png`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
import pyarrow.parquet as pq

from cua_rollout.client import RolloutClient
from services.cli.export_session import session_records

Level = Literal["step", "trajectory", "session"]
LEVELS: tuple[Level, ...] = ("step", "trajectory", "session")
Format = Literal["jsonl", "parquet"]


def group_id(run_id: str, task_id: str) -> str:
    """GRPO group of a rollout: every rollout of one task in one run."""
    return f"{run_id}/{task_id}"


def _rollout_fields(manifest: dict[str, Any]) -> dict[str, Any]:
    """The trajectory's fields every record carries: group, ids, domain, final status and reward."""
    return {
        "group_id": group_id(manifest["run_id"], manifest["task_id"]),
        "run_id": manifest["run_id"],
        "task_id": manifest["task_id"],
        "rollout_id": manifest["rollout_id"],
        "rollout_index": manifest["rollout_index"],
        "attempt": manifest["attempt"],
        "domain": manifest.get("domain"),
        "status": manifest["status"],
        "reward": manifest.get("reward"),
    }


def _step_record(manifest: dict[str, Any], trajectory: str, step: dict[str, Any]) -> dict[str, Any]:
    index = int(step["step"])
    return {
        **_rollout_fields(manifest),
        "step": index,
        "policy_version": step.get("policy_version"),
        "model_version": step.get("model_version"),
        "response": step.get("response", ""),
        "actions": json.dumps(step.get("actions", [])),
        "prompt_token_ids": step.get("prompt_token_ids"),
        "response_token_ids": step.get("response_token_ids", step.get("token_ids")),
        "response_logprobs": step.get("response_logprobs", step.get("logprobs")),
        "prompt_tokens": (step.get("usage") or {}).get("prompt_tokens"),
        "completion_tokens": (step.get("usage") or {}).get("completion_tokens"),
        "screenshot": f"{trajectory}/image_{index:04d}.png",
        "session_id": step.get("session_id"),
    }


def _trajectory_record(manifest: dict[str, Any], steps: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        **_rollout_fields(manifest),
        "num_steps": manifest.get("num_steps"),
        "min_policy_version": manifest.get("min_policy_version"),
        "max_policy_version": manifest.get("max_policy_version"),
        "policy_versions": [s["policy_version"] for s in steps],
        "responses": [s["response"] for s in steps],
        "prompt_token_ids": [s["prompt_token_ids"] for s in steps],
        "response_token_ids": [s["response_token_ids"] for s in steps],
        "response_logprobs": [s["response_logprobs"] for s in steps],
        "screenshots": [s["screenshot"] for s in steps],
    }


def iter_records(client: RolloutClient, run_id: str, level: Level) -> Iterator[dict[str, Any]]:
    """Records of every finished trajectory of the run (ones without a manifest are still running
    and skipped), steps in order.

    Raises: RolloutClientError when the producer cannot serve the run's trajectories.
    """
    for item in client.trajectories(run_id):
        manifest = item.get("manifest")
        if not manifest:
            continue
        trajectory = item["trajectory"]
        stored = [json.loads(client.trajectory_file(trajectory, name)) for name in manifest.get("steps", [])]
        if level == "session":
            yield from session_records(_rollout_fields(manifest), stored)
            continue
        steps = [_step_record(manifest, trajectory, step) for step in stored]
        if level == "step":
            yield from steps
        else:
            yield _trajectory_record(manifest, steps)


def write_export(records: Iterator[dict[str, Any]], out: Path, fmt: Format) -> int:
    """Write `records` to `out` as JSON Lines or one Parquet table; returns how many were written."""
    out.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "jsonl":
        count = 0
        with out.open("w") as handle:
            for record in records:
                handle.write(json.dumps(record) + "\n")
                count += 1
        return count
    rows = list(records)
    pq.write_table(pa.Table.from_pylist(rows), out)
    return len(rows)
