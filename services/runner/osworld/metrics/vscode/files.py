"""VS Code metrics on files: text and config files, settings / keybindings JSON, result files and
zip archives, and the output of `code --list-extensions`.

Semantics of the functions of the same names in OSWorld `desktop_env/evaluators/metrics/vscode.py`.
Where OSWorld's function crashes on an input (a missing expected file, a file that is not UTF-8, a
rule without its key), ours raises EvalError; where it scores 0, ours scores 0.0.
"""

from __future__ import annotations

import difflib
import io
import json
import re
import zipfile
from pathlib import Path
from typing import Any

from pypdf import PdfReader
from pypdf.errors import PyPdfError

from services.runner.osworld.crash import input_errors
from services.runner.osworld.errors import EvalError
from services.runner.osworld.metrics.base import FilePath, given_path, score

PDF_TEXT_SIMILARITY = 0.95
NUMBER_TOLERANCE = 1e-4


def _read(path: FilePath | None, metric: str) -> str:
    """Text of a host file (universal newlines, the locale's encoding, as `open()`).

    Raises: EvalError when it is None, missing or cannot be decoded."""
    with input_errors(metric):
        with open(given_path(path, "path")) as file:
            return file.read()


def _blanks_collapsed(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[\t\n]", " ", text).strip())


def compare_text_file(actual: FilePath | None, expected: FilePath | None = None, **options: Any) -> float:
    """1.0 iff two text files are equal. Options: `ignore_blanks` (tabs and newlines become
    spaces, the ends are stripped, runs of whitespace count as one space), `ignore_case`.
    A None / empty `actual` scores 0.0.

    Raises: EvalError when a file is missing (the expected one included) or cannot be decoded.
    """
    if not actual:
        return 0.0
    actual_text = _read(actual, "compare_text_file")
    expected_text = _read(expected, "compare_text_file")
    if options.get("ignore_blanks", False):
        actual_text, expected_text = _blanks_collapsed(actual_text), _blanks_collapsed(expected_text)
    if options.get("ignore_case", False):
        actual_text, expected_text = actual_text.lower(), expected_text.lower()
    return score(actual_text == expected_text)


def compare_config(actual: FilePath | None, rules: Any, **options: Any) -> float:
    """1.0 iff the file's whole text equals `rules["expected"]` (no normalisation: a trailing
    newline matters). A None / empty path scores 0.0.

    Raises: EvalError for a missing / undecodable file or rules without `expected`."""
    if not actual:
        return 0.0
    text = _read(actual, "compare_config")
    with input_errors("compare_config"):
        return score(text == rules["expected"])


_UNREADABLE = object()


def _load_json(path: Any, skip_first_line: bool) -> Any:
    """The parsed JSON file, or `_UNREADABLE` when it cannot be read or parsed."""
    try:
        with open(path) as file:
            if skip_first_line:
                file.readline()
            return json.load(file)
    except Exception:  # OSWorld: any failure to read or parse means "no data"
        return _UNREADABLE


def check_json_keybindings(actual: FilePath | None, expected: Any, **options: Any) -> float:
    """1.0 iff VS Code's `keybindings.json` (a JSON list; read whole, or after skipping its first
    line, VS Code's `// Place your key bindings...` comment) contains `expected["expected"]` (a
    binding object, compared as a whole). A file that is neither way a JSON list scores 0.0.

    Raises: EvalError when `expected` has no `expected`.
    """
    for skip in (False, True):
        data = _load_json(actual, skip)
        if isinstance(data, list):
            break
    else:
        return 0.0
    with input_errors("check_json_keybindings"):
        return score(expected["expected"] in data)


def check_json_settings(actual: FilePath | None, expected: Any, **options: Any) -> float:
    """1.0 iff the JSON file (VS Code's `settings.json`, a `.code-workspace`) has every key of
    `expected["expected"]` at top level with an equal value. A None path or a file that is not
    plain JSON (VS Code allows comments; OSWorld's parser does not) scores 0.0.

    Raises: EvalError when `expected` has no `expected` object.
    """
    if not actual:
        return 0.0
    data = _load_json(actual, skip_first_line=False)
    if data is _UNREADABLE:
        return 0.0
    with input_errors("check_json_settings"):
        for key, value in expected["expected"].items():
            if key not in data or data[key] != value:
                return 0.0
    return 1.0


def is_extension_installed(actual: Any, rules: Any, **options: Any) -> float:
    """`rules["type"]` `contain`: 1.0 iff `rules["expected"]` is a substring of `actual` (output of
    e.g. `code --list-extensions`); `not_contain`: 1.0 iff it is not.

    Raises: EvalError for another rule type or when `actual` is not text (the command failed)."""
    with input_errors("is_extension_installed"):
        kind = rules["type"]
        if kind == "contain":
            return score(rules["expected"] in actual)
        if kind == "not_contain":
            return score(rules["expected"] not in actual)
    raise EvalError(f"is_extension_installed: rule type must be 'contain' or 'not_contain', got {kind!r}")


def compare_result_files(src_path: FilePath | None, tgt_path: FilePath | None) -> float:
    """1.0 iff the result file (stripped) matches the expected one: when the expected text is a
    number, the result contains it verbatim or is a number within 1e-4 of it; otherwise the
    texts are equal. A None path scores 0.0.

    Raises: EvalError when a file is missing or cannot be decoded."""
    if not src_path or not tgt_path:
        return 0.0
    result = _read(src_path, "compare_result_files").strip()
    expected = _read(tgt_path, "compare_result_files").strip()
    try:
        expected_number = float(expected)
        if expected in result:
            return 1.0
        return score(abs(float(result) - expected_number) < NUMBER_TOLERANCE)
    except ValueError:
        return score(result == expected)


def _pdf_text(data: bytes) -> str:
    return "".join(page.extract_text() for page in PdfReader(io.BytesIO(data)).pages)


def _same_member(name: str, first: bytes, second: bytes) -> bool:
    if name.lower().endswith(".pdf"):
        ratio = difflib.SequenceMatcher(None, _pdf_text(first), _pdf_text(second)).ratio()
        return ratio >= PDF_TEXT_SIMILARITY
    return first == second


def compare_zip_files(actual: FilePath | None, expected: FilePath | None, **options: Any) -> float:
    """1.0 iff the two zip archives hold the same member names and each member is byte-equal, except
    PDFs, whose extracted text must be at least 95% similar (difflib ratio). A None / empty
    `actual` scores 0.0.

    Text extraction uses pypdf (OSWorld: PyPDF2, its unmaintained predecessor) on the bytes in
    memory (OSWorld writes them to `temp.pdf` in its working directory first).
    Raises: EvalError for a missing or corrupt archive or PDF.
    """
    if not actual:
        return 0.0
    with input_errors("compare_zip_files", zipfile.BadZipFile, zipfile.LargeZipFile, PyPdfError):
        with zipfile.ZipFile(Path(actual)) as first, zipfile.ZipFile(given_path(expected, "expected")) as second:
            names = set(first.namelist())
            if names != set(second.namelist()):
                return 0.0
            for name in sorted(names):
                if not _same_member(name, first.read(name), second.read(name)):
                    return 0.0
    return 1.0
