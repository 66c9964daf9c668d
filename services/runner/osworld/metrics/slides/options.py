"""Options of `compare_pptx_files` (OSWorld `desktop_env/evaluators/metrics/slides.py`) and the
size comparison they share.

Shape sizes and positions are EMU (914400 per inch); `approximately_tolerance` is a relative
tolerance (0.005 = 0.5 %).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True)
class PptxOptions:
    """`compare_pptx_files` options with OSWorld's defaults. Values are used by truthiness, as
    OSWorld uses them; unknown option names (e.g. a task's `_note`) are ignored."""

    examine_number_of_slides: Any = True
    examine_shape: Any = True
    examine_text: Any = True
    examine_indent: Any = True
    examine_font_name: Any = True
    examine_font_size: Any = True
    examine_font_bold: Any = True
    examine_font_italic: Any = True
    examine_color_rgb: Any = True
    examine_font_underline: Any = True
    examine_strike_through: Any = True
    examine_alignment: Any = True
    examine_title_bottom_position: Any = False
    examine_table_bottom_position: Any = False
    examine_right_position: Any = False
    examine_top_position: Any = False
    examine_shape_for_shift_size: Any = False
    examine_image_size: Any = False
    examine_modify_height: Any = False
    examine_bullets: Any = True
    examine_background_color: Any = True
    examine_note: Any = True
    approximately_tolerance: Any = 0.005
    enable_debug: Any = True

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> PptxOptions:
        """The options of a task's `options` object (missing names take OSWorld's defaults)."""
        return cls(**{f.name: options[f.name] for f in fields(cls) if f.name in options})


def approximately_equal(value1: Any, value2: Any, tolerance: Any) -> bool:
    """OSWorld's `is_approximately_equal`: equal, or both non-zero with a relative difference of at
    most `tolerance`. Raises: TypeError when exactly one value is None and the other non-zero (a
    shape without a size of its own), as OSWorld does."""
    if value1 == value2:
        return True
    if value1 == 0 and value2 == 0:
        return True
    if value1 == 0 or value2 == 0:
        return False
    return bool(abs(value1 - value2) / max(abs(value1), abs(value2)) <= tolerance)


Box = tuple[Any, Any, Any, Any]
"""(left, top, width, height) of a shape in EMU; None where the shape has no value of its own or inherited."""


def box(shape: Any) -> Box:
    """A shape's (left, top, width, height), read once (python-pptx resolves a placeholder's
    inherited position on every read)."""
    return shape.left, shape.top, shape.width, shape.height


def same_geometry(box1: Box, box2: Box, tolerance: Any) -> bool:
    """Left, top, width and height approximately equal, compared in that order (the first
    difference stops the comparison, as in OSWorld's `or` chain)."""
    return all(approximately_equal(value1, value2, tolerance) for value1, value2 in zip(box1, box2, strict=True))
