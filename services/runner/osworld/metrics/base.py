"""Helpers shared by the metric modules: score from a bool, rule lookup, reading host files.

Every metric module of this package pairs with the OSWorld module of the same name
(`desktop_env/evaluators/metrics/<module>.py`) and registers its metrics in a module-level
`METRICS` dict that `metrics/__init__.py` merges.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from services.runner.osworld.errors import EvalError

Metric = Callable[..., float]
FilePath = str | Path
T = TypeVar("T")


def score(ok: bool) -> float:
    return 1.0 if ok else 0.0


def given(value: T | None, what: str) -> T:
    """`value`, which a getter or a rule may leave None where OSWorld's function assumes a value.

    Raises: TypeError("<what> is None"), the error OSWorld's function meets on None; a metric's
    `crashes_as_eval_error` turns it into EvalError naming the metric."""
    if value is None:
        raise TypeError(f"{what} is None")
    return value


def given_path(value: FilePath | None, what: str) -> FilePath:
    """`given` for a file path (mypy cannot solve `T | None` against the `str | Path` union).

    Raises: TypeError("<what> is None"), as `given`."""
    if value is None:
        raise TypeError(f"{what} is None")
    return value


def rule_field(rules: Any, key: str, metric: str) -> Any:
    """`rules[key]`. Raises: EvalError naming the metric when `rules` is not a dict with `key`."""
    if not isinstance(rules, dict) or key not in rules:
        raise EvalError(f"{metric}: rules must be an object with {key!r}, got {rules!r}")
    return rules[key]


def read_text(path: Any) -> str | None:
    """Text of a host file, or None when `path` is not a path or the file cannot be read as text."""
    if not path or not isinstance(path, str | Path):
        return None
    try:
        return Path(path).read_text()
    except (OSError, UnicodeDecodeError):
        return None


def contains(container: Any, item: Any) -> bool:
    try:
        return item in container
    except TypeError:
        return False
