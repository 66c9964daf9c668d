"""The OSWorld features a task uses (setup steps, evaluator postconfig steps, getters, metrics), and which of
them a set of implemented names leaves out.

Feature labels read `"setup type 'x'"`, `"postconfig setup type 'x'"`, `"getter type 'x'"`, `"metric 'x'"`
(OSWorld's task JSON: `config[].type`, `evaluator.postconfig[].type`, `evaluator.result/expected[].type`,
`evaluator.func`). Two users, one walk:

- the runner's OSWorld layer checks against its live registries (`services/runner/osworld/support.py`);
- the producer checks a submitted run against `osworld_catalogue.json` beside this module: the same names,
  written from those registries (`python -m services.runner.osworld.catalogue`; a test keeps the two equal),
  so the producer never imports the evaluation libraries (pandas, OpenCV, ...: ~1.3 s and ~200 MB each start).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Container, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from common.task import EvaluatorConfig, OSWorldTask

INFEASIBLE = "infeasible"
CATALOGUE = Path(__file__).with_name("osworld_catalogue.json")

#: Piece kind -> the registry kind that implements it (postconfig steps are setup steps).
REGISTRY_KIND = {"setup": "setup", "postconfig": "setup", "getter": "getter", "metric": "metric"}
_LABEL = {"setup": "setup type", "postconfig": "postconfig setup type", "getter": "getter type", "metric": "metric"}

Piece = tuple[str, str | None, dict[str, Any]]
"""(kind, name, config): kind `setup`, `postconfig`, `getter` or `metric`; name None when missing."""


def _getter_configs(value: dict[str, Any] | list[dict[str, Any]] | None) -> list[Any]:
    if value is None:
        return []
    return [item for item in (value if isinstance(value, list) else [value]) if item]


def evaluator_pieces(evaluator: EvaluatorConfig) -> Iterator[Piece]:
    """Each piece the evaluator runs. `infeasible` as the only `func` runs no getter and no metric."""
    for step in evaluator.postconfig:
        yield "postconfig", step.type, step.parameters
    if evaluator.func == INFEASIBLE:
        return
    for name in [evaluator.func] if isinstance(evaluator.func, str) else list(evaluator.func):
        yield "metric", name, {}
    for config in _getter_configs(evaluator.result) + _getter_configs(evaluator.expected):
        kind = config.get("type") if isinstance(config, dict) else None
        yield "getter", kind if isinstance(kind, str) else None, config if isinstance(config, dict) else {}


def task_pieces(task: OSWorldTask) -> Iterator[Piece]:
    """Each setup step of `task`, then each piece of its evaluator."""
    for step in task.config:
        yield "setup", step.type, step.parameters
    yield from evaluator_pieces(task.evaluator)


def label(kind: str, name: str | None) -> str:
    """`"metric 'x'"` and the like."""
    return f"{_LABEL[kind]} {name!r}"


def is_implemented(kind: str, name: str | None, implemented: Mapping[str, Container[str]]) -> bool:
    """Whether `implemented` (registry kind -> names) covers the piece."""
    return name is not None and name in implemented[REGISTRY_KIND[kind]]


def missing(pieces: Iterable[Piece], implemented: Mapping[str, Container[str]]) -> list[str]:
    """Labels of the pieces `implemented` does not cover, deduplicated, in order of appearance."""
    found = [label(kind, name) for kind, name, _ in pieces if not is_implemented(kind, name, implemented)]
    return list(dict.fromkeys(found))


@functools.cache
def catalogue() -> dict[str, frozenset[str]]:
    """Registry kind (`setup`, `getter`, `metric`) -> the names the runner implements, from
    `osworld_catalogue.json`. Raises: OSError, ValueError when the file is missing or malformed."""
    data = json.loads(CATALOGUE.read_text())
    return {kind: frozenset(data[kind]) for kind in ("setup", "getter", "metric")}


def unsupported_by_catalogue(task: OSWorldTask) -> list[str]:
    """The features of `task` the runner does not implement, as labels, checked against the catalogue (the
    same answer as `services.runner.osworld.unsupported_features`, without importing the OSWorld layer)."""
    return missing(task_pieces(task), catalogue())
