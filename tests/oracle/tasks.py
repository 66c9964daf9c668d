"""The OSWorld tasks of `test_nogdrive.json` that use a given metric, with their evaluator pieces
taken verbatim from the task files (for the differential tests' parametrisation)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

OSWORLD = Path(__file__).resolve().parents[3] / "shared" / "osworld"


@dataclass(frozen=True)
class MetricUse:
    """One use of a metric by a task: its `options` and its `result` / `expected` getter configs."""

    task_id: str
    domain: str
    instruction: str
    options: dict[str, Any]
    result: dict[str, Any] | None
    expected: dict[str, Any] | None


@cache
def _tasks() -> tuple[tuple[str, dict[str, Any]], ...]:
    index = json.loads((OSWORLD / "test_nogdrive.json").read_text())
    return tuple((domain, json.loads((OSWORLD / "examples" / domain / f"{task_id}.json").read_text()))
                 for domain, ids in index.items() for task_id in ids)


def _item(value: Any, index: int, is_list: bool) -> Any:
    if not is_list:
        return value
    return value[index] if isinstance(value, list) else None


def metric_uses(metric: str) -> list[MetricUse]:
    """Every use of `metric` in `test_nogdrive.json`, in index order."""
    uses = []
    for domain, task in _tasks():
        evaluator = task["evaluator"]
        funcs = evaluator["func"]
        is_list = isinstance(funcs, list)
        for index, name in enumerate(funcs if is_list else [funcs]):
            if name == metric:
                uses.append(MetricUse(task["id"], domain, task["instruction"],
                                      _item(evaluator.get("options"), index, is_list) or {},
                                      _item(evaluator.get("result"), index, is_list),
                                      _item(evaluator.get("expected"), index, is_list)))
    return uses


def getter_uses(getter: str) -> list[tuple[str, dict[str, Any]]]:
    """`(task id, getter config)` of every use of getter type `getter` in `test_nogdrive.json`."""
    found = []
    for _, task in _tasks():
        evaluator = task["evaluator"]
        for key in ("result", "expected"):
            value = evaluator.get(key)
            for config in value if isinstance(value, list) else [value]:
                if isinstance(config, dict) and config.get("type") == getter:
                    found.append((task["id"], config))
    return found
