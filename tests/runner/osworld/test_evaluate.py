"""Unit tests of `evaluate()` (`services/runner/osworld/evaluate.py`): infeasible, FAIL, conj, options,
expected, postconfig, metric values and errors, on synthetic evaluators and the real OSWorld tasks
(getters: `test_getters.py`, metrics: `test_metrics.py`; equality with OSWorld's own
`DesktopEnv.evaluate`: `tests/oracle/test_evaluate.py`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy
import pytest

from common.task import EvaluatorConfig, load_task_file
from services.runner.osworld import METRICS, EvalContext, EvalError, evaluate
from services.runner.osworld.metrics import general
from tests.runner.osworld.test_setup import (
    SHARED_TASKS,
    FakeEnv,
    FakeResult,
    cache_all_downloads,
    make_ctx,
    real_tasks,
)


def eval_ctx(tmp_path: Path, work: bool = True, **setup: Any) -> EvalContext:
    """An EvalContext over `tmp_path/cache`, with work dir `tmp_path/work` unless `work` is False."""
    return EvalContext(
        setup=make_ctx(tmp_path, **setup), cache_dir=tmp_path / "cache", work_dir=tmp_path / "work" if work else None
    )


def evaluator(**raw: Any) -> EvaluatorConfig:
    return EvaluatorConfig.model_validate(raw)


def write(path: Path, text: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


# --- evaluate ---------------------------------------------------------------------------------------

E0DF = SHARED_TASKS / "os__e0df059f-28a6-4169-924f-b9623e7184cc.json"


@pytest.mark.parametrize(("last_action", "score"), [("FAIL", 1.0), ("DONE", 0.0), (None, 0.0)])
def test_infeasible_scores_one_only_for_fail(tmp_path: Path, last_action: str | None, score: float) -> None:
    task = load_task_file(SHARED_TASKS / "os__c288e301-e626-4b98-a1ab-159dcb162af5.json")
    env = FakeEnv()
    assert evaluate(task.evaluator, env, eval_ctx(tmp_path), last_action) == score
    assert env.calls == []


@pytest.mark.parametrize(("output", "score"), [("Directory exists.\n", 1.0), ("Directory does not exist.\n", 0.0)])
def test_exact_match_on_real_task_e0df059f(tmp_path: Path, output: str, score: float) -> None:
    task = load_task_file(E0DF)
    env = FakeEnv(reply=lambda c, s: FakeResult(output=output))
    assert evaluate(task.evaluator, env, eval_ctx(tmp_path), "DONE") == score
    assert env.calls == [
        (
            "execute",
            ("[ -d ~/Desktop/todo_list_Jan_2 ] && echo 'Directory exists.' || echo 'Directory does not exist.'",),
            {"shell": True},
        )
    ]


def test_feasible_task_with_last_action_fail_scores_zero_without_getters(tmp_path: Path) -> None:
    env = FakeEnv(reply=lambda c, s: FakeResult(output="Directory exists.\n"))
    assert evaluate(load_task_file(E0DF).evaluator, env, eval_ctx(tmp_path), "FAIL") == 0.0
    assert env.calls == []


def test_real_clipboard_task_passes_rules_first(tmp_path: Path) -> None:
    task = load_task_file(SHARED_TASKS / "multi_apps__716a6079-22da-47f1-ba73-c9d58f986a38.json")
    good = FakeEnv(reply=lambda c, s: FakeResult(output="/home/user/Data3/List3/secret.docx\n"))
    assert evaluate(task.evaluator, good, eval_ctx(tmp_path), "DONE") == 1.0
    assert good.calls == [("execute", ("xsel --clipboard --output",), {"shell": True})]
    assert evaluate(task.evaluator, FakeEnv(), eval_ctx(tmp_path), "DONE") == 0.0


def test_real_moved_jpgs_task(tmp_path: Path) -> None:
    task = load_task_file(SHARED_TASKS / "os__23393935-50c7-4a86-aeea-2b78fd089c5c.json")
    names = task.evaluator.expected["rules"]["expected"]  # type: ignore[index,call-overload]
    env = FakeEnv(tree={"name": "cpjpg", "type": "directory", "children": [{"name": n} for n in names]})
    assert evaluate(task.evaluator, env, eval_ctx(tmp_path), "DONE") == 1.0
    assert env.named("list_directory") == [(("/home/user/Desktop/cpjpg",), {})]
    partial = FakeEnv(tree={"name": "cpjpg", "children": [{"name": names[0]}]})
    assert evaluate(task.evaluator, partial, eval_ctx(tmp_path), "DONE") == 0.0


def test_real_postconfig_downloads_then_runs_the_check(tmp_path: Path) -> None:
    task = load_task_file(SHARED_TASKS / "os__37887e8c-da15-4192-923c-08fa390a176d.json")
    ctx = eval_ctx(tmp_path)
    cache_all_downloads([task], ctx.cache_dir)
    env = FakeEnv(reply=lambda c, s: FakeResult(output="Success: The task was completed correctly.\n"))
    assert evaluate(task.evaluator, env, ctx, "DONE") == 1.0
    assert [name for name, _, _ in env.calls] == ["upload_file", "setup_execute", "execute"]
    assert env.named("setup_execute") == [(("chmod +x eval.sh",), {"shell": True})]
    assert env.named("execute") == [(("bash eval.sh",), {"shell": True})]


def test_postconfig_missing_from_cache_is_a_setup_error(tmp_path: Path) -> None:
    from services.runner.osworld import SetupError

    task = load_task_file(SHARED_TASKS / "os__37887e8c-da15-4192-923c-08fa390a176d.json")
    with pytest.raises(SetupError, match="eval_20250703.sh"):
        evaluate(task.evaluator, FakeEnv(), eval_ctx(tmp_path), "DONE")


def test_postconfig_sleep_and_terminal_output_on_real_task_13584542(tmp_path: Path) -> None:
    task = load_task_file(SHARED_TASKS / "os__13584542-872b-42d8-b299-866967b5c3ef.json")
    ctx = eval_ctx(tmp_path)
    env = FakeEnv(terminal_text="user@host:~$ stty size\n43 132\n")
    assert evaluate(task.evaluator, env, ctx, "DONE") == 1.0
    assert ctx.setup.sleep.seconds == [1.0]  # type: ignore[attr-defined]
    assert [name for name, _, _ in env.calls] == ["setup_execute", "terminal"]


def rule_pair(value: str, expected: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A (result, expected) getter pair whose result is the constant `value`."""
    return {"type": "rule", "rules": value}, {"type": "rule", "rules": {"expected": expected}}


