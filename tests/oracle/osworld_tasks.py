"""The OSWorld tasks of `shared/osworld/test_nogdrive.json`, for differential tests that take a task's
rules, options and getter configs verbatim from its JSON."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

OSWORLD = Path(__file__).resolve().parents[3] / "shared" / "osworld"


class Piece(NamedTuple):
    """One metric of a task's evaluator with its aligned `result` / `expected` getter configs and
    `options` (OSWorld's alignment of list-valued evaluators)."""

    task_id: str
    index: int
    func: str
    result: dict[str, Any] | None
    expected: dict[str, Any] | None
    options: dict[str, Any]

    @property
    def rules(self) -> Any:
        """The `rules` of the expected `rule` getter (the metric's second argument)."""
        assert self.expected is not None and self.expected.get("type") == "rule", self.expected
        return self.expected["rules"]

    @property
    def id(self) -> str:
        return f"{self.task_id[:8]}-{self.index}"


@cache
def tasks() -> dict[str, dict[str, Any]]:
    """`"<domain>/<id>"` -> task JSON of every task of test_nogdrive.json."""
    index = json.loads((OSWORLD / "test_nogdrive.json").read_text())
    return {f"{domain}/{task_id}": json.loads((OSWORLD / "examples" / domain / f"{task_id}.json").read_text())
            for domain, ids in index.items() for task_id in ids}


def _aligned(value: Any, count: int, single: bool) -> list[Any]:
    if single:
        return [value]
    return value if isinstance(value, list) else [value] * count


def pieces(func: str) -> list[Piece]:
    """Every use of metric `func` in the index, in task order."""
    found = []
    for key, task in sorted(tasks().items()):
        evaluator = task["evaluator"]
        funcs = evaluator["func"]
        single = isinstance(funcs, str)
        names = [funcs] if single else funcs
        results = _aligned(evaluator.get("result"), len(names), single)
        expecteds = _aligned(evaluator.get("expected"), len(names), single)
        options = _aligned(evaluator.get("options"), len(names), single)
        for index, name in enumerate(names):
            if name == func:
                found.append(Piece(key.split("/")[1], index, name, results[index], expecteds[index],
                                   options[index] or {}))
    return found


def getter_configs(getter_type: str) -> list[tuple[str, dict[str, Any]]]:
    """`(task id, config)` of every use of getter `getter_type` (result or expected), in task order."""
    found = []
    for key, task in sorted(tasks().items()):
        evaluator = task["evaluator"]
        for side in ("result", "expected"):
            value = evaluator.get(side)
            for config in value if isinstance(value, list) else [value]:
                if isinstance(config, dict) and config.get("type") == getter_type:
                    found.append((key.split("/")[1], config))
    return found


def setup_steps(step_type: str) -> list[tuple[str, dict[str, Any]]]:
    """`(task id, parameters)` of every `config` setup step of type `step_type`, in task order."""
    return [(key.split("/")[1], step["parameters"]) for key, task in sorted(tasks().items())
            for step in task.get("config", []) if step["type"] == step_type]
