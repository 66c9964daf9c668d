"""Child process of `check_python_file_by_test_suite`: imports a test file and calls its test
function, as OSWorld's metric does in-process, and writes the score as JSON to a result file.

Usage: `python suite_child.py TEST_FILE FUNCTION_NAME RESULT_FILE` with the test file's directory
as working directory. Standalone on purpose (no project imports): it runs the task's code.
Writes `{"score": float}`, or `{"exit": repr}` when the test code raised SystemExit (which OSWorld's
metric does not catch).
"""

from __future__ import annotations

import importlib.util
import json
import sys
import uuid
from pathlib import Path
from typing import Any


def _score(value: Any) -> float:
    """OSWorld's mapping of a test function's return value to a score."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return max(0.0, min(1.0, float(value)))
    return 1.0 if bool(value) else 0.0


def run(test_file: Path, function_name: str) -> float:
    """Import `test_file` under a unique module name with its directory first on `sys.path`, call
    `function_name()`; any failure (import, missing or non-callable function, exception) is 0.0."""
    name = f"dynamic_test_module_{uuid.uuid4().hex[:8]}"
    sys.path[0] = str(test_file.parent)
    try:
        spec = importlib.util.spec_from_file_location(name, test_file)
        if spec is None or spec.loader is None:
            return 0.0
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        function = getattr(module, function_name, None)
        if function is None or not callable(function):
            return 0.0
        return _score(function())
    except Exception:  # OSWorld scores a test suite that fails to load or run 0
        return 0.0


def main() -> None:
    test_file, function_name, result_file = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    try:
        outcome: dict[str, Any] = {"score": run(test_file, function_name)}
    except SystemExit as exc:
        outcome = {"exit": repr(exc.code)}
    result_file.write_text(json.dumps(outcome))


if __name__ == "__main__":
    main()
