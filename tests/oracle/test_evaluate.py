"""Differential tests of `evaluate()` against OSWorld's own `DesktopEnv.evaluate`: the same evaluator
configs (single metric and lists, `conj`, `options` as object or list, `expected` absent / empty /
partial, postconfig, the agent's last action, metric values that are not numbers) scored by both.
Getters are `rule` (pure) and metrics OSWorld's `general` ones, plus `echo` (returns its result) to
make a metric return any value; ours runs on the `FakeEnv` test double."""

from __future__ import annotations

import json
import math
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from common.task import EvaluatorConfig
from services.runner.osworld import METRICS, EvalContext, EvalError, evaluate
from tests.oracle.client import ORACLE_PYTHON, OracleUnavailable, same_value
from tests.runner.osworld.test_setup import FakeEnv, make_ctx

SCRIPT = Path(__file__).with_name("evaluate_runner.py")


class EvaluateOracle:
    """One process running OSWorld's `DesktopEnv.evaluate` (see `evaluate_runner.py`)."""

    def __init__(self) -> None:
        if not ORACLE_PYTHON.exists():
            raise OracleUnavailable(f"{ORACLE_PYTHON} is missing: run `bash scripts/setup.sh --oracle`")
        self._process = subprocess.Popen([str(ORACLE_PYTHON), str(SCRIPT)], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, text=True)

    def evaluate(self, evaluator: dict[str, Any], last_action: str | None) -> dict[str, Any]:
        assert self._process.stdin is not None and self._process.stdout is not None
        history = [] if last_action is None else [last_action]
        self._process.stdin.write(json.dumps({"evaluator": evaluator, "action_history": history}) + "\n")
        self._process.stdin.flush()
        line = self._process.stdout.readline()
        if not line:
            raise OracleUnavailable(f"evaluate oracle exited with {self._process.poll()}")
        return dict(json.loads(line))

    def close(self) -> None:
        if self._process.stdin:
            self._process.stdin.close()
        self._process.wait(timeout=30)


@pytest.fixture(scope="module")
def osworld() -> Iterator[EvaluateOracle]:
    process = EvaluateOracle()
    yield process
    process.close()


