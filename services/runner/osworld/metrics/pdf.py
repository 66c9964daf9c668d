"""OSWorld `desktop_env/evaluators/metrics/pdf.py`: PDF checks."""

from __future__ import annotations

import operator
from typing import Any

from pypdf import PdfReader

from services.runner.osworld.crash import crashes_as_eval_error
from services.runner.osworld.metrics.base import FilePath, Metric, given, score


@crashes_as_eval_error("check_pdf_pages")
def check_pdf_pages(pdf_file: FilePath | None, rules: dict[str, Any] | None = None) -> float:
    """1.0 iff the PDF's page count (pypdf) stands in `rules["relation"]` (an `operator` function
    name: eq, ne, lt, le, gt, ge) to `rules["ref_value"]`; a missing file (None) scores 0.0.
    Raises: EvalError for a file that is not a PDF or a bad rule (as OSWorld)."""
    if pdf_file is None:
        return 0.0
    pages = len(PdfReader(pdf_file).pages)
    return score(bool(getattr(operator, given(rules, "rules")["relation"])(pages, given(rules, "rules")["ref_value"])))


METRICS: dict[str, Metric] = {
    "check_pdf_pages": check_pdf_pages,
}
