"""Differential tests of the docs formatting metrics (`metrics/docs/formatting.py`) against
OSWorld's `desktop_env/evaluators/metrics/docs.py`, on each task that uses them (options and
rules verbatim from the task), with documents built as the task describes, as LibreOffice saves
them, and edge cases."""

from __future__ import annotations

from pathlib import Path

import pytest
from docx import Document
from docx.enum.text import WD_PARAGRAPH_ALIGNMENT, WD_TAB_ALIGNMENT

from services.runner.osworld.metrics.docs import (
    check_highlighted_words,
    check_italic_font_size_14,
    check_tabstops,
    compare_docx_files,
    compare_font_names,
    compare_line_spacing,
    compare_subscript_contains,
    evaluate_colored_words_in_tables,
    evaluate_strike_through_last_paragraph,
    is_first_line_centered,
)
from tests.oracle.client import Oracle
from tests.oracle.docx_fixtures import (
    NOVEL,
    TABS_RESULT,
    TABS_RESULT_BAD,
    add_table,
    docx,
    lo_docs,
    novel_doc,
    tab_doc,
)
from tests.oracle.office_support import agree, metric_uses, oracle_raises, rules_of, tasks_using

__all__ = ["lo_docs"]

DOCS = "metrics.docs"
STUBS = ("easyocr",)
ESSAY = ["Introduction to the essay.", "The body argues the point.", "In conclusion, it holds."]


def test_compare_line_spacing_double_first_two(oracle: Oracle, tmp_path: Path, lo_docs: dict[str, str]) -> None:
    task_id = "0810415c-bde4-4443-9047-d5f70165a697"
    assert len(metric_uses(task_id, "compare_line_spacing")) == 2 and task_id in tasks_using("compare_line_spacing")
    golds = [novel_doc(tmp_path / "gold.docx", 2), lo_docs["novel_double2.docx"]]
    results = {"python-docx result": (novel_doc(tmp_path / "good.docx", 2), 1.0),
               "Writer result": (lo_docs["novel_double2.docx"], None),
               "only the first": (novel_doc(tmp_path / "one.docx", 1), 0.0),
               "all double": (novel_doc(tmp_path / "all.docx", 4), 0.0),
               "text changed": (docx(tmp_path / "text.docx", NOVEL[:3] + ["Quiz on Monday."]), 0.0)}
    for label, (result, expected) in results.items():
        values = [agree(oracle, DOCS, compare_line_spacing, result, gold, stubs=STUBS) for gold in golds]
        if expected is not None:
            assert max(values) == expected, label
    assert max(agree(oracle, DOCS, compare_line_spacing, lo_docs["novel_double2.docx"], gold, stubs=STUBS)
               for gold in golds) == 1.0


def test_compare_line_spacing_essay(oracle: Oracle, tmp_path: Path) -> None:
    assert "b21acd93-60fd-4127-8a43-2f5178f4a830" in tasks_using("compare_line_spacing")

    def essay(path: Path, spacings: list[float | None]) -> str:
        document = Document()
        for text, spacing in zip(ESSAY, spacings, strict=True):
            document.add_paragraph(text).paragraph_format.line_spacing = spacing
        document.save(str(path))
        return str(path)

    gold = essay(tmp_path / "gold.docx", [1.0, 2.0, 1.5])
    for spacings, expected in (([1.0, 2.0, 1.5], 1.0), ([2.0, 2.0, 2.0], 0.0), ([None, 2.0, 1.5], 0.0)):
        assert agree(oracle, DOCS, compare_line_spacing, essay(tmp_path / f"r{spacings}.docx", spacings), gold,
                     stubs=STUBS) == expected
    for result in (None, str(tmp_path / "missing.docx")):
        agree(oracle, DOCS, compare_line_spacing, result, gold, stubs=STUBS)


