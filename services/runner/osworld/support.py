"""Which features of a task this layer cannot run, and what the ones it can run need.

Used by the producer (reject a task before it is enqueued), the runner, and `cua-rollout coverage`.
Feature labels read `"setup type 'x'"`, `"postconfig setup type 'x'"`, `"getter type 'x'"`,
`"metric 'x'"`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from common.task import EvaluatorConfig, OSWorldTask, SetupStep
from services.runner.osworld import getters, metrics, setup
from services.runner.osworld.requirements import resolve

INFEASIBLE = "infeasible"


def _getter_configs(value: dict[str, Any] | list[dict[str, Any]] | None) -> list[Any]:
    if value is None:
        return []
    return [item for item in (value if isinstance(value, list) else [value]) if item]


def _metric_names(evaluator: EvaluatorConfig) -> list[str]:
    return [evaluator.func] if isinstance(evaluator.func, str) else list(evaluator.func)


def _evaluator_pieces(evaluator: EvaluatorConfig) -> Iterator[tuple[str, str | None, dict[str, Any]]]:
    """(kind, name, config) of each piece the evaluator runs: kind is `postconfig`, `metric`, `getter`.
    `infeasible` as the only `func` runs no getter and no metric."""
    for step in evaluator.postconfig:
        yield "postconfig", step.type, step.parameters
    if evaluator.func == INFEASIBLE:
        return
    for name in _metric_names(evaluator):
        yield "metric", name, {}
    for config in _getter_configs(evaluator.result) + _getter_configs(evaluator.expected):
        kind = config.get("type") if isinstance(config, dict) else None
        yield "getter", kind if isinstance(kind, str) else None, config if isinstance(config, dict) else {}


def _task_pieces(task: OSWorldTask) -> Iterator[tuple[str, str | None, dict[str, Any]]]:
    for step in task.config:
        yield "setup", step.type, step.parameters
    yield from _evaluator_pieces(task.evaluator)


_LABEL = {"setup": "setup type", "postconfig": "postconfig setup type", "getter": "getter type", "metric": "metric"}


def _supported(kind: str, name: str | None) -> bool:
    if name is None:
        return False
    if kind in ("setup", "postconfig"):
        return name in setup.SETUP_HANDLERS
    if kind == "getter":
        return name in getters.GETTERS
    return name in metrics.METRICS


def _needs(kind: str, name: str | None, config: dict[str, Any]) -> frozenset[str]:
    if name is None:
        return frozenset()
    table = {"setup": setup.NEEDS, "postconfig": setup.NEEDS, "getter": getters.NEEDS, "metric": metrics.NEEDS}[kind]
    return resolve(table.get(name), config)


def evaluator_unsupported(evaluator: EvaluatorConfig) -> list[str]:
    """Unsupported features of an evaluator (labels, deduplicated, in order of appearance)."""
    found = [f"{_LABEL[kind]} {name!r}" for kind, name, _ in _evaluator_pieces(evaluator)
             if not _supported(kind, name)]
    return list(dict.fromkeys(found))


def unsupported_features(task: OSWorldTask) -> list[str]:
    """Every setup step type, postconfig type, getter type and metric of `task` this layer does not
    support, as readable labels (e.g. `"setup type 'googledrive'"`). Empty means the task can run."""
    found = [f"{_LABEL[kind]} {name!r}" for kind, name, _ in _task_pieces(task) if not _supported(kind, name)]
    return list(dict.fromkeys(found))


def step_requirements(step: SetupStep) -> frozenset[str]:
    """What one setup step needs beyond the env (see `requirements`), e.g. `{"internet"}`."""
    return _needs("setup", step.type, step.parameters)


def task_requirements(task: OSWorldTask) -> dict[str, list[str]]:
    """Requirement name -> labels of the supported features of `task` that need it (empty dict: the
    task runs offline). Unsupported features are not included (see `unsupported_features`)."""
    found: dict[str, list[str]] = {}
    for kind, name, config in _task_pieces(task):
        if not _supported(kind, name):
            continue
        for requirement in sorted(_needs(kind, name, config)):
            label = f"{_LABEL[kind]} {name!r}"
            if label not in found.setdefault(requirement, []):
                found[requirement].append(label)
    return found