def conj_evaluator(conj: str, *pairs: tuple[str, str], func: str = "exact_match") -> EvaluatorConfig:
    results, expecteds = zip(*(rule_pair(v, e) for v, e in pairs), strict=True)
    return evaluator(func=[func] * len(pairs), result=list(results), expected=list(expecteds), conj=conj)


@pytest.mark.parametrize(
    ("conj", "pairs", "score"),
    [
        ("and", [("a", "a"), ("b", "b")], 1.0),
        ("and", [("a", "a"), ("b", "x")], 0.0),
        ("and", [("a", "x"), ("b", "b")], 0.0),
        ("or", [("a", "x"), ("b", "b")], 1.0),
        ("or", [("a", "x"), ("b", "y")], 0.0),
    ],
)
def test_conj_and_or(tmp_path: Path, conj: str, pairs: list[tuple[str, str]], score: float) -> None:
    assert evaluate(conj_evaluator(conj, *pairs), FakeEnv(), eval_ctx(tmp_path), "DONE") == score


def test_conj_and_averages_and_or_takes_the_max_of_partial_scores(tmp_path: Path) -> None:
    partial = general.fuzzy_match("abcd", {"expected": "abxy"})
    assert 0.0 < partial < 1.0
    both = conj_evaluator("and", ("abcd", "abcd"), ("abcd", "abxy"), func="fuzzy_match")
    assert evaluate(both, FakeEnv(), eval_ctx(tmp_path), "DONE") == pytest.approx((1.0 + partial) / 2)
    either = conj_evaluator("or", ("abcd", "wxyz"), ("abcd", "abxy"), func="fuzzy_match")
    assert evaluate(either, FakeEnv(), eval_ctx(tmp_path), "DONE") == pytest.approx(partial)


