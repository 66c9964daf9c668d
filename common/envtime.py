"""How a rollout attempt's held env time splits into what the env did (env utilisation).

Shared by the runner's metrics (`cua_runner_env_seconds_total{state}`) and the run statistics
(`common.stats`, `cua-rollout stats`); input is the attempt's timings in ms as the runner records
them (`services.runner.timings.TIMING_KEYS`).
"""

from __future__ import annotations

#: What a held env does, in the order `env_split` returns them.
ENV_STATES = ("in_step", "startup", "reset", "evaluation")


def env_split(timings: dict[str, float]) -> dict[str, float]:
    """The held env time (`held_ms`: lease acquired -> freed) split into `ENV_STATES`, in ms: in-step
    `steps_ms`, reset `reset_ms + release_ms` (reset on lease; giving the env back, which resets it),
    evaluation `eval_ms`, start-up the rest of `held_ms` (lease, setup, start/end bookkeeping; never
    negative). {} when the timings have no `held_ms` (no env was leased, or recorded before it)."""
    held = timings.get("held_ms")
    if held is None:
        return {}
    split = {"in_step": timings.get("steps_ms", 0.0),
             "reset": timings.get("reset_ms", 0.0) + timings.get("release_ms", 0.0),
             "evaluation": timings.get("eval_ms", 0.0)}
    split["startup"] = max(0.0, held - sum(split.values()))
    return {state: split[state] for state in ENV_STATES}
