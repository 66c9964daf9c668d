"""OSWorld `desktop_env/evaluators/metrics/general.py`: value, file and structured-document checks,
split by concern (`values`, `files`, `structured`); `METRICS` is their union."""

from __future__ import annotations

from services.runner.osworld.metrics.base import Metric
from services.runner.osworld.metrics.general import files, structured, values
from services.runner.osworld.metrics.general.files import (
    check_csv,
    check_line_number,
    check_list,
    compare_python_pure_text,
    diff_text_file,
    file_contains,
    fuzzy_place_math,
    run_sqlite3,
)
from services.runner.osworld.metrics.general.structured import check_accessibility_tree, check_json
from services.runner.osworld.metrics.general.values import (
    check_direct_json_object,
    check_include_exclude,
    exact_match,
    fuzzy_match,
    is_in_list,
    literal_match,
    match_in_list,
)

METRICS: dict[str, Metric] = {**values.METRICS, **files.METRICS, **structured.METRICS}

__all__ = ["METRICS", "check_accessibility_tree", "check_csv", "check_direct_json_object", "check_include_exclude",
           "check_json", "check_line_number", "check_list", "compare_python_pure_text", "diff_text_file",
           "exact_match", "file_contains", "fuzzy_match", "fuzzy_place_math", "is_in_list", "literal_match",
           "match_in_list", "run_sqlite3"]