@pytest.fixture(autouse=True)
def echo_metric(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(METRICS, "echo", lambda result, expected=None, **options: result)


def rule(value: Any) -> dict[str, Any]:
    return {"type": "rule", "rules": value}


def expect(value: Any) -> dict[str, Any]:
    return rule({"expected": value})


CASES: list[tuple[str, dict[str, Any]]] = [
    ("single", {"func": "exact_match", "result": rule("a"), "expected": expect("a")}),
    ("single-wrong", {"func": "exact_match", "result": rule("a"), "expected": expect("b")}),
    ("single-no-expected", {"func": "echo", "result": rule(0.25)}),
    ("single-empty-expected", {"func": "echo", "result": rule(0.25), "expected": {}}),
    ("single-options", {"func": "literal_match", "result": rule("A"), "expected": rule("a"),
                        "options": {"ignore_case": True}}),
    ("single-empty-options", {"func": "literal_match", "result": rule("A"), "expected": rule("A"), "options": {}}),
    ("single-options-list", {"func": "literal_match", "result": rule("A"), "expected": rule("a"), "options": [{}]}),
    ("single-expected-list", {"func": "exact_match", "result": rule("a"), "expected": [expect("a")]}),
    ("single-no-result", {"func": "echo", "expected": expect("a")}),
    ("single-unknown-option", {"func": "exact_match", "result": rule("a"), "expected": expect("a"),
                               "options": {"ignore_case": True}}),
    ("and-all", {"func": ["exact_match", "fuzzy_match"], "result": [rule("a"), rule("abcd")],
                 "expected": [expect("a"), expect("abxy")]}),
    ("and-zero", {"func": ["exact_match", "echo"], "result": [rule("a"), rule("not a number")],
                  "expected": [expect("b"), expect(None)]}),
    ("or-one", {"func": ["fuzzy_match", "exact_match", "echo"], "conj": "or",
                "result": [rule("abcd"), rule("a"), rule("never reached")],
                "expected": [expect("abxy"), expect("a"), expect(None)]}),
    ("or-max", {"func": ["fuzzy_match", "fuzzy_match"], "conj": "or", "result": [rule("abcd"), rule("abcd")],
                "expected": [expect("wxyz"), expect("abcx")]}),
    ("list-options", {"func": ["literal_match", "literal_match"], "result": [rule("A"), rule("B")],
                      "expected": [rule("a"), rule("B")], "options": [{"ignore_case": True}, {}]}),
    ("list-options-object", {"func": ["literal_match", "literal_match"], "result": [rule("A"), rule("B")],
                             "expected": [rule("a"), rule("B")], "options": {"ignore_case": True}}),
    ("list-options-short", {"func": ["literal_match", "literal_match"], "result": [rule("A"), rule("B")],
                            "expected": [rule("a"), rule("B")], "options": [{}]}),
    ("list-no-expected", {"func": ["echo", "echo"], "result": [rule(1), rule(0.5)]}),
    ("list-empty-expected", {"func": ["echo", "echo"], "result": [rule(1), rule(0.5)], "expected": []}),
    ("list-partial-expected", {"func": ["exact_match", "echo"], "result": [rule("a"), rule(1)],
                               "expected": [expect("a"), {}]}),
    ("list-short-result", {"func": ["echo", "echo"], "result": [rule(1)]}),
    ("list-short-expected", {"func": ["exact_match", "exact_match"], "result": [rule("a"), rule("b")],
                             "expected": [expect("a")]}),
    ("postconfig", {"func": "echo", "result": rule(1), "postconfig": [{"type": "sleep", "parameters":
                                                                     {"seconds": 0.01}}]}),
    ("infeasible", {"func": "infeasible"}),
    ("infeasible-postconfig", {"func": "infeasible", "postconfig": [{"type": "sleep", "parameters":
                                                                     {"seconds": 0.01}}]}),
]
VALUES = [True, False, 1, 0, 2, -0.5, 0.75, "1", None, [1], {"a": 1}]


def _ours(evaluator: dict[str, Any], last_action: str | None, tmp_path: Path) -> Any:
    ctx = EvalContext(setup=make_ctx(tmp_path), cache_dir=tmp_path / "cache", work_dir=tmp_path / "work")
    try:
        return evaluate(EvaluatorConfig.model_validate(evaluator), FakeEnv(), ctx, last_action)
    except EvalError as error:
        return error


def _compare(osworld: EvaluateOracle, evaluator: dict[str, Any], last_action: str | None, tmp_path: Path) -> None:
    theirs = osworld.evaluate(evaluator, last_action)
    ours = _ours(evaluator, last_action, tmp_path)
    if not theirs["ok"]:
        assert isinstance(ours, EvalError), f"OSWorld raised {theirs['type']}, ours gave {ours!r}"
        return
    value = theirs["value"]
    if isinstance(value, bool | int | float) and value != "nan":
        assert not isinstance(ours, EvalError), f"OSWorld gave {value!r}, ours raised {ours}"
        assert same_value(ours, value), f"ours {ours!r} != OSWorld {value!r}"
    else:  # deliberate: a value that is not a number is no reward (OSWorld returns it as is)
        assert isinstance(ours, EvalError), f"OSWorld gave {value!r}, ours gave {ours!r}"


@pytest.mark.parametrize(("label", "evaluator"), CASES, ids=[label for label, _ in CASES])
@pytest.mark.parametrize("last_action", ["DONE", "FAIL", None])
def test_evaluate_matches_desktop_env_evaluate(osworld: EvaluateOracle, tmp_path: Path, label: str,
                                               evaluator: dict[str, Any], last_action: str | None) -> None:
    _compare(osworld, evaluator, last_action, tmp_path)


@pytest.mark.parametrize("value", VALUES, ids=repr)
@pytest.mark.parametrize("shape", ["single", "and", "or"])
def test_metric_values_become_rewards_as_in_desktop_env_evaluate(osworld: EvaluateOracle, tmp_path: Path,
                                                                 value: Any, shape: str) -> None:
    if shape == "single":
        evaluator: dict[str, Any] = {"func": "echo", "result": rule(value)}
    else:
        evaluator = {"func": ["echo", "echo"], "conj": shape, "result": [rule(value), rule(0.5)]}
    _compare(osworld, evaluator, "DONE", tmp_path)


def test_nan_is_an_eval_error_where_desktop_env_evaluate_returns_nan(osworld: EvaluateOracle,
                                                                    tmp_path: Path) -> None:
    """Deliberate difference: OSWorld returns NaN, which poisons every average of rewards."""
    evaluator = {"func": "echo", "result": rule(math.nan)}
    assert osworld.evaluate(evaluator, "DONE") == {"ok": True, "value": "nan", "postconfig": []}
    assert isinstance(_ours(evaluator, "DONE", tmp_path), EvalError)
