"""OSWorld `desktop_env/evaluators/getters/misc.py`: rules, relative-time rules, accessibility tree."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from services.runner.osworld.context import EvalContext
from services.runner.osworld.errors import EvalError
from services.runner.osworld.getters.base import Getter
from services.runner.osworld.getters.relative_time import resolve_relative_time
from services.runner.osworld.params import require
from services.runner.osworld.protocol import EnvLike
from services.runner.osworld.requirements import Needs


def get_rule(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> Any:
    """`rule`: `config["rules"]` as is."""
    return require(config, "rules", "rule", EvalError)


def _utc_now() -> datetime:
    return datetime.now(UTC)


def relative_time_getter(clock: Callable[[], datetime]) -> Getter:
    """A `rule_relativeTime` getter reading the time from `clock` (timezone-aware; injectable so
    tests can pin the day)."""

    def get_rule_relative_time(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> dict[str, Any]:
        """`rule_relativeTime`: `config["rules"]` with its `expected` date templates filled for
        today (see `relative_time`)."""
        rules = require(config, "rules", "rule_relativeTime", EvalError)
        if not isinstance(rules, dict):
            raise EvalError(f"rule_relativeTime: 'rules' must be an object, got {rules!r}")
        return resolve_relative_time(rules, clock())

    return get_rule_relative_time


def get_accessibility_tree(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> str:
    """`accessibility_tree`: the env's accessibility tree XML (OSWorld's format)."""
    return env.accessibility()


def get_time_diff_range(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> Any:
    """`time_diff_range`: `config["diff_range_in_minutes"]`, None when absent."""
    return config.get("diff_range_in_minutes")


GETTERS: dict[str, Getter] = {
    "rule": get_rule,
    "rule_relativeTime": relative_time_getter(_utc_now),
    "accessibility_tree": get_accessibility_tree,
    "time_diff_range": get_time_diff_range,
}
NEEDS: dict[str, Needs] = {}
