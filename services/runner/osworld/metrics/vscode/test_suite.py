"""`check_python_file_by_test_suite`: score the agent's code with the task's own Python test file.

Semantics of OSWorld `desktop_env/evaluators/metrics/vscode.py` (`check_python_file_by_test_suite`):
the test file (a `cloud_file` next to the agent's files, which the `vm_file` getter copied into the
same work dir) is imported with its directory as working directory and first on `sys.path`, and its
function `test_function_name` (option, default `test`) is called; True/False score 1/0, a number is
clamped to [0, 1], anything else scores its truth value; a missing file, an import error, a missing
function or an exception score 0.0. `actual_files` is not read: the test imports the agent's files.

Deliberate differences, because the test runs the task's (and the agent's) code:
- it runs in a child process (`suite_child.py`, this interpreter) with a timeout
  (`SUITE_TIMEOUT_S`), not inside the runner: a hanging or crashing test cannot take the runner
  down, and the modules it imports do not stay cached for the next evaluation. OSWorld's
  in-process import leaves them in `sys.modules`, so a later task's `from settings import ...`
  (snake and tetris both have a `settings.py`) gets the earlier task's module: fixed upstream by
  xlang-ai/OSWorld PR #486 ("clean sys.modules leaks in check_python_file_by_test_suite"), which
  desktop-env 1.0.2 predates;
- SDL (pygame) gets its dummy video and audio drivers, so game code runs without a display;
- a test that does not finish in time, exits the interpreter (SystemExit, which OSWorld's metric
  does not catch and so crashes its scoring) or kills it raises EvalError.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from services.runner.osworld.errors import EvalError
from services.runner.osworld.metrics.base import FilePath

SUITE_TIMEOUT_S = 120.0
"""Wall-clock limit in seconds of one test suite run."""
CHILD = Path(__file__).with_name("suite_child.py")
_HEADLESS = {"SDL_VIDEODRIVER": "dummy", "SDL_AUDIODRIVER": "dummy", "PYGAME_HIDE_SUPPORT_PROMPT": "1"}


def check_python_file_by_test_suite(actual_files: Any, test_file: FilePath | None, **options: Any) -> float:
    """Score in [0, 1] from the test function of `test_file` (see module docstring); 0.0 when
    `test_file` is None, missing or not a file.

    Raises: EvalError when `test_file` is not a path (OSWorld's `Path()` fails), or the test run
    times out, exits the interpreter or dies without a result.
    """
    if not test_file:
        return 0.0
    if not isinstance(test_file, str | os.PathLike):
        raise EvalError(f"check_python_file_by_test_suite: expected the test file's path, got {test_file!r}")
    path = Path(test_file).resolve()
    if not path.is_file():
        return 0.0
    function_name = str(options.get("test_function_name", "test"))
    with tempfile.TemporaryDirectory(prefix="osworld-suite-") as scratch:
        result_file = Path(scratch) / "result.json"
        try:
            completed = subprocess.run(
                [sys.executable, str(CHILD), str(path), function_name, str(result_file)],
                cwd=path.parent, env={**os.environ, **_HEADLESS}, stdin=subprocess.DEVNULL,
                capture_output=True, timeout=SUITE_TIMEOUT_S, check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise EvalError(f"check_python_file_by_test_suite: {path.name} did not finish within "
                            f"{SUITE_TIMEOUT_S:g} s") from exc
        if not result_file.is_file():
            raise EvalError(f"check_python_file_by_test_suite: {path.name} ended the test process "
                            f"(exit code {completed.returncode}) without a result: "
                            f"{completed.stderr.decode(errors='replace')[-500:]}")
        outcome = json.loads(result_file.read_text())
    if "exit" in outcome:
        raise EvalError(f"check_python_file_by_test_suite: {path.name} exited the interpreter "
                        f"(SystemExit {outcome['exit']}) instead of returning a result")
    return float(outcome["score"])
