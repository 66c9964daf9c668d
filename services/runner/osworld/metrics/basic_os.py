"""OSWorld `desktop_env/evaluators/metrics/basic_os.py`: desktop and OS checks.

Where OSWorld's function raises (a None getter value, a rule without `expected`, output of an
unexpected shape), ours raises EvalError (`crash.crashes_as_eval_error`).
"""

from __future__ import annotations

import ast
from typing import Any

from services.runner.osworld.crash import crashes_as_eval_error
from services.runner.osworld.metrics.base import Metric, given, score


def _same_items(found: list[Any], expected: list[Any]) -> float:
    return score(len(found) == len(expected) and set(found) == set(expected))


@crashes_as_eval_error("check_gnome_favorite_apps")
def check_gnome_favorite_apps(apps_str: str | None, rule: dict[str, Any] | None = None) -> float:
    """1.0 iff the `gsettings get org.gnome.shell favorite-apps` output (a Python-style list
    literal, e.g. "['a.desktop', 'b.desktop']") holds exactly the apps of `rule["expected"]`, in
    any order.

    Deliberate difference: OSWorld `eval`s the env's output; ours parses it with
    `ast.literal_eval`, so output that is not a literal (never what gsettings prints for a list)
    raises EvalError instead of running as code.
    """
    apps = ast.literal_eval(given(apps_str, "apps_str"))
    return _same_items(list(apps), given(rule, "rule")["expected"])


@crashes_as_eval_error("is_utc_0")
def is_utc_0(timedatectl_output: str | None) -> float:
    """1.0 iff the fourth line of `timedatectl status` output (`Time zone: ... (XXX, +0000)`) ends
    with `+0000)`."""
    return score(given(timedatectl_output, "timedatectl_output").split("\n")[3].endswith("+0000)"))


@crashes_as_eval_error("check_text_enlarged")
def check_text_enlarged(scaling_factor_str: str | None) -> float:
    """1.0 iff the text scaling factor (gsettings output) is above 1.0."""
    return score(float(given(scaling_factor_str, "scaling_factor_str")) > 1.0)


@crashes_as_eval_error("check_moved_jpgs")
def check_moved_jpgs(directory_list: dict[str, Any] | None, rule: dict[str, Any] | None = None) -> float:
    """1.0 iff the names of `directory_list["children"]` (a `list_directory` tree) are exactly
    `rule["expected"]`, as a set and in number."""
    expected = given(rule, "rule")["expected"]
    return _same_items([node["name"] for node in given(directory_list, "directory_list")["children"]], expected)


@crashes_as_eval_error("is_in_vm_clickboard")
def is_in_vm_clickboard(config: dict[str, Any] | None, terminal_output: str | None = None) -> float:
    """1.0 iff `config["expected"]` (a string, or every string of a list) occurs in
    `terminal_output` (clipboard text). Note OSWorld's argument order: rules first."""
    expected = given(config, "config")["expected"]
    output = given(terminal_output, "terminal_output")
    if not isinstance(expected, list):
        return score(expected in output)
    return score(all(item in output for item in expected))


METRICS: dict[str, Metric] = {
    "check_gnome_favorite_apps": check_gnome_favorite_apps,
    "is_utc_0": is_utc_0,
    "check_text_enlarged": check_text_enlarged,
    "check_moved_jpgs": check_moved_jpgs,
    "is_in_vm_clickboard": is_in_vm_clickboard,
}
