"""Which features of a task this layer cannot run, and what the ones it can run need.

Used by the runner and `cua-rollout coverage`; the producer checks the same against the catalogue of these
names (`common.osworld_features`), without importing this layer. Feature labels read `"setup type 'x'"`,
`"postconfig setup type 'x'"`, `"getter type 'x'"`, `"metric 'x'"`.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from common.osworld_features import (
    INFEASIBLE,
    REGISTRY_KIND,
    evaluator_pieces,
    is_implemented,
    label,
    missing,
    task_pieces,
)
from common.task import EvaluatorConfig, OSWorldTask, SetupStep
from services.runner.osworld import getters, metrics, setup
from services.runner.osworld.offline import task_needs
from services.runner.osworld.requirements import resolve

__all__ = ["INFEASIBLE", "evaluator_unsupported", "implemented_names", "step_requirements", "task_requirements",
           "unsupported_features"]


def implemented_names() -> dict[str, Collection[str]]:
    """Registry kind -> the names this layer implements (the live registries): setup step types (also
    postconfig), getter types, metrics. `common/osworld_catalogue.json` holds the same for the producer
    (`python -m services.runner.osworld.catalogue` writes it)."""
    return {"setup": setup.SETUP_HANDLERS, "getter": getters.GETTERS, "metric": metrics.METRICS}


def _needs(kind: str, name: str | None, config: dict[str, Any]) -> frozenset[str]:
    if name is None:
        return frozenset()
    table = {"setup": setup.NEEDS, "getter": getters.NEEDS, "metric": metrics.NEEDS}[REGISTRY_KIND[kind]]
    return resolve(table.get(name), config)


def evaluator_unsupported(evaluator: EvaluatorConfig) -> list[str]:
    """Unsupported features of an evaluator (labels, deduplicated, in order of appearance)."""
    return missing(evaluator_pieces(evaluator), implemented_names())


def unsupported_features(task: OSWorldTask) -> list[str]:
    """Every setup step type, postconfig type, getter type and metric of `task` this layer does not
    support, as readable labels (e.g. `"setup type 'googledrive'"`). Empty means the task can run."""
    return missing(task_pieces(task), implemented_names())


def step_requirements(step: SetupStep) -> frozenset[str]:
    """What one setup step needs beyond the env (see `requirements`), e.g. `{"internet"}`."""
    return _needs("setup", step.type, step.parameters)


def task_requirements(task: OSWorldTask) -> dict[str, list[str]]:
    """Requirement name -> labels of the supported features of `task` that need it (empty dict: the
    task runs offline). Unsupported features are not included (see `unsupported_features`). Task-level
    requirements (`offline.task_needs`: solved online, app missing) come last, with their reasons."""
    found: dict[str, list[str]] = {}
    implemented = implemented_names()
    for kind, name, config in task_pieces(task):
        if not is_implemented(kind, name, implemented):
            continue
        for requirement in sorted(_needs(kind, name, config)):
            feature = label(kind, name)
            if feature not in found.setdefault(requirement, []):
                found[requirement].append(feature)
    for requirement, reasons in task_needs(task.id, task.effective_domain, task.instruction,
                                           task.model_dump_json()).items():
        found.setdefault(requirement, []).extend(reasons)
    return found