@pytest.mark.parametrize("task_id", tasks_using("check_tabstops"))
def test_check_tabstops_on_the_tasks(task_id: str, oracle: Oracle, tmp_path: Path, lo_docs: dict[str, str]) -> None:
    [(options, _)] = metric_uses(task_id, "check_tabstops")
    right = WD_TAB_ALIGNMENT.RIGHT
    gold = tab_doc(tmp_path / "gold.docx", TABS_RESULT, [(right, 468)])
    cases = {"right tab at the margin": (tab_doc(tmp_path / "good.docx", TABS_RESULT, [(right, 468)]), 1.0),
             "as Writer saves it": (lo_docs["tabs_right.docx"], None),
             "right tab near the margin": (tab_doc(tmp_path / "near.docx", TABS_RESULT, [(right, 430)]), None),
             "four words before the tab": (tab_doc(tmp_path / "four.docx", TABS_RESULT_BAD, [(right, 468)]), 0.0),
             "left tab": (tab_doc(tmp_path / "left.docx", TABS_RESULT, [(WD_TAB_ALIGNMENT.LEFT, 468)]), 0.0),
             "no tab stop": (tab_doc(tmp_path / "none.docx", TABS_RESULT, []), 0.0),
             "a cleared style tab as well": (tab_doc(tmp_path / "clear.docx", TABS_RESULT,
                                                     [(WD_TAB_ALIGNMENT.CLEAR, 100), (right, 468)]), 1.0),
             "default left tab at 0 as well": (tab_doc(tmp_path / "zero.docx", TABS_RESULT,
                                                       [(WD_TAB_ALIGNMENT.LEFT, 0), (right, 468)]), 1.0)}
    for label, (result, expected) in cases.items():
        value = agree(oracle, DOCS, check_tabstops, result, gold, stubs=STUBS, **options)
        if expected is not None:
            assert value == expected, label
    near = agree(oracle, DOCS, check_tabstops, cases["right tab near the margin"][0], gold, stubs=STUBS, **options)
    assert 0.9 < near < 1.0
    agree(oracle, DOCS, check_tabstops, cases["four words before the tab"][0], gold, stubs=STUBS)  # no word rule
    oracle_raises(oracle, DOCS, check_tabstops, cases["right tab at the margin"][0], gold,
                  stubs=STUBS, word_number_split_by_tabstop=3, index=5)
    empty = docx(tmp_path / "empty.docx", [""])
    assert oracle_raises(oracle, DOCS, check_tabstops, empty, empty, stubs=STUBS) == "ZeroDivisionError"


@pytest.mark.parametrize("task_id", tasks_using("compare_subscript_contains"))
def test_compare_subscript_contains_on_the_tasks(task_id: str, oracle: Oracle, tmp_path: Path,
                                                 lo_docs: dict[str, str]) -> None:
    assert metric_uses(task_id, "compare_subscript_contains")
    h2o = ["Water", [("H", {}), ("2", {"subscript": True}), ("O is water.", {})]]
    gold = docx(tmp_path / "gold.docx", h2o)
    cases = {"subscript": (docx(tmp_path / "good.docx", h2o), 1.0), "as Writer saves it": (lo_docs["h2o.docx"], None),
             "superscript": (docx(tmp_path / "sup.docx", ["Water", [("H", {}), ("2", {"superscript": True}),
                                                                    ("O is water.", {})]]), 0.0),
             "plain": (docx(tmp_path / "plain.docx", ["Water", "H2O is water."]), 0.0)}
    for label, (result, expected) in cases.items():
        value = agree(oracle, DOCS, compare_subscript_contains, result, gold, stubs=STUBS)
        if expected is not None:
            assert value == expected, label
        agree(oracle, DOCS, compare_docx_files, result, gold, stubs=STUBS)  # the task's other metric
    agree(oracle, DOCS, compare_subscript_contains, None, gold, stubs=STUBS)


