"""Every timing of one rollout attempt, built in this one place.

The step loop adds each step's `StepTimings` (the step event's own timings, `common.events`); the rollout
runner sets the episode's and the lease's. `AttemptTimings.as_dict()` is the attempt's `timings` (ms) of
the end event and the rollout record (`common.runstate.RolloutRecord.timings`), keys in `TIMING_KEYS`:

- episode: `total_ms` (start event -> evaluation done), `setup_ms` (reset on lease and the task's
  `config`), `eval_ms`;
- sums over the steps: `model_ms`, `env_ms` (= `action_ms` + `screenshot_ms`), `settle_ms`, `steps_ms`
  (wall time of the step loop's iterations, publishing included), `publish_ms`;
- around the episode: `lease_wait_ms`, `reset_ms` (the reset on lease, inside `setup_ms`), `release_ms`
  (giving the env back, its reset included when the provider resets there), `held_ms` (lease acquired ->
  lease freed), `job_start_ms` (job picked by the worker -> the attempt starts: fork, RQ bookkeeping,
  settings), `startup_ms` (job picked -> first model request; absent when no model request was sent),
  `teardown_ms` (last step or evaluation done -> lease freed).
"""

from __future__ import annotations

from dataclasses import dataclass

from common.events import StepTimings

TIMING_KEYS = ("total_ms", "setup_ms", "eval_ms", "model_ms", "env_ms", "action_ms", "screenshot_ms", "settle_ms",
               "steps_ms", "publish_ms", "lease_wait_ms", "reset_ms", "release_ms", "held_ms", "job_start_ms",
               "startup_ms", "teardown_ms")


@dataclass
class AttemptTimings:
    """The timings (ms) of one attempt, filled as it runs. `picked_at` and `first_model_at` are
    `time.monotonic()` seconds: when the worker picked the job, when the first model request was sent
    (None until then); `startup_ms` is their difference. `lease_wait_ms` stays None until a lease was tried
    (a run cancelled before start), `held_ms` until an env was leased and given back (no env to lease): the
    record then has only the timings that happened, so `common.envtime.env_split` sees no held env."""

    picked_at: float
    first_model_at: float | None = None
    total_ms: float = 0.0
    setup_ms: float = 0.0
    eval_ms: float = 0.0
    model_ms: float = 0.0
    env_ms: float = 0.0
    action_ms: float = 0.0
    screenshot_ms: float = 0.0
    settle_ms: float = 0.0
    steps_ms: float = 0.0
    publish_ms: float = 0.0
    lease_wait_ms: float | None = None
    reset_ms: float = 0.0
    release_ms: float = 0.0
    held_ms: float | None = None
    job_start_ms: float = 0.0
    teardown_ms: float = 0.0

    def add_step(self, step: StepTimings, publish_ms: float, loop_ms: float) -> None:
        """Add one step: its published `step` timings, the time (ms) publishing its event took, and the
        wall time (ms) of its loop iteration, publishing included."""
        self.model_ms += step.model_ms
        self.env_ms += step.env_ms
        self.action_ms += step.action_ms
        self.screenshot_ms += step.screenshot_ms
        self.settle_ms += step.settle_ms
        self.publish_ms += publish_ms
        self.steps_ms += loop_ms

    def as_dict(self) -> dict[str, float]:
        """The attempt's timings by `TIMING_KEYS` name (ms): only `job_start_ms` before a lease was tried,
        with `lease_wait_ms` when no env was leased, else every key; `startup_ms` only once a model request
        was sent."""
        if self.lease_wait_ms is None:
            return {"job_start_ms": self.job_start_ms}
        if self.held_ms is None:
            return {"job_start_ms": self.job_start_ms, "lease_wait_ms": self.lease_wait_ms}
        timings = {key: getattr(self, key) for key in TIMING_KEYS if key != "startup_ms"}
        if self.first_model_at is not None:
            timings["startup_ms"] = (self.first_model_at - self.picked_at) * 1000.0
        return timings

