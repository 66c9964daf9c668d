"""Per-request limits of `POST /v1/runs` that bound Redis memory (each rollout is one RQ job that
carries its task, instruction included)."""

from __future__ import annotations

from common.run import RunRequest
from services.task_producer.settings import ProducerSettings


def limit_errors(request: RunRequest, settings: ProducerSettings) -> list[dict[str, object]]:
    """The limits `request` exceeds, as 422 details `{"loc", "msg"}` (empty when within them):
    `len(tasks) * rollouts_per_task` (an adaptive run: `adaptive.max_rollouts`)
    `<= max_rollouts_per_run`, each instruction `<= max_instruction_chars` characters."""
    errors: list[dict[str, object]] = []
    per_task = request.adaptive.max_rollouts if request.adaptive else request.rollouts_per_task
    total = len(request.tasks) * per_task
    if total > settings.max_rollouts_per_run:
        field = "adaptive.max_rollouts" if request.adaptive else "rollouts_per_task"
        errors.append({"loc": ["body", *field.split(".")],
                       "msg": f"{len(request.tasks)} tasks x {per_task} {field} = "
                              f"{total} rollouts, above the limit of {settings.max_rollouts_per_run} per run "
                              "(PRODUCER_MAX_ROLLOUTS_PER_RUN): split the run"})
    for i, task in enumerate(request.tasks):
        if len(task.instruction) > settings.max_instruction_chars:
            errors.append({"loc": ["body", "tasks", i, "instruction"],
                           "msg": f"task {task.id!r}: instruction has {len(task.instruction)} characters, above "
                                  f"the limit of {settings.max_instruction_chars} (PRODUCER_MAX_INSTRUCTION_CHARS)"})
    return errors
