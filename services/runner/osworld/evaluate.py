"""Score a finished rollout with its OSWorld evaluator.

Semantics of OSWorld `desktop_env/desktop_env.py` (`DesktopEnv._set_evaluator_info` at task load,
`DesktopEnv.evaluate`), proven by `tests/oracle/test_evaluate.py` against OSWorld's own code:

0. a list of metrics must come with a list of as many `result` getters; `expected` and `options`
   are absent (one empty per metric) or lists of as many items (checked before any step runs);
1. run the evaluator's `postconfig` setup steps;
2. `func == "infeasible"`: 1.0 iff the agent's last action was `FAIL`, else 0.0;
3. otherwise a last action `FAIL` scores 0.0;
4. one metric: `metric(result_state, expected_state, **options)`; `expected_state` is left out when
   the evaluator has no `expected` or an empty one; `options` is an object (absent: `{}`);
5. a list of metrics, in order: `metric(result_i, expected_i, **options_i)` (an empty options item
   is `{}`; with an `expected` list, an empty item fails when its metric is reached); each value is
   read as `float()`: with `conj == "and"` (default) a 0 ends with 0.0, with `"or"` a 1 ends with
   1.0; otherwise the raw values are averaged (`and`) or the largest taken (`or`);
6. the reward is that number as a float (bools count 0 / 1; OSWorld does not clamp, neither do we).

Where OSWorld's `evaluate` crashes (misaligned lists, an `options` object for a list of metrics,
options a metric does not take, a value `float()` cannot read), ours raises EvalError. Deliberate
differences: an unsupported metric or getter raises EvalError before any step runs; an env
transport error propagates instead of being logged; a final value that is not a number (OSWorld
returns e.g. a string as the reward) or is NaN raises EvalError, since no average of rewards can
use it; `options: null` is read as absent (OSWorld crashes on it; no task writes it, and a task
serialised with its unset fields as null must score the same).
"""

from __future__ import annotations

import inspect
import math
import numbers
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from common.task import EvaluatorConfig
from services.runner.osworld.context import EvalContext
from services.runner.osworld.errors import EvalError
from services.runner.osworld.evidence import EvidenceError, has_expected
from services.runner.osworld.getters import get_state
from services.runner.osworld.hostpaths import host_file_outside
from services.runner.osworld.metrics import METRICS
from services.runner.osworld.protocol import EnvLike
from services.runner.osworld.setup import run_setup
from services.runner.osworld.support import INFEASIBLE, evaluator_unsupported

__all__ = ["EvalContext", "EvalError", "evaluate"]

FAIL = "FAIL"


def evaluate(evaluator: EvaluatorConfig, env: EnvLike, ctx: EvalContext, last_action: str | None) -> float:
    """Reward of a rollout whose last agent action was `last_action` (`"DONE"`, `"FAIL"`, or None
    when the step budget ran out): the metric's number, in [0, 1] for every metric of the benchmark.

    Raises: EvalError for unsupported features or a malformed evaluator; SetupError from a failing
    `postconfig` step; env errors propagate.
    """
    unsupported = evaluator_unsupported(evaluator)
    if unsupported:
        raise EvalError(f"unsupported OSWorld evaluator feature(s): {', '.join(unsupported)}")
    _check_lists(evaluator)
    if ctx.evidence is not None:
        ctx.evidence.last_action = last_action
    if ctx.work_dir is not None:
        return _evaluate(evaluator, env, ctx, last_action)
    with tempfile.TemporaryDirectory(prefix="osworld-eval-") as tmp:
        return _evaluate(evaluator, env, replace(ctx, work_dir=Path(tmp)), last_action)


def _count(value: Any, funcs: int, field: str) -> int:
    """How many items OSWorld's `_set_evaluator_info` counts in `field` of a list evaluator: absent or
    empty means one per metric. Raises: EvalError for a single object (OSWorld takes its len())."""
    if value is None or (isinstance(value, list | dict) and not value and field != "options"):
        return funcs
    if isinstance(value, list) or (field == "options" and isinstance(value, dict)):
        return len(value)
    raise EvalError(f"evaluator: with {funcs} funcs, {field!r} must be a list of {funcs} items")


def _check_lists(evaluator: EvaluatorConfig) -> None:
    """OSWorld's checks when it loads a task with a list of metrics (before any step runs): as many
    result getters (each with a type), expected getters and options as metrics.

    Raises: EvalError naming the misaligned field."""
    if isinstance(evaluator.func, str):
        return
    funcs = len(evaluator.func)
    if funcs == 0:
        raise EvalError("evaluator: 'func' is an empty list")
    if isinstance(evaluator.result, list) and not all(isinstance(item, dict) and "type" in item
                                                      for item in evaluator.result):
        raise EvalError("evaluator: every 'result' item must be a getter with a 'type'")
    for field in ("result", "expected", "options"):
        if _count(getattr(evaluator, field), funcs, field) != funcs:
            raise EvalError(f"evaluator: with {funcs} funcs, {field!r} must be a list of {funcs} items")


