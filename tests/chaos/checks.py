"""End-of-run checks of the chaos suite, read from Redis and the object store only."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

import redis

from common import keys
from common.envpool import EnvPool
from common.objectstore import ObjectStore
from common.runstate import load_rollouts, load_run_meta

_STEP = re.compile(r"/step_(\d{4,})\.json$")


@dataclass
class CheckReport:
    """What the checks found: counts by status, and every problem (a non-empty list is a loss)."""

    total: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    trajectories: int = 0
    steps: int = 0
    leases_held: int = 0
    envs_idle: int = 0
    envs_unhealthy: int = 0
    stream_backlog: int = 0
    dead_letters: int = 0
    problems: list[str] = field(default_factory=list)


def check_run(client: redis.Redis, store: ObjectStore, run_id: str, killed_envs: set[str]) -> CheckReport:
    """Every rollout exactly one terminal status; every trajectory's steps consecutive, of one attempt,
    each with its PNG, named by a manifest of that attempt (rewarded rollouts: the record's attempt and
    status); no duplicated step; zero leases held; every env not killed idle and in the free set (leasable);
    stream drained; no dead letter."""
    report = CheckReport()
    meta = load_run_meta(client, run_id)
    if meta is None:
        report.problems.append(f"run {run_id} has no metadata")
        return report
    records = load_rollouts(client, run_id)
    report.total = meta.total_rollouts
    for record in records.values():
        report.counts[record.status.value] = report.counts.get(record.status.value, 0) + 1
    if len(records) != meta.total_rollouts:
        report.problems.append(f"{meta.total_rollouts - len(records)} rollouts have no record")
    for record in records.values():
        if not record.status.is_terminal:
            report.problems.append(f"{record.rollout_id}: not terminal ({record.status.value})")
    keys_by_prefix: dict[str, list[str]] = {}
    for key in store.list(f"{run_id}/"):
        keys_by_prefix.setdefault(key.rsplit("/", 1)[0], []).append(key)
    report.trajectories = len(keys_by_prefix)
    for record in records.values():
        prefix = record.trajectory or ""
        names = keys_by_prefix.get(prefix, [])
        problems = _check_trajectory(store, prefix, names, record.status.has_reward, record.attempt,
                                     record.status.value)
        report.steps += sum(1 for n in names if _STEP.search(n))
        report.problems += [f"{record.rollout_id}: {p}" for p in problems]
    pool = EnvPool(client)
    status = pool.status()
    report.leases_held = status.leased
    report.envs_unhealthy = status.unhealthy
    report.envs_idle = status.idle
    free = pool.free_ids()
    for env in status.envs:
        if env["state"] == "leased":
            report.problems.append(f"env {env['env_id']} still leased by {env['leased_by']}")
        if env["state"] == "idle" and env["env_id"] not in free:
            report.problems.append(f"env {env['env_id']} idle but not in the free set: lost to leasing")
        if env["state"] == "unhealthy" and env["env_id"] not in killed_envs:
            report.problems.append(f"env {env['env_id']} unhealthy although never killed")
    report.stream_backlog = int(client.xlen(keys.EVENTS_STREAM))  # type: ignore[arg-type]
    report.dead_letters = int(client.xlen(keys.DEAD_LETTER_STREAM))  # type: ignore[arg-type]
    if report.stream_backlog:
        report.problems.append(f"{report.stream_backlog} events never persisted")
    if report.dead_letters:
        report.problems.append(f"{report.dead_letters} dead-lettered events")
    return report


def _check_trajectory(store: ObjectStore, prefix: str, names: list[str], rewarded: bool, attempt: int,
                      status: str) -> list[str]:
    problems: list[str] = []
    steps = sorted(int(m.group(1)) for n in names if (m := _STEP.search(n)))
    if steps != list(range(len(steps))):
        problems.append(f"steps not consecutive: {steps}")
    manifest_key = f"{prefix}/manifest.json"
    if manifest_key not in names:
        if rewarded:
            problems.append(f"{status} but no manifest")
        return problems
    manifest = json.loads(store.get(manifest_key))
    if rewarded and (manifest["attempt"], manifest["status"]) != (attempt, status):
        problems.append(f"manifest of attempt {manifest['attempt']} ({manifest['status']}), record: attempt "
                        f"{attempt} ({status})")
    if manifest["steps"] != [f"step_{i:04d}.json" for i in steps]:
        problems.append(f"manifest names {len(manifest['steps'])} steps, {len(steps)} stored")
    for i in steps:
        step = json.loads(store.get(f"{prefix}/step_{i:04d}.json"))
        if step["attempt"] != manifest["attempt"] or step["step"] != i:
            problems.append(f"step {i} is of attempt {step['attempt']}, manifest of {manifest['attempt']}")
        if f"{prefix}/image_{i:04d}.png" not in names:
            problems.append(f"step {i} has no PNG")
    return problems
