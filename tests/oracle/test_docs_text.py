"""Differential tests of the docs text metrics (`services/runner/osworld/metrics/docs/text.py`)
against OSWorld's own `desktop_env/evaluators/metrics/docs.py`: every task of
`test_nogdrive.json` that uses `compare_docx_files`, `compare_docx_files_and_ignore_new_lines`,
`compare_references` or `compare_unique_train_records`, with its options verbatim, on a gold file
and agent results built as the task describes, plus edge cases."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from docx import Document

from services.runner.osworld.metrics.docs import (
    compare_docx_files,
    compare_docx_files_and_ignore_new_lines,
    compare_references,
    compare_unique_train_records,
)
from tests.oracle.client import Oracle
from tests.oracle.docx_fixtures import Case, docx, lo_docs
from tests.oracle.office_support import agree, metric_uses, oracle_raises, tasks_using

__all__ = ["lo_docs"]  # the session fixture, imported for pytest

DOCS = "metrics.docs"
STUBS = ("easyocr",)

SENTENCES = ["Tutorials start in week two.", "Attendance is compulsory.", "Bring the readings to class."]
ESSAY = ["Cocoa and health", "Cocoa is rich in flavonoids.", "Studies link cocoa to lower blood pressure.",
         "Dark chocolate has the most flavonoids [5].", "References",
         "[1] Smith, J. (2001). Cocoa. Food Journal, 3(1), 1-10."]
REFERENCE = ("[5] Steinberg, F. M., Bearden, M. M., & Keen, C. L. (2003). Cocoa and chocolate flavonoids: "
             "Implications for cardiovascular health. Journal of the American Dietetic Association, 103(2), "
             "215-223. doi: 10.1053/jada.2003.50028")
PRESENTATION = ["PRESENTATION INSTRUCTIONS", "Each GROUP presents for TEN minutes.", "Slides are DUE on Friday."]
GEOGRAPHY = ["geography and magical realism", "the novel maps an imagined town onto real places."]
NOTES = ["Welcome everyone and introduce the topic.", "Explain the three key findings.", "Thank the audience."]
ANSWERS = ["Test 1", "1. A", "2. C", "Test 2", "1. B", "2. D", "Test 3", "1. C", "2. A"]
SCRIPT = ["Slide 1: Forests of the world", "Forests cover a third of the land.", "Slide 2: Why they matter",
          "They store carbon and shelter wildlife."]
PAPERS = ["Title: Paper A; Authors: Li et al.; Affiliation: HKU", "Title: Paper B; Authors: Wu; Affiliation: CMU",
          "Title: Paper C; Authors: Kim; Affiliation: KAIST"]
WEB = ["Searching", "People use search to find content within an app.", "Best practices",
       "Make search easy to find and display results quickly."]


def _compare_docx_cases(task_id: str, tmp: Path) -> tuple[list[str], list[Case]]:
    """(gold file per metric use, agent results) for a task using compare_docx_files."""
    builders: dict[str, Callable[[], tuple[list[str], list[Case]]]] = {
        "0b17a146-2934-46c7-8727-73ff6b6483e8": lambda: (
            [docx(tmp / "gold.docx", ["Water facts", [("H", {}), ("2", {"subscript": True}), ("O", {})]])],
            [Case("subscript", docx(tmp / "good.docx", ["Water facts", [("H", {}), ("2", {"subscript": True}),
                                                                         ("O", {})]]), [1.0]),
             Case("text changed", docx(tmp / "typo.docx", ["Water facts", "H 2 O"]), [0.0])]),
        "88fe4b2d-3040-4c70-9a70-546a47764b48": lambda: (
            [docx(tmp / "gold1.docx", [p for s in SENTENCES for p in (s, "")]),
             docx(tmp / "gold2.docx", [p for s in SENTENCES for p in (s, "")][:-1]),
             docx(tmp / "gold3.docx", [p for s in SENTENCES for p in (s, " ")])],
            [Case("blank line after each", docx(tmp / "good.docx", [p for s in SENTENCES for p in (s, "")]),
                  [1.0, 0.0, 0.0]),
             Case("no blank lines", docx(tmp / "bad.docx", SENTENCES), [0.0, 0.0, 0.0]),
             Case("one paragraph", docx(tmp / "same.docx", [" ".join(SENTENCES)]), [0.0, 0.0, 0.0])]),
        "adf5e2c3-64c7-4644-b7b6-d2f0167927e7": lambda: (
            [docx(tmp / "gold.docx", ESSAY + [REFERENCE])],
            [Case("reference and citation", docx(tmp / "good.docx", ESSAY + [REFERENCE]), [1.0]),
             Case("citation missing", docx(tmp / "bad.docx", ESSAY[:3] + ["Dark chocolate has the most flavonoids "
                                                                         "<add here>."] + ESSAY[4:] + [REFERENCE]),
                  [0.0])]),
        "d53ff5ee-3b1a-431e-b2be-30ed2673079b": lambda: (
            [docx(tmp / "gold.docx", [p.lower() for p in PRESENTATION])],
            [Case("lowercase", docx(tmp / "good.docx", [p.lower() for p in PRESENTATION]), [1.0]),
             Case("left uppercase", docx(tmp / "bad.docx", PRESENTATION[:1] + [p.lower() for p in PRESENTATION[1:]]),
                  [0.0])]),
        "e528b65e-1107-4b8c-8988-490e4fece599": lambda: (
            [docx(tmp / "gold.docx", [p.title() for p in GEOGRAPHY])],
            [Case("title case", docx(tmp / "good.docx", [p.title() for p in GEOGRAPHY]), [1.0]),
             Case("sentence case", docx(tmp / "bad.docx", [p.capitalize() for p in GEOGRAPHY]), [0.0])]),
        "51f5801c-18b3-4f25-b0c3-02f85507a078": lambda: (
            [docx(tmp / "gold.docx", NOTES)],
            [Case("notes with blank lines", docx(tmp / "good.docx", [NOTES[0], "", NOTES[1], "  ", NOTES[2]]), [1.0]),
             Case("a note missing", docx(tmp / "bad.docx", NOTES[:2]), [0.0])]),
        "da52d699-e8d2-4dc5-9191-a2199e0b6a9b": lambda: (
            [docx(tmp / "gold.docx", ["Out of the Silent Planet"])],
            [Case("slowest book", docx(tmp / "good.docx", ["Out of the Silent Planet"]), [1.0]),
             Case("another book", docx(tmp / "bad.docx", ["The Hobbit"]), [0.0])]),
        "68a25bd4-59c7-4f4d-975e-da0c8509c848": lambda: (
            [docx(tmp / "gold.docx", ["Attention Is All You Need"])],
            [Case("citing paper", docx(tmp / "good.docx", ["Attention Is All You Need"]), [1.0]),
             Case("other paper", docx(tmp / "bad.docx", ["BERT"]), [0.0])]),
        "1f18aa87-af6f-41ef-9853-cdb8f32ebdea": lambda: (
            [docx(tmp / "gold.docx", ANSWERS)],
            [Case("lowercase answers", docx(tmp / "good.docx", [a.lower() for a in ANSWERS]), [1.0]),
             Case("wrong answer", docx(tmp / "bad.docx", ANSWERS[:-1] + ["2. B"]), [0.0])]),
        "bb83cab4-e5c7-42c7-a67b-e46068032b86": lambda: (
            [docx(tmp / "gold.docx", SCRIPT)],
            [Case("all text, other order", docx(tmp / "good.docx", list(reversed(SCRIPT)) + [""]), [1.0]),
             Case("half the text", docx(tmp / "half.docx", SCRIPT[:2]), [None])]),
        "aad10cd7-9337-4b62-b704-a857848cedf2": lambda: (
            [docx(tmp / "gold.docx", WEB)],
            [Case("same content", docx(tmp / "good.docx", WEB), [1.0]),
             Case("slightly different", docx(tmp / "close.docx", WEB[:3] + ["Make search easy to find."]), [None])]),
        "98e8e339-5f91-4ed2-b2b2-12647cb134f4": lambda: (
            [docx(tmp / "gold.docx", ["print('a')", "print('b')", "print('c')"])],
            [Case("concatenated", docx(tmp / "good.docx", ["print('a')", "print('b')", "print('c')"]), [1.0]),
             Case("with separators", docx(tmp / "bad.docx", ["print('a')", "---", "print('b')", "---",
                                                             "print('c')"]), [0.0])]),
        "236833a3-5704-47fc-888c-4f298f09f799": lambda: (
            [docx(tmp / "gold.docx", PAPERS)],
            [Case("shuffled", docx(tmp / "good.docx", [PAPERS[2], PAPERS[0], PAPERS[1]]), [1.0]),
             # OSWorld sorts the paragraphs before lowering their case: an upper-cased line moves
             Case("shuffled, one upper-cased", docx(tmp / "upper.docx", [PAPERS[2].upper(), PAPERS[0], PAPERS[1]]),
                  [0.0]),
             Case("a paper missing", docx(tmp / "bad.docx", PAPERS[:2]), [0.0])]),
    }
    return builders[task_id]()


@pytest.mark.parametrize("task_id", tasks_using("compare_docx_files"))
def test_compare_docx_files_on_the_tasks(task_id: str, oracle: Oracle, tmp_path: Path) -> None:
    uses = metric_uses(task_id, "compare_docx_files")
    golds, cases = _compare_docx_cases(task_id, tmp_path)
    assert len(golds) == len(uses)
    for case in cases:
        for (options, _), gold, expected in zip(uses, golds, case.scores, strict=True):
            value = agree(oracle, DOCS, compare_docx_files, case.result, gold, stubs=STUBS, **options)
            if expected is not None:
                assert value == expected, f"{case.label}: {value}"


OPTION_SETS = [{}, {"ignore_blanks": False}, {"ignore_blanks": False, "fuzzy_match": True},
               {"ignore_case": True, "ignore_blanks": False}, {"content_only": True, "ignore_case": True},
               {"delete_empty_lines": True, "ignore_blanks": False}, {"ignore_order": True, "fuzzy_match": True}]


@pytest.mark.parametrize("options", OPTION_SETS, ids=[str(o) for o in OPTION_SETS])
def test_compare_docx_files_options_and_edge_cases(options: dict[str, object], oracle: Oracle, tmp_path: Path,
                                                    lo_docs: dict[str, str]) -> None:
    gold = docx(tmp_path / "gold.docx", ["First line", "", "Second  line"])
    variants = [docx(tmp_path / "same.docx", ["First line", "", "Second  line"]),
                docx(tmp_path / "case.docx", ["FIRST line", "", "Second line"]),
                docx(tmp_path / "order.docx", ["Second  line", "First line", ""]),
                docx(tmp_path / "blanks.docx", ["First line", "Second line"]),
                docx(tmp_path / "empty.docx", []), None, "", str(tmp_path / "missing.docx"),
                lo_docs["script_clean.odt"]]
    (tmp_path / "text.docx").write_text("not a zip")
    variants.append(str(tmp_path / "text.docx"))
    for result in variants:
        agree(oracle, DOCS, compare_docx_files, result, gold, stubs=STUBS, **options)
    agree(oracle, DOCS, compare_docx_files, str(tmp_path / "empty.docx"), str(tmp_path / "empty.docx"),
          stubs=STUBS, **options)
    # OpenDocument text as Writer saves it: paragraphs and their spans
    assert agree(oracle, DOCS, compare_docx_files, lo_docs["script_clean.odt"], lo_docs["script_marked.odt"],
                 stubs=STUBS, **options) == 1.0
    agree(oracle, DOCS, compare_docx_files, lo_docs["script_edited.odt"], lo_docs["script_marked.odt"],
          stubs=STUBS, **options)


def test_compare_docx_files_raises_where_osworld_does(oracle: Oracle, tmp_path: Path) -> None:
    gold = docx(tmp_path / "gold.docx", ["x"])
    assert oracle_raises(oracle, DOCS, compare_docx_files, [gold, gold], gold, stubs=STUBS) == "AttributeError"


GEMINI = ["The Iliad is an epic poem attributed to Homer.", "Achilles is the hero of the Iliad."]


@pytest.mark.parametrize("task_id", tasks_using("compare_docx_files_and_ignore_new_lines"))
def test_compare_docx_files_and_ignore_new_lines_on_the_tasks(task_id: str, oracle: Oracle, tmp_path: Path) -> None:
    [(options, _)] = metric_uses(task_id, "compare_docx_files_and_ignore_new_lines")
    gold = docx(tmp_path / "gold.docx", GEMINI)
    cases = [Case("blank lines between", docx(tmp_path / "good.docx", [GEMINI[0], "", "", GEMINI[1], ""]), [1.0]),
             Case("one sentence missing", docx(tmp_path / "bad.docx", GEMINI[:1]), [0.0]),
             Case("merged", docx(tmp_path / "merged.docx", [" ".join(GEMINI)]), [0.0]),
             Case("missing file", str(tmp_path / "none.docx"), [0.0]), Case("none", None, [0.0])]  # type: ignore[arg-type]
    for case in cases:
        for opts in (options, {}):
            value = agree(oracle, DOCS, compare_docx_files_and_ignore_new_lines, case.result, gold, stubs=STUBS,
                          **opts)
            if opts == options:
                assert value == case.scores[0], case.label
    agree(oracle, DOCS, compare_docx_files_and_ignore_new_lines, gold, str(tmp_path / "gold.odt"), stubs=STUBS)


APA7 = ["Case study", "Text of the study.", "References",
        "Brown, T. (2019). Learning in context. Academic Press.",
        "Nguyen, H., & Lee, K. (2021). Group work online. Journal of Education, 12(3), 45-60. "
        "https://doi.org/10.1000/jed.2021.3"]
APA6 = APA7[:3] + ["Brown, T. (2019). Learning in context. New York, NY: Academic Press.",
                   "Nguyen, H. & Lee, K. (2021). Group work online. Journal of Education, 12(3), pp. 45-60. "
                   "doi:10.1000/jed.2021.3"]


@pytest.mark.parametrize("task_id", tasks_using("compare_references"))
def test_compare_references_on_the_tasks(task_id: str, oracle: Oracle, tmp_path: Path) -> None:
    [(options, _)] = metric_uses(task_id, "compare_references")
    gold = docx(tmp_path / "gold.docx", APA7)
    nearly = APA7[:4] + [APA7[4].replace("https://doi.org/", "https://doi.org/ ")]
    cases = [Case("fixed", docx(tmp_path / "good.docx", APA7 + [""]), [1.0]),
             Case("nearly fixed", docx(tmp_path / "near.docx", nearly), [None]),
             Case("left in APA 6", docx(tmp_path / "bad.docx", APA6), [0.0]),
             Case("no references heading", docx(tmp_path / "nohead.docx", APA7[:2] + APA7[3:]), [0.0]),
             Case("a reference dropped", docx(tmp_path / "short.docx", APA7[:4]), [0.0])]
    for case in cases:
        value = agree(oracle, DOCS, compare_references, case.result, gold, stubs=STUBS, **options)
        if case.scores[0] is not None:
            assert value == case.scores[0], case.label
    assert 0.0 < agree(oracle, DOCS, compare_references, cases[1].result, gold, stubs=STUBS, **options) < 1.0
    plain = docx(tmp_path / "plain.docx", APA7[:2])
    assert agree(oracle, DOCS, compare_references, plain, plain, stubs=STUBS) == 1.0
    agree(oracle, DOCS, compare_references, cases[2].result, gold, stubs=STUBS)  # default base 0.5
    agree(oracle, DOCS, compare_references, None, gold, stubs=STUBS)


RECORDS = ["06:00:01, T101, S01, 1", "06:02:10, T102, S01, 2", "06:05:00, T101, S02, 1",
           "06:07:30, T103, S03, 2", "06:09:45, T102, S02, 1"]
UNIQUE = [RECORDS[0], RECORDS[1], RECORDS[3]]


@pytest.mark.parametrize("task_id", tasks_using("compare_unique_train_records"))
def test_compare_unique_train_records_on_the_tasks(task_id: str, oracle: Oracle, tmp_path: Path) -> None:
    [(options, expected)] = metric_uses(task_id, "compare_unique_train_records")
    assert expected["multi"] and expected["gives"] == [0, 1]  # [gold, initial] as one list argument
    gold = docx(tmp_path / "gold.docx", UNIQUE)
    initial = docx(tmp_path / "initial.docx", ["time, train, station, platform"] + RECORDS)
    cases = [Case("first call of each train", docx(tmp_path / "good.docx", UNIQUE + [""]), [1.0]),
             Case("duplicates kept", docx(tmp_path / "dupes.docx", RECORDS), [0.0]),
             Case("a train dropped", docx(tmp_path / "short.docx", UNIQUE[:2]), [0.0]),
             Case("a line edited", docx(tmp_path / "edit.docx", [RECORDS[0], RECORDS[1], "06:07:31, T103, S03, 2"]),
                  [0.0]),
             Case("last call kept", docx(tmp_path / "last.docx", [RECORDS[2], RECORDS[3], RECORDS[4]]), [1.0])]
    for case in cases:
        value = agree(oracle, DOCS, compare_unique_train_records, case.result, [gold, initial], stubs=STUBS,
                      **options)
        assert value == case.scores[0], case.label
    for expected_files in (gold, [gold], [gold, None], [gold, str(tmp_path / "missing.docx")], None):
        agree(oracle, DOCS, compare_unique_train_records, cases[0].result, expected_files, stubs=STUBS)
    agree(oracle, DOCS, compare_unique_train_records, None, [gold, initial], stubs=STUBS)


def test_docs_paragraph_text_comes_from_runs_and_hyperlinks(oracle: Oracle, tmp_path: Path) -> None:
    """A paragraph with a hyperlink run (python-docx reads runs and hyperlinks) compares as OSWorld's."""
    document = Document()
    paragraph = document.add_paragraph("See ")
    link = paragraph._p.makeelement("{http://schemas.openxmlformats.org/wordprocessingml/2006/main}hyperlink", {})
    run = paragraph.add_run("the site")
    link.append(run._r)
    paragraph._p.append(link)
    document.save(str(tmp_path / "link.docx"))
    assert agree(oracle, DOCS, compare_docx_files, str(tmp_path / "link.docx"),
                 docx(tmp_path / "plain.docx", ["See the site"]), stubs=STUBS) == 1.0
