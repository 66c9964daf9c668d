"""Differential tests of `compare_pptx_files` (`services/runner/osworld/metrics/slides/`) against
OSWorld's own `desktop_env/evaluators/metrics/slides.py`: every task of `test_nogdrive.json` that
uses it, with each use's options verbatim (the gold file of that use, agent results), the same
files as LibreOffice Impress saves them for a sample of tasks, and edge cases."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from services.runner.osworld.metrics.slides import compare_pptx_files
from tests.oracle.client import Oracle
from tests.oracle.impress_files import LIBREOFFICE_SAMPLE, TASKS, ImpressFiles, impress_files
from tests.oracle.office_support import agree, metric_uses, oracle_raises, tasks_using
from tests.oracle.pptx_fixtures import SlideSpec, deck, on
from tests.oracle.pptx_tasks_a import TaskFiles

__all__ = ["impress_files"]  # the session fixture, imported for pytest

SLIDES = "metrics.slides"
def _check_task(oracle: Oracle, task_id: str, files: TaskFiles) -> None:
    uses = metric_uses(task_id, "compare_pptx_files")
    golds, cases = files
    assert len(golds) == len(uses), "one gold file per use of the metric"
    for label, result, best in cases:
        values = [agree(oracle, SLIDES, compare_pptx_files, result, gold, **options)
                  for (options, _), gold in zip(uses, golds, strict=True)]
        if best is not None:
            assert max(values) == best, f"{label}: {values}"


def test_every_task_has_fixtures() -> None:
    assert sorted(TASKS) == sorted(tasks_using("compare_pptx_files"))


@pytest.mark.parametrize("task_id", tasks_using("compare_pptx_files"))
def test_compare_pptx_files_on_the_tasks(task_id: str, oracle: Oracle, tmp_path: Path) -> None:
    _check_task(oracle, task_id, TASKS[task_id](tmp_path))


@pytest.mark.parametrize("task_id", LIBREOFFICE_SAMPLE)
def test_compare_pptx_files_as_impress_saves(task_id: str, oracle: Oracle, impress_files: ImpressFiles) -> None:
    golds, cases = impress_files.tasks[task_id]
    _check_task(oracle, task_id, (golds, cases))


def test_impress_saved_result_against_a_python_pptx_gold(oracle: Oracle, tmp_path: Path,
                                                         impress_files: ImpressFiles) -> None:
    """An agent's file saved by Impress against a gold file written by another tool: both agree."""
    for task_id in LIBREOFFICE_SAMPLE:
        golds, cases = TASKS[task_id](tmp_path / task_id[:8])
        for (options, _), gold in zip(metric_uses(task_id, "compare_pptx_files"), golds, strict=True):
            for _, result, _ in impress_files.tasks[task_id][1]:
                agree(oracle, SLIDES, compare_pptx_files, result, gold, **options)


OPTION_SETS = [{}, {"examine_shape": False}, {"examine_number_of_slides": False}, {"enable_debug": False},
               {"examine_text": False, "examine_alignment": False}, {"examine_shape_for_shift_size": True},
               {"examine_note": False, "examine_background_color": False, "examine_bullets": False},
               {"approximately_tolerance": 0.5, "_note": "ignored"}]


@pytest.fixture(scope="module")
def edge_decks(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[str | None]]:
    """(gold, results) for the option sets: same, a slide fewer, a grouped text box more, the title
    nudged, an italic body, an explicit non-bold body, an indent level changed, no file."""
    tmp = tmp_path_factory.mktemp("edge_decks")
    base = [SlideSpec("Title", ["Elaborate on what you want to discuss."]), SlideSpec("Second", ["a", ("b", 1)])]
    return deck(tmp / "gold.pptx", base), [
        deck(tmp / "same.pptx", base), deck(tmp / "short.pptx", base[:1]),
        deck(tmp / "grouped.pptx", base, _group_text), deck(tmp / "moved.pptx", base, _nudge),
        deck(tmp / "italic.pptx", base, on(1, 1, italic=True)),
        deck(tmp / "false_bold.pptx", base, on(1, 1, bold=False)),
        deck(tmp / "level.pptx", [base[0], SlideSpec("Second", ["a", ("b", 2)])]), None]


@pytest.mark.parametrize("options", OPTION_SETS, ids=[str(o) for o in OPTION_SETS])
def test_compare_pptx_files_options_and_edge_cases(options: dict[str, Any], oracle: Oracle,
                                                   edge_decks: tuple[str, list[str | None]]) -> None:
    gold, results = edge_decks
    for result in results:
        agree(oracle, SLIDES, compare_pptx_files, result, gold, **options)
    agree(oracle, SLIDES, compare_pptx_files, None, None, **options)


def _group_text(prs: object) -> None:
    from pptx.util import Cm
    group = prs.slides[0].shapes.add_group_shape()  # type: ignore[attr-defined]
    group.shapes.add_textbox(Cm(1), Cm(1), Cm(5), Cm(2)).text_frame.text = "inside a group"


def _nudge(prs: object) -> None:
    title = prs.slides[0].shapes[0]  # type: ignore[attr-defined]
    title.left, title.top, title.width, title.height = title.left + 20000, title.top, title.width, title.height


def _theme_background(prs: object) -> None:
    from pptx.enum.dml import MSO_THEME_COLOR
    fill = prs.slides[0].background.fill  # type: ignore[attr-defined]
    fill.solid()
    fill.fore_color.theme_color = MSO_THEME_COLOR.ACCENT_1


def _drop_box_position(prs: object) -> None:
    box = prs.slides[0].shapes[-1]  # type: ignore[attr-defined]
    xfrm = box._element.spPr.xfrm
    box._element.spPr.remove(xfrm)


def test_compare_pptx_files_on_inputs_osworld_crashes_on(oracle: Oracle, tmp_path: Path) -> None:
    """A theme-colored background (no RGB to read), a text box without a position of its own facing
    one with a position, a table facing a text box: OSWorld raises, ours raises EvalError."""
    boxed = [SlideSpec("Title", boxes=[(["note"], 2, 2, 5, 2)])]
    gold = deck(tmp_path / "gold.pptx", boxed)
    for result in (deck(tmp_path / "theme.pptx", boxed, _theme_background),
                   deck(tmp_path / "nopos.pptx", boxed, _drop_box_position)):
        oracle_raises(oracle, SLIDES, compare_pptx_files, result, gold)
    untitled = deck(tmp_path / "untitled.pptx", [SlideSpec(None, boxes=[(["note"], 2, 2, 5, 2)])])
    table = deck(tmp_path / "table.pptx", [SlideSpec(None, table=([["a"]], 2, 2, 5, 2))])
    assert oracle_raises(oracle, SLIDES, compare_pptx_files, table, untitled) == "AttributeError"
    agree(oracle, SLIDES, compare_pptx_files, untitled, table)  # a text box facing a table


def test_compare_pptx_files_raises_where_osworld_does(oracle: Oracle, tmp_path: Path) -> None:
    gold = deck(tmp_path / "gold.pptx", [SlideSpec("Title")])
    (tmp_path / "notes.pptx").write_text("not a presentation")
    assert oracle_raises(oracle, SLIDES, compare_pptx_files, str(tmp_path / "missing.pptx"), gold) \
        == "PackageNotFoundError"
    oracle_raises(oracle, SLIDES, compare_pptx_files, str(tmp_path / "notes.pptx"), gold)
