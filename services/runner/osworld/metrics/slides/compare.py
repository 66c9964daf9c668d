"""`compare_pptx_files` (OSWorld `desktop_env/evaluators/metrics/slides.py`): whether a result
presentation matches the expected one, slide by slide and shape by shape, as far as the task's
options ask (see `options.PptxOptions`).

Order of the checks, as OSWorld's: slide count; per slide (1-based index) background color, notes
text, shape count; per shape pair the position/size options (`geometry`), table cells, text frames
and run formatting (`text`); per slide the text shapes inside groups. The first difference scores
0.0; no difference scores 1.0.
"""

from __future__ import annotations

import logging
from typing import Any

from pptx import Presentation
from pptx.enum.dml import MSO_FILL

from services.runner.osworld.crash import crashes_as_eval_error
from services.runner.osworld.metrics.slides.geometry import TABLE, geometry_fails, has_text
from services.runner.osworld.metrics.slides.options import PptxOptions
from services.runner.osworld.metrics.slides.text import (
    all_text_shapes_fail,
    table_fails,
    text_frame_fails,
    text_shapes,
)

logger = logging.getLogger(__name__)


def background_color(slide: Any) -> Any:
    """RGB of a slide's solid background, or of its master's when the slide has its own none (fill
    type BACKGROUND); None for any other fill. Raises: AttributeError for a solid fill given as a
    theme color (OSWorld reads `.rgb` unguarded)."""
    fill = slide.background.fill
    if fill.type == MSO_FILL.SOLID:
        return fill.fore_color.rgb
    if fill.type == MSO_FILL.BACKGROUND:
        master_fill = slide.slide_layout.slide_master.background.fill
        return master_fill.fore_color.rgb if master_fill.type == MSO_FILL.SOLID else None
    return None


def notes_text(slide: Any) -> str:
    """Text of the slide's notes (python-pptx creates an empty notes page when there is none).
    Raises: AttributeError when the notes page has no body placeholder (OSWorld's crash too)."""
    return str(slide.notes_slide.notes_text_frame.text)


def _shape_pair_fails(slide_idx: int, shape1: Any, shape2: Any, opts: PptxOptions) -> bool:
    if opts.enable_debug:
        # OSWorld's debug logging (on by default) reads both shape types, which python-pptx cannot
        # name for some shapes: read them too, so such a file fails here as it fails there.
        logger.debug("slide %d: shape types %s / %s", slide_idx, shape1.shape_type, shape2.shape_type)
    if geometry_fails(slide_idx, shape1, shape2, opts):
        return True
    if shape1.shape_type == TABLE and table_fails(shape1.table, shape2.table, opts):
        return True
    return has_text(shape1) and has_text(shape2) and text_frame_fails(shape1, shape2, opts)


def _slide_fails(slide_idx: int, slide1: Any, slide2: Any, opts: PptxOptions) -> bool:
    if background_color(slide1) != background_color(slide2) and opts.examine_background_color:
        return True
    if notes_text(slide1).strip() != notes_text(slide2).strip() and opts.examine_note:
        return True
    shapes1, shapes2 = text_shapes(slide1), text_shapes(slide2)
    if len(slide1.shapes) != len(slide2.shapes):
        return True
    for shape1, shape2 in zip(slide1.shapes, slide2.shapes, strict=True):
        if _shape_pair_fails(slide_idx, shape1, shape2, opts):
            logger.debug("slide %d: shapes %r / %r differ", slide_idx, shape1.name, shape2.name)
            return True
    return all_text_shapes_fail(shapes1, shapes2, opts)


@crashes_as_eval_error("compare_pptx_files")
def compare_pptx_files(file1_path: Any, file2_path: Any, **options: Any) -> float:
    """OSWorld `compare_pptx_files`: 1.0 when the presentation at `file1_path` (the result) matches
    the one at `file2_path` (expected) under `options` (OSWorld's names and defaults, see
    `PptxOptions`; unknown names are ignored), else 0.0.

    A None path opens python-pptx's default (empty) presentation, as in OSWorld.
    Raises: EvalError for a file python-pptx cannot open and for the inputs OSWorld's function
    crashes on (a theme-colored background, a shape without a size of its own on one side only,
    a table facing a non-table shape).
    """
    prs1 = Presentation(file1_path)
    prs2 = Presentation(file2_path)
    opts = PptxOptions.from_options(options)
    if len(prs1.slides) != len(prs2.slides) and opts.examine_number_of_slides:
        return 0.0
    for slide_idx, (slide1, slide2) in enumerate(zip(prs1.slides, prs2.slides, strict=False), start=1):
        if _slide_fails(slide_idx, slide1, slide2, opts):
            return 0.0
    return 1.0
