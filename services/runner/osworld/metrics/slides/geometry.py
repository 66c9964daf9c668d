"""Position and size checks of one shape pair in `compare_pptx_files` (OSWorld
`desktop_env/evaluators/metrics/slides.py`), in OSWorld's order.

Shape 1 is the result's, shape 2 the expected file's (for the `*_position` options, the task's
`expected` is the original file, and the result's shape must have moved past it). Slide numbers
are 1-based; EMU thresholds are OSWorld's (3600000 EMU = 10 cm, 4320000 = 12 cm, 1980000 = 5.5 cm).
"""

from __future__ import annotations

from typing import Any

from pptx.enum.shapes import MSO_SHAPE_TYPE

from services.runner.osworld.metrics.slides.options import Box, PptxOptions, approximately_equal, box, same_geometry

PICTURE = MSO_SHAPE_TYPE.PICTURE  # 13
TABLE = MSO_SHAPE_TYPE.TABLE  # 19
FREEFORM = MSO_SHAPE_TYPE.FREEFORM  # 5
TITLE_TEXT = "Product Comparison"
"""The title that `examine_title_bottom_position` expects lower in the result (OSWorld's task 15aece23)."""
SHIFT_SIZE_TEXT = "Elaborate on what you want to discuss."
"""The only text shape `examine_shape_for_shift_size` lets move or resize."""


def has_text(shape: Any) -> bool:
    """OSWorld's `hasattr(shape, "text")`: auto shapes, text boxes and placeholders (python-pptx adds
    an empty text body to a shape without one when asked, as it does for OSWorld)."""
    return hasattr(shape, "text")


LEFT, TOP, WIDTH, HEIGHT = 0, 1, 2, 3


def _title_bottom_fails(shape1: Any, shape2: Any, boxes: tuple[Box, Box], tolerance: Any) -> bool:
    (box1, box2) = boxes
    if has_text(shape1) and has_text(shape2) and shape1.text == shape2.text:
        return bool(shape1.text == TITLE_TEXT and (box1[TOP] <= box2[TOP] or box1[TOP] < 3600000))
    return not same_geometry(box1, box2, tolerance)


def _table_bottom_fails(slide_idx: int, shape1: Any, shape2: Any, boxes: tuple[Box, Box], tolerance: Any) -> bool:
    (box1, box2) = boxes
    if slide_idx == 3 and shape1.shape_type == TABLE and shape2.shape_type == TABLE:
        return bool(box1[TOP] <= box2[TOP] or box1[TOP] < 3600000)
    return not same_geometry(box1, box2, tolerance)


def _right_position_fails(slide_idx: int, shape1: Any, shape2: Any, boxes: tuple[Box, Box]) -> bool:
    (box1, box2) = boxes
    if slide_idx == 2 and not has_text(shape1) and not has_text(shape2):
        return bool(box1[LEFT] <= box2[LEFT] or box1[LEFT] < 4320000)
    return False


def _top_position_fails(slide_idx: int, shape1: Any, shape2: Any, boxes: tuple[Box, Box]) -> bool:
    (box1, box2) = boxes
    if slide_idx == 2 and shape1.shape_type == PICTURE and shape2.shape_type == PICTURE:
        return bool(box1[TOP] >= box2[TOP] or box1[TOP] > 1980000)
    return False


def _shift_size_fails(shape1: Any, shape2: Any, boxes: tuple[Box, Box], tolerance: Any) -> bool:
    if same_geometry(*boxes, tolerance):
        return False
    allowed = has_text(shape1) and has_text(shape2) and shape1.text == shape2.text and shape1.text == SHIFT_SIZE_TEXT
    return not allowed


def _image_size_fails(shape1: Any, shape2: Any, boxes: tuple[Box, Box], tolerance: Any) -> bool:
    (box1, box2) = boxes
    if shape1.shape_type == PICTURE and shape2.shape_type == PICTURE:
        return not (approximately_equal(box1[WIDTH], box2[WIDTH], tolerance)
                    and approximately_equal(box1[HEIGHT], box2[HEIGHT], tolerance))
    return not same_geometry(box1, box2, tolerance)


def _modify_height_fails(shape1: Any, shape2: Any, boxes: tuple[Box, Box], tolerance: Any) -> bool:
    (box1, box2) = boxes
    if (not has_text(shape1) and not has_text(shape2)) or (shape1.shape_type == FREEFORM
                                                           and shape2.shape_type == FREEFORM):
        return not approximately_equal(box1[HEIGHT], box2[HEIGHT], tolerance)
    return not same_geometry(box1, box2, tolerance)


def geometry_fails(slide_idx: int, shape1: Any, shape2: Any, opts: PptxOptions) -> bool:
    """Whether the position/size options reject this shape pair (OSWorld returns 0 then).

    Order as OSWorld: title bottom, table bottom, right position, top position, shift size, plain
    shape geometry (`examine_shape`; the geometry is compared even when that option is off, so a
    shape without a size of its own fails the same way), image size, modified height.
    Raises: TypeError when a size is missing on one side only (OSWorld raises it too).
    """
    tolerance = opts.approximately_tolerance
    boxes = (box(shape1), box(shape2))
    if opts.examine_title_bottom_position and _title_bottom_fails(shape1, shape2, boxes, tolerance):
        return True
    if opts.examine_table_bottom_position and _table_bottom_fails(slide_idx, shape1, shape2, boxes, tolerance):
        return True
    if opts.examine_right_position and _right_position_fails(slide_idx, shape1, shape2, boxes):
        return True
    if opts.examine_top_position and _top_position_fails(slide_idx, shape1, shape2, boxes):
        return True
    if opts.examine_shape_for_shift_size and _shift_size_fails(shape1, shape2, boxes, tolerance):
        return True
    if not same_geometry(*boxes, tolerance) and opts.examine_shape:
        return True
    if opts.examine_image_size and _image_size_fails(shape1, shape2, boxes, tolerance):
        return True
    return bool(opts.examine_modify_height and _modify_height_fails(shape1, shape2, boxes, tolerance))