def test_conj_and_short_circuits_on_the_first_zero(tmp_path: Path) -> None:
    config = evaluator(
        func=["exact_match", "check_include_exclude"],
        result=[{"type": "rule", "rules": "no"}, {"type": "vm_terminal_output"}],
        expected=[{"type": "rule", "rules": {"expected": "yes"}}, {"type": "rule", "rules": {"include": ["x"]}}],
    )
    env = FakeEnv()
    assert evaluate(config, env, eval_ctx(tmp_path), "DONE") == 0.0
    assert env.calls == []  # the second metric's getter never ran


def test_options_per_metric_as_a_list(tmp_path: Path) -> None:
    base = {
        "func": ["literal_match", "literal_match"],
        "result": [{"type": "rule", "rules": "ABC"}, {"type": "rule", "rules": "Def"}],
        "expected": [{"type": "rule", "rules": "abc"}, {"type": "rule", "rules": "def"}],
    }
    ctx = eval_ctx(tmp_path)
    assert evaluate(evaluator(**base), FakeEnv(), ctx, "DONE") == 0.0
    assert evaluate(evaluator(**base, options=[{"ignore_case": True}] * 2), FakeEnv(), ctx, "DONE") == 1.0
    assert evaluate(evaluator(**base, options=[{"ignore_case": True}, {}]), FakeEnv(), ctx, "DONE") == 0.0
    assert evaluate(evaluator(**base, conj="or", options=[{}, {"ignore_case": True}]), FakeEnv(), ctx, "DONE") == 1.0


def test_a_list_of_metrics_with_an_empty_expected_list_calls_them_with_the_result_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[Any, ...]] = []
    monkeypatch.setitem(METRICS, "probe", lambda *args: seen.append(args) or 0.5)
    config = evaluator(func=["probe", "probe"], result=[{"type": "rule", "rules": "a"}, {"type": "rule", "rules": "b"}],
                       expected=[])
    assert evaluate(config, FakeEnv(), eval_ctx(tmp_path), "DONE") == 0.5
    assert seen == [("a",), ("b",)]


def test_single_metric_without_expected_calls_metric_with_result_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[Any, ...]] = []

    def probe(*args: Any, **options: Any) -> float:
        seen.append((args, options))
        return 1

    monkeypatch.setitem(METRICS, "probe", probe)
    config = evaluator(func="probe", result={"type": "rule", "rules": "r"}, options={"flag": True})
    assert evaluate(config, FakeEnv(), eval_ctx(tmp_path), None) == 1.0
    assert seen == [(("r",), {"flag": True})]


@pytest.mark.parametrize(("value", "score"), [(True, 1.0), (False, 0.0), (2, 2.0), (-0.5, -0.5), (0.25, 0.25),
                                              (numpy.bool_(True), 1.0), (numpy.float32(0.5), 0.5)])
def test_metric_numbers_are_rewards_as_osworld_returns_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: Any, score: float
) -> None:
    """OSWorld's `evaluate` returns the metric's number unchanged (no clamping)."""
    monkeypatch.setitem(METRICS, "constant", lambda result, expected=None: value)
    config = evaluator(func="constant", result={"type": "rule", "rules": 0})
    reward = evaluate(config, FakeEnv(), eval_ctx(tmp_path), "DONE")
    assert reward == score and type(reward) is float


@pytest.mark.parametrize("value", ["1", None, float("nan"), [1.0], numpy.array([1.0, 0.0])])
def test_a_metric_value_that_is_not_a_number_is_an_eval_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: Any
) -> None:
    monkeypatch.setitem(METRICS, "constant", lambda result, expected=None: value)
    for config in (evaluator(func="constant", result={"type": "rule", "rules": 0}),
                   evaluator(func=["constant", "constant"], result=[{"type": "rule", "rules": 0}] * 2)):
        with pytest.raises(EvalError, match="constant.*returned"):
            evaluate(config, FakeEnv(), eval_ctx(tmp_path), "DONE")


def test_file_getters_land_in_a_temporary_work_dir_removed_after_evaluate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []

    def probe(path: str, expected: Any = None) -> float:
        seen.append(path)
        return float(Path(path).read_bytes() == b"content")

    monkeypatch.setitem(METRICS, "probe", probe)
    config = evaluator(func="probe", result={"type": "vm_file", "path": "/home/user/f", "dest": "f"})
    env = FakeEnv(files={"/home/user/f": b"content"})
    assert evaluate(config, env, eval_ctx(tmp_path, work=False), "DONE") == 1.0
    assert not Path(seen[0]).exists()


