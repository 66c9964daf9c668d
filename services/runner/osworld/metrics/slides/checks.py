"""Single-property checks of presentations (OSWorld `desktop_env/evaluators/metrics/slides.py`):
a stretched and centered cover image, portrait orientation, background colors, a slide transition,
the slide number color of the master.

Sizes are EMU (914400 per inch); colors 0-255 RGB. Each function returns what OSWorld's function of
the same name returns; an input OSWorld's function crashes on raises EvalError.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
import zipfile
from math import sqrt
from typing import Any

from pptx import Presentation
from pptx.enum.dml import MSO_FILL
from pptx.util import Inches

from services.runner.osworld.crash import crashes_as_eval_error
from services.runner.osworld.metrics.slides.geometry import PICTURE
from services.runner.osworld.metrics.slides.text import DRAWING_NS


@crashes_as_eval_error("check_image_stretch_and_center")
def check_image_stretch_and_center(modified_ppt: Any, original_ppt: Any) -> float:
    """OSWorld `check_image_stretch_and_center`: the first picture of the original's first slide
    appears on the result's first slide (same image bytes; the last such picture counts) with its
    size within 0.5 inch of the slide size and centered within 0.5 inch.
    Raises: EvalError for unreadable files or a presentation without slides."""
    original = Presentation(original_ppt)
    modified = Presentation(modified_ppt)
    original_pictures = [shape for shape in original.slides[0].shapes if shape.shape_type == PICTURE]
    modified_pictures = [shape for shape in modified.slides[0].shapes if shape.shape_type == PICTURE]
    if not original_pictures:
        return 0.0
    blob = original_pictures[0].image.blob
    matches = [picture for picture in modified_pictures if picture.image.blob == blob]
    if not matches:
        return 0.0
    picture = matches[-1]
    slide_width, slide_height, slack = original.slide_width, original.slide_height, Inches(0.5)
    if (abs(picture.width - slide_width) > slack or abs(picture.height - slide_height) > slack
            or abs(picture.left - (slide_width - picture.width) / 2) > slack
            or abs(picture.top - (slide_height - picture.height) / 2) > slack):
        return 0.0
    return 1.0


@crashes_as_eval_error("check_slide_orientation_Portrait")
def check_slide_orientation_Portrait(pptx_path: Any) -> float:
    """OSWorld `check_slide_orientation_Portrait`: the slide width is less than the slide height."""
    presentation = Presentation(pptx_path)
    return 1.0 if presentation.slide_width < presentation.slide_height else 0.0


def _rgb_or_none(color: Any) -> Any:
    """`color.rgb`, or None when the color has no RGB value (a theme color, no color)."""
    try:
        return color.rgb if hasattr(color, "rgb") else None
    except Exception:  # OSWorld: any failure reading the color means "no RGB"
        return None


def _fill_distance(slide: Any, rgb: Any, original_rgb: Any) -> float:
    """Euclidean RGB distance, over its maximum sqrt(3 * 255^2), of the slide's background (its
    master's when it has none) to `rgb`; 1 when there is no RGB fill or it still is `original_rgb`."""
    fill = slide.background.fill
    if fill.type == MSO_FILL.SOLID:
        color = _rgb_or_none(fill.fore_color)
    elif fill.type == MSO_FILL.BACKGROUND:
        master_fill = slide.slide_layout.slide_master.background.fill
        if master_fill.type != MSO_FILL.SOLID:
            return 1
        color = _rgb_or_none(master_fill.fore_color)
    else:
        return 1
    if color is None:
        return 1
    r1, g1, b1 = color
    r2, g2, b2 = rgb
    if original_rgb is not None:
        r3, g3, b3 = original_rgb
        if r1 == r3 and g1 == g3 and b1 == b3:
            return 1
    return sqrt((r1 - r2) ** 2 + (g1 - g2) ** 2 + (b1 - b2) ** 2) / sqrt(255 ** 2 + 255 ** 2 + 255 ** 2)


@crashes_as_eval_error("evaluate_presentation_fill_to_rgb_distance")
def evaluate_presentation_fill_to_rgb_distance(pptx_file: Any, rules: Any) -> float:
    """OSWorld `evaluate_presentation_fill_to_rgb_distance`: 1 minus the mean over slides of the
    background's normalized RGB distance to `rules["rgb"]` (a slide still at `rules["original_rgb"]`,
    or without an RGB fill, counts as distance 1). Raises: EvalError without `rgb`, for an
    unreadable file or a presentation without slides."""
    rgb = rules["rgb"]
    try:
        original_rgb = rules["original_rgb"]
    except Exception:  # OSWorld: a missing original color means "none"
        original_rgb = None
    presentation = Presentation(pptx_file)
    distances = [_fill_distance(slide, rgb, original_rgb) for slide in presentation.slides]
    return float(1 - sum(distances) / len(presentation.slides))


@crashes_as_eval_error("check_transition")
def check_transition(pptx_file: Any, rules: Any) -> float:
    """OSWorld `check_transition`: slide `rules["slide_idx"]` (0-based) has a `<p:transition>` whose
    descendants include `<p:{rules["transition_type"]}>` (e.g. `dissolve`); 0.0 when the slide
    does not exist. Raises: EvalError for missing rules or an unreadable file."""
    slide_idx, transition_type = rules["slide_idx"], rules["transition_type"]
    with zipfile.ZipFile(pptx_file, "r") as archive:
        name = f"ppt/slides/slide{slide_idx + 1}.xml"
        try:
            archive.getinfo(name)
        except KeyError:
            return 0.0
        with archive.open(name) as slide_file:
            root = ET.parse(slide_file).getroot()
    transition = root.find(".//p:transition", DRAWING_NS)
    if transition is None:
        return 0.0
    return 1.0 if transition.find(f".//p:{transition_type}", DRAWING_NS) is not None else 0.0


def _channels(value: str) -> tuple[int, int, int]:
    """OSWorld reads a color as "#RRGGBB" (characters 1-2, 3-4, 5-6); the master's `srgbClr` values
    have no "#", so this reads "FF0000" as (0xF0, 0x00, 0x0): kept, as the scores depend on it."""
    return int(value[1:3], 16), int(value[3:5], 16), int(value[5:7], 16)


def _is_color(value: str, color: str, threshold: int = 50) -> bool:
    r, g, b = _channels(value)
    if color == "red":
        return r > g + threshold and r > b + threshold
    if color == "blue":
        return b > g + threshold and b > r + threshold
    if color == "green":
        return g > r + threshold and g > b + threshold
    return r < threshold and g < threshold and b < threshold  # black


@crashes_as_eval_error("check_page_number_colors")
def check_page_number_colors(pptx_file: Any, rules: Any) -> float:
    """OSWorld `check_page_number_colors`: the second-to-last `a:srgbClr` inside an `a:solidFill` of
    `ppt/slideMasters/slideMaster1.xml` (where LibreOffice keeps the slide number field's color) is
    `rules["color"]` (red, blue, green or black; any other name passes), read as OSWorld reads it
    (see `_channels`). Raises: EvalError when the master has fewer than two such colors."""
    color = rules["color"]
    with zipfile.ZipFile(pptx_file, "r") as archive, archive.open("ppt/slideMasters/slideMaster1.xml") as master:
        root = ET.parse(master).getroot()
    value = root.findall(".//a:solidFill//a:srgbClr", DRAWING_NS)[-2].get("val")
    if value is None:
        return 0.0
    if color in ("red", "blue", "green", "black") and not _is_color(value, color):
        return 0.0
    return 1.0
