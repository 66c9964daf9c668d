"""What the differential tests of the media / editor metrics share: a case (inputs and the score
the fixture is built to get), and running OUR metric and OSWorld's on it.

A case's `want` is the score the fixture was made to reach (1.0 for the right answer, 0.0 for a
realistic wrong one; `(low, high)` for a metric with graded scores) or `RAISES` where OSWorld's
function crashes on the input (ours must then raise EvalError). Both implementations must agree
with each other and with `want`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from services.runner.osworld.errors import EvalError
from services.runner.osworld.metrics import METRICS
from tests.oracle.client import Oracle, same_value
from tests.oracle.osworld_index import MetricUse

RAISES = "raises"


@dataclass(frozen=True)
class Case:
    """`metric(result, expected, **options)` should give `want` (a score or RAISES). `expected`
    is left out of the call when `has_expected` is False (evaluators without `expected`)."""

    label: str
    result: Any
    expected: Any = None
    want: float | str | tuple[float, float] = 1.0
    has_expected: bool = True
    options: dict[str, Any] = field(default_factory=dict)

    def args(self) -> list[Any]:
        return [self.result, self.expected] if self.has_expected else [self.result]


Builder = Callable[[Path, MetricUse], list[Case]]


def check_case(oracle: Oracle, module: str, metric: str, case: Case, options: dict[str, Any] | None = None,
               stubs: tuple[str, ...] = (), tol: float = 1e-9) -> Any:
    """Run OSWorld's `metrics.<module>.<metric>` and ours on `case`; assert they agree (value within
    `tol`, or both raise) and reach `case.want`. Returns our value (None when both raised)."""
    opts = {**(options or {}), **case.options}
    theirs = oracle.call(f"metrics.{module}", metric, *case.args(), stubs=stubs, **opts)
    ours_fn = METRICS[metric]
    if not theirs.ok:
        with pytest.raises(EvalError):
            ours_fn(*case.args(), **opts)
        assert case.want == RAISES, f"{case.label}: OSWorld raised {theirs.error}, fixture wanted {case.want}"
        return None
    ours = ours_fn(*case.args(), **opts)
    assert same_value(ours, theirs.value, tol), f"{case.label}: ours {ours!r} != OSWorld {theirs.value!r}"
    if isinstance(case.want, tuple):
        low, high = case.want
        assert low <= float(ours) <= high, f"{case.label}: scored {ours}, fixture wanted [{low}, {high}]"
    elif isinstance(case.want, float):
        assert abs(float(ours) - case.want) <= max(tol, 1e-9), \
            f"{case.label}: scored {ours}, fixture wanted {case.want}"
    else:
        pytest.fail(f"{case.label}: OSWorld returned {theirs.value!r}, fixture wanted it to raise")
    return ours