@pytest.mark.parametrize("task_id", tasks_using("compare_font_names"))
def test_compare_font_names_on_the_tasks(task_id: str, oracle: Oracle, tmp_path: Path) -> None:
    [rules] = rules_of(task_id, "compare_font_names")
    tnr = {"name": "Times New Roman"}
    cases = {"every run": (docx(tmp_path / "good.docx", [[("Dublin Zoo", tnr)], [("Opened ", tnr), ("1831", tnr)]]),
                           1.0),
             "one run left": (docx(tmp_path / "one.docx", [[("Dublin Zoo", tnr)], [("Opened ", {"name": "Arial"}),
                                                                                     ("1831", tnr)]]), 0.0),
             "style font only": (docx(tmp_path / "style.docx", ["Dublin Zoo"]), 0.0),
             "missing": (str(tmp_path / "missing.docx"), 0.0)}
    for label, (result, expected) in cases.items():
        assert agree(oracle, DOCS, compare_font_names, result, rules, stubs=STUBS) == expected, label
    oracle_raises(oracle, DOCS, compare_font_names, cases["every run"][0], {}, stubs=STUBS)
    assert agree(oracle, DOCS, compare_font_names, None, {}, stubs=STUBS) == 0.0


@pytest.mark.parametrize("task_id", tasks_using("is_first_line_centered"))
def test_is_first_line_centered_on_the_tasks(task_id: str, oracle: Oracle, tmp_path: Path) -> None:
    center = WD_PARAGRAPH_ALIGNMENT.CENTER
    heading = "Constitution of the Student Club"
    good = docx(tmp_path / "good.docx", [heading], alignment=center)
    left = docx(tmp_path / "left.docx", [heading, "Article 1"])
    assert agree(oracle, DOCS, is_first_line_centered, good, stubs=STUBS) == 1.0
    assert agree(oracle, DOCS, is_first_line_centered, left, stubs=STUBS) == 0.0
    assert agree(oracle, DOCS, is_first_line_centered, None, stubs=STUBS) == 0.0
    assert oracle_raises(oracle, DOCS, is_first_line_centered, docx(tmp_path / "empty.docx", []),
                         stubs=STUBS) == "IndexError"


COURSE = ["GEOG2169 course outline", "Assessment is by coursework.", "This paragraph repeats the aims."]


@pytest.mark.parametrize("task_id", tasks_using("evaluate_strike_through_last_paragraph"))
def test_evaluate_strike_through_last_paragraph_on_the_tasks(task_id: str, oracle: Oracle, tmp_path: Path,
                                                             lo_docs: dict[str, str]) -> None:
    struck = COURSE[:2] + [[("This paragraph ", {"strike": True}), ("repeats the aims.", {"strike": True})]]
    gold = docx(tmp_path / "gold.docx", struck)
    cases = {"struck": (docx(tmp_path / "good.docx", struck), 1.0),
             "half struck": (docx(tmp_path / "half.docx", COURSE[:2] + [[("This paragraph ", {"strike": True}),
                                                                         ("repeats the aims.", {})]]), 0.0),
             "double strike": (docx(tmp_path / "double.docx", COURSE[:2] + [[(COURSE[2], {"double_strike": True})]]),
                               0.0),
             "text changed": (docx(tmp_path / "text.docx", COURSE[:2] + [[("Deleted.", {"strike": True})]]), 0.0)}
    for label, (result, expected) in cases.items():
        assert agree(oracle, DOCS, evaluate_strike_through_last_paragraph, result, gold, stubs=STUBS) == expected, label
    lo_gold = docx(tmp_path / "lo_gold.docx", ["Course outline", "Redundant last paragraph"])
    agree(oracle, DOCS, evaluate_strike_through_last_paragraph, lo_docs["strike_last.docx"], lo_gold, stubs=STUBS)
    empty = docx(tmp_path / "empty.docx", [])
    assert oracle_raises(oracle, DOCS, evaluate_strike_through_last_paragraph, empty, empty,
                         stubs=STUBS) == "IndexError"


WORDS = [["all", "am", "are", "at"], ["ate", "be", "black", "brown"], ["but", "came", "did", "do"]]
RED, BLUE = (255, 0, 0), (0, 0, 255)


