"""Per-task fixtures of the `compare_table` differential tests: for each OSWorld task that scores
with `compare_table`, the expected workbook the task's rules imply and agent results (one that
should pass, realistic wrong ones), built from the task's instruction.

`CASES[task id prefix]` is a `Case`; the spec modules (`table_cases_calc`, `table_cases_multi`)
register theirs with `case(...)`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tests.oracle.workbooks import Book


@dataclass(frozen=True)
class Case:
    """`expected` (None: the task has no expected file), `candidates` label -> (result book, the
    score OSWorld gives it), `libreoffice`: also score LibreOffice-saved copies of every file
    (`sheet_print` tasks always are: their CSV exports come from LibreOffice)."""

    expected: Book | None
    candidates: dict[str, tuple[Book, float]] = field(default_factory=dict)
    libreoffice: bool = False


CASES: dict[str, Case] = {}


def case(task: str, expected: Book | None, right: Book | None = None, wrong: dict[str, Book] | None = None,
         libreoffice: bool = False, **scored: tuple[Book, float]) -> None:
    """Register the fixtures of task `task` (an id prefix): `right` (default: `expected`) scores
    1.0, each of `wrong` 0.0, `scored` label=(book, score) any other."""
    candidates: dict[str, tuple[Book, float]] = {}
    if right is not None or expected is not None:
        candidates["right"] = (right if right is not None else expected, 1.0)  # type: ignore[assignment]
    for label, book in (wrong or {}).items():
        candidates[f"wrong-{label}"] = (book, 0.0)
    candidates.update(scored)
    if task in CASES:
        raise ValueError(f"task {task} registered twice")
    CASES[task] = Case(expected, candidates, libreoffice)


def months(values: list[int]) -> list[list[object]]:
    """Rows `Jan..` with one value each (helper for sales tables)."""
    names = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    return [[names[i], v] for i, v in enumerate(values)]