def _evaluate(evaluator: EvaluatorConfig, env: EnvLike, ctx: EvalContext, last_action: str | None) -> float:
    if ctx.replay is None:  # a replay scores recorded states: the env is not touched
        run_setup(evaluator.postconfig, env, replace(ctx.setup, work_dir=ctx.work_dir, phase="postconfig"))
    if evaluator.func == INFEASIBLE:
        return 1.0 if last_action == FAIL else 0.0
    if last_action == FAIL:
        return 0.0
    if isinstance(evaluator.func, str):
        if not isinstance(evaluator.result, dict) or not evaluator.result or isinstance(evaluator.expected, list):
            raise EvalError("evaluator: with one func, 'result' (required) and 'expected' must be objects")
        if isinstance(evaluator.options, list):
            raise EvalError("evaluator: with one func, 'options' must be an object")
        value = _run_metric(evaluator.func, evaluator.result, evaluator.expected, evaluator.options or {}, env, ctx)
        return _as_score(evaluator.func, value)
    return _combine(evaluator, env, ctx)


def _combine(evaluator: EvaluatorConfig, env: EnvLike, ctx: EvalContext) -> float:
    """A list of metrics, as OSWorld: each value is read with `float()` for `conj`'s early exit
    (`and`: a 0 scores 0, `or`: a 1 scores 1); otherwise the values are averaged (`and`) or the
    largest taken (`or`)."""
    funcs = list(evaluator.func)
    if not isinstance(evaluator.options, list) and evaluator.options is not None:
        raise EvalError(f"evaluator: with {len(funcs)} funcs, 'options' must be a list, not an object")
    options = evaluator.options or [{}] * len(funcs)
    expecteds: list[Any] = list(evaluator.expected or []) or [None] * len(funcs)
    values: list[Any] = []
    for index, name in enumerate(funcs):
        result = evaluator.result[index] if isinstance(evaluator.result, list) else None
        if not result:
            raise EvalError(f"evaluator: metric {name!r} has no 'result' getter")
        expected = expecteds[index]
        if evaluator.expected and not expected:
            raise EvalError(f"evaluator: metric {name!r} has an empty 'expected' getter (OSWorld calls it and fails)")
        value = _run_metric(name, result, expected, options[index] or {}, env, ctx)
        try:
            number = float(value)
        except (TypeError, ValueError) as exc:
            raise EvalError(f"metric {name!r} returned {value!r}, not a number") from exc
        if evaluator.conj == "and" and number == 0.0:
            return 0.0
        if evaluator.conj == "or" and number == 1.0:
            return 1.0
        values.append(value)
    try:
        combined = sum(values) / len(values) if evaluator.conj == "and" else max(values)
    except TypeError as exc:
        raise EvalError(f"metrics {funcs} returned values that do not combine: {values!r}") from exc
    return _as_score(" / ".join(funcs), combined)


def _run_metric(
    name: str,
    result: dict[str, Any],
    expected: dict[str, Any] | None,
    options: dict[str, Any],
    env: EnvLike,
    ctx: EvalContext,
) -> Any:
    """The metric's raw value on the getters' states."""
    metric = METRICS.get(name)
    if metric is None:
        raise EvalError(f"unsupported OSWorld metric {name!r}")
    if not isinstance(options, dict):
        raise EvalError(f"evaluator: options of metric {name!r} must be an object, got {options!r}")
    args = _metric_states(name, result, expected, env, ctx)
    try:
        inspect.signature(metric).bind(*args, **options)
    except TypeError as exc:
        raise EvalError(f"metric {name!r} does not accept options {sorted(options)}: {exc}") from exc
    return metric(*args, **options)


def _metric_states(name: str, result: dict[str, Any], expected: dict[str, Any] | None, env: EnvLike,
                   ctx: EvalContext) -> list[Any]:
    """The metric's positional states: from its getters (recorded into `ctx.evidence` when set), or
    replayed from `ctx.replay`. Raises: EvalError when the replay does not match the evaluator."""
    if ctx.replay is not None:
        try:
            replayed, replayed_expected = ctx.replay.next_states(name)
        except EvidenceError as exc:
            raise EvalError(f"cannot rescore: {exc}") from exc
        return [replayed, replayed_expected] if has_expected(replayed_expected) else [replayed]
    args = [get_state(env, result, ctx)]
    if expected:
        args.append(get_state(env, expected, ctx))
    roots = [ctx.work_dir] if ctx.work_dir is not None else []
    outside = host_file_outside(args, roots)
    if outside is not None:
        raise EvalError(f"metric {name!r}: a getter state names the runner file {outside[:200]!r}, outside the "
                        "rollout's work dir; a task can name env files and files its evaluation produced, never "
                        "a runner host path")
    if ctx.evidence is not None and len(args) == 2:
        ctx.evidence.record(name, args[0], args[1], roots=roots)
    elif ctx.evidence is not None:
        ctx.evidence.record(name, args[0], roots=roots)
    return args


def _as_score(name: str, value: Any) -> float:
    """A metric value as a reward: a number (bools as 0 / 1, numpy scalars too) as float,
    unclamped, as OSWorld.

    Raises: EvalError for anything else (OSWorld returns it as the reward, where any average of
    rewards fails) and for NaN."""
    if type(value).__module__ == "numpy" and callable(getattr(value, "item", None)) and not getattr(value, "shape", ()):
        value = value.item()
    if not isinstance(value, numbers.Real) or math.isnan(value):
        raise EvalError(f"metric {name!r} returned {value!r}, not a number")
    return float(value)