def _words_doc(path: Path, color_of: object) -> str:
    document = Document()
    document.add_paragraph("Dolch sight words: primer")
    add_table(document, WORDS, color_of)  # type: ignore[arg-type]
    document.save(str(path))
    return str(path)


@pytest.mark.parametrize("task_id", tasks_using("evaluate_colored_words_in_tables"))
def test_evaluate_colored_words_in_tables_on_the_tasks(task_id: str, oracle: Oracle, tmp_path: Path) -> None:
    [(options, _)] = metric_uses(task_id, "evaluate_colored_words_in_tables")

    def vowels_red(word: str) -> tuple[int, int, int]:
        return RED if word[0] in "aeiou" else BLUE

    gold = _words_doc(tmp_path / "gold.docx", vowels_red)
    cases = {"red and blue": (_words_doc(tmp_path / "good.docx", vowels_red), 1.0),
             "near red": (_words_doc(tmp_path / "near.docx", lambda w: (250, 2, 2) if w[0] in "aeiou" else BLUE), 1.0),
             "dark red": (_words_doc(tmp_path / "dark.docx", lambda w: (201, 33, 30) if w[0] in "aeiou" else BLUE),
                          0.0),
             "swapped": (_words_doc(tmp_path / "swap.docx", lambda w: BLUE if w[0] in "aeiou" else RED), 0.0)}
    for label, (result, expected) in cases.items():
        assert agree(oracle, DOCS, evaluate_colored_words_in_tables, result, gold, stubs=STUBS,
                     **options) == expected, label
    agree(oracle, DOCS, evaluate_colored_words_in_tables, cases["dark red"][0], gold, stubs=STUBS, threshold=40)
    uncolored = _words_doc(tmp_path / "plain.docx", lambda w: None)
    assert oracle_raises(oracle, DOCS, evaluate_colored_words_in_tables, uncolored, gold, stubs=STUBS) == "TypeError"


@pytest.mark.parametrize("task_id", tasks_using("check_italic_font_size_14"))
def test_check_italic_font_size_14_on_the_tasks(task_id: str, oracle: Oracle, tmp_path: Path,
                                                lo_docs: dict[str, str]) -> None:
    def assignment(path: Path, italic_size: float | None) -> str:
        return docx(path, ["Assignment 4", [("Read ", {"size": 12}), ("Hamlet", {"italic": True, "size": italic_size}),
                                            (" and answer.", {"size": 12})]])

    gold = assignment(tmp_path / "gold.docx", 14)
    for italic_size, expected in ((14, 1.0), (12, 0.0), (None, 0.0), (14.5, 0.0)):
        result = assignment(tmp_path / f"r{italic_size}.docx", italic_size)
        assert agree(oracle, DOCS, check_italic_font_size_14, result, gold, stubs=STUBS) == expected, italic_size
    lo_gold = docx(tmp_path / "lo_gold.docx", [[("Plain ", {}), ("slanted", {})]])
    assert agree(oracle, DOCS, check_italic_font_size_14, lo_docs["italic14.docx"], lo_gold, stubs=STUBS) == 1.0


@pytest.mark.parametrize("task_id", tasks_using("check_highlighted_words"))
def test_check_highlighted_words_on_the_tasks(task_id: str, oracle: Oracle, lo_docs: dict[str, str]) -> None:
    """The .odt files as LibreOffice writes them: highlighting is `fo:background-color="#ffff00"`
    in the automatic style of a `<text:span>`."""
    gold, marked, edited = lo_docs["script_clean.odt"], lo_docs["script_marked.odt"], lo_docs["script_edited.odt"]
    assert agree(oracle, DOCS, check_highlighted_words, gold, gold, stubs=STUBS) == 1.0
    assert agree(oracle, DOCS, check_highlighted_words, marked, gold, stubs=STUBS) == 0.0
    assert agree(oracle, DOCS, check_highlighted_words, edited, gold, stubs=STUBS) == 0.0
    assert agree(oracle, DOCS, check_highlighted_words, None, gold, stubs=STUBS) == 0.0
