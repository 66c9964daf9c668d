"""OSWorld `desktop_env/evaluators/metrics/vscode.py`: VS Code settings, keybindings, extensions,
files, and Python code checked by a test suite.

Sub-modules: `files` (text, JSON, zip and result files), `test_suite` (running the task's test
file in a child process, `suite_child`).
"""

from __future__ import annotations

from services.runner.osworld.metrics.base import Metric
from services.runner.osworld.metrics.vscode.files import (
    check_json_keybindings,
    check_json_settings,
    compare_config,
    compare_result_files,
    compare_text_file,
    compare_zip_files,
    is_extension_installed,
)
from services.runner.osworld.metrics.vscode.test_suite import check_python_file_by_test_suite

METRICS: dict[str, Metric] = {
    "check_json_keybindings": check_json_keybindings,
    "check_json_settings": check_json_settings,
    "check_python_file_by_test_suite": check_python_file_by_test_suite,
    "compare_config": compare_config,
    "compare_result_files": compare_result_files,
    "compare_text_file": compare_text_file,
    "compare_zip_files": compare_zip_files,
    "is_extension_installed": is_extension_installed,
}