def test_unknown_metric_is_an_eval_error_naming_it_before_postconfig(tmp_path: Path) -> None:
    config = evaluator(
        func="no_such_metric",
        result={"type": "rule", "rules": 1},
        postconfig=[{"type": "execute", "parameters": {"command": "echo hi"}}],
    )
    env = FakeEnv()
    with pytest.raises(EvalError, match="'no_such_metric'"):
        evaluate(config, env, eval_ctx(tmp_path), "DONE")
    assert env.calls == []


def test_unknown_getter_in_a_list_is_an_eval_error_naming_it(tmp_path: Path) -> None:
    config = evaluator(
        func=["exact_match", "exact_match"],
        result=[{"type": "rule", "rules": 1}, {"type": "no_such_getter"}],
        expected=[{"type": "rule", "rules": {"expected": 1}}, {"type": "rule", "rules": {"expected": 1}}],
    )
    with pytest.raises(EvalError, match="'no_such_getter'"):
        evaluate(config, FakeEnv(), eval_ctx(tmp_path), "DONE")


@pytest.mark.parametrize(
    "raw",
    [
        {"func": "exact_match"},  # no result getter
        {"func": "exact_match", "result": [{"type": "rule", "rules": 1}]},  # list result for one func
        {"func": ["exact_match", "exact_match"], "result": [{"type": "rule", "rules": 1}]},  # misaligned
        {"func": ["exact_match"], "result": [{"type": "rule", "rules": 1}], "options": [{}, {}]},
        {"func": [], "result": []},
        # OSWorld indexes an options object by metric position and crashes
        {"func": ["exact_match"], "result": [{"type": "rule", "rules": 1}], "options": {"x": 1}},
        # OSWorld calls the missing getter of an empty expected item and crashes
        {"func": ["exact_match", "exact_match"], "result": [{"type": "rule", "rules": 1}] * 2,
         "expected": [{"type": "rule", "rules": {"expected": 1}}, {}]},
        {"func": "exact_match", "result": {}},  # an empty result getter
    ],
)
def test_malformed_evaluators_are_eval_errors(tmp_path: Path, raw: dict[str, Any]) -> None:
    with pytest.raises(EvalError, match="evaluator"):
        evaluate(evaluator(**raw), FakeEnv(), eval_ctx(tmp_path), "DONE")


def test_null_options_are_read_as_absent(tmp_path: Path) -> None:
    """A task serialised with unset fields as null (job payloads) scores as the task file does."""
    result, expected = {"type": "rule", "rules": "a"}, {"type": "rule", "rules": {"expected": "a"}}
    single = evaluator(func="exact_match", result=result, expected=expected, options=None)
    listed = evaluator(func=["exact_match"] * 2, result=[result] * 2, expected=[expected] * 2, options=None)
    for config in (single, listed):
        assert evaluate(config, FakeEnv(), eval_ctx(tmp_path), "DONE") == 1.0


def test_options_a_metric_does_not_take_are_an_eval_error(tmp_path: Path) -> None:
    config = evaluator(
        func="exact_match",
        result={"type": "rule", "rules": "a"},
        expected={"type": "rule", "rules": {"expected": "a"}},
        options={"ignore_case": True},
    )
    with pytest.raises(EvalError, match="exact_match.*ignore_case"):
        evaluate(config, FakeEnv(), eval_ctx(tmp_path), "DONE")


def test_every_real_task_evaluates_to_a_reward_with_the_fake_env(tmp_path: Path) -> None:
    tasks = real_tasks()
    ctx = eval_ctx(tmp_path)
    cache_all_downloads(tasks, ctx.cache_dir)
    for task in tasks:
        for last_action in ("DONE", "FAIL", None):
            reward = evaluate(task.evaluator, FakeEnv(), ctx, last_action)
            assert 0.0 <= reward <= 1.0, (task.id, last_action)
            expected_fail = 1.0 if task.evaluator.func == "infeasible" else 0.0
            if last_action == "FAIL":
                assert reward == expected_fail, task.id
