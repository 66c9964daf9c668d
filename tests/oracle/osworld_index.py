"""The OSWorld tasks a metric or getter is used by, read from the benchmark itself
(`../shared/osworld/test_nogdrive.json` and `examples/<domain>/<id>.json`), so differential tests
take each task's options and rules verbatim and can check they cover every task that uses a metric.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

OSWORLD = Path(__file__).resolve().parents[3] / "shared" / "osworld"


@dataclass(frozen=True)
class MetricUse:
    """One use of a metric in a task's evaluator: `task` is `"<domain>/<id>"`, `index` the position
    in the evaluator's `func` list (0 for a single func); `result` / `expected` are the getter
    configs and `options` the metric's options, as the task writes them."""

    task: str
    index: int
    result: dict[str, Any]
    expected: dict[str, Any] | None
    options: dict[str, Any]

    @property
    def rules(self) -> Any:
        """The expected state when the expected getter is `rule` (its `rules`), else None."""
        return self.expected.get("rules") if self.expected and self.expected.get("type") == "rule" else None

    @property
    def id(self) -> str:
        """Test id: the task, and the position when the task uses the metric more than once."""
        return f"{self.task}#{self.index}"


@cache
def task(name: str) -> dict[str, Any]:
    """The task JSON of `"<domain>/<id>"`."""
    domain, task_id = name.split("/")
    return json.loads((OSWORLD / "examples" / domain / f"{task_id}.json").read_text())


@cache
def task_names() -> tuple[str, ...]:
    """Every task of `test_nogdrive.json` as `"<domain>/<id>"`."""
    index = json.loads((OSWORLD / "test_nogdrive.json").read_text())
    return tuple(f"{domain}/{task_id}" for domain, ids in index.items() for task_id in ids)


def _at(value: Any, index: int, count: int) -> Any:
    return value[index] if isinstance(value, list) and len(value) == count else value


def metric_uses(metric: str) -> list[MetricUse]:
    """Every use of `metric` by the tasks of `test_nogdrive.json`, in index order."""
    uses: list[MetricUse] = []
    for name in task_names():
        evaluator = task(name)["evaluator"]
        funcs = evaluator["func"] if isinstance(evaluator["func"], list) else [evaluator["func"]]
        for index, func in enumerate(funcs):
            if func == metric:
                count = len(funcs) if isinstance(evaluator["func"], list) else 1
                uses.append(MetricUse(
                    task=name, index=index,
                    result=_at(evaluator.get("result"), index, count),
                    expected=_at(evaluator.get("expected"), index, count),
                    options=_at(evaluator.get("options"), index, count) or {},
                ))
    return uses


def getter_uses(getter: str) -> list[tuple[str, dict[str, Any]]]:
    """`(task, getter config)` of every use of getter type `getter` in the evaluators."""
    found: list[tuple[str, dict[str, Any]]] = []

    def walk(name: str, value: Any) -> None:
        if isinstance(value, dict):
            if value.get("type") == getter:
                found.append((name, value))
            for item in value.values():
                walk(name, item)
        elif isinstance(value, list):
            for item in value:
                walk(name, item)

    for name in task_names():
        evaluator = task(name)["evaluator"]
        walk(name, [evaluator.get("result"), evaluator.get("expected")])
    return found
