"""OSWorld `desktop_env/evaluators/metrics/slides.py`: presentations (LibreOffice Impress .pptx).

Sub-modules by concern: `compare` (`compare_pptx_files`, with `options`, `geometry` and `text` for
its option set, shape positions and sizes, and text/table/bullet formatting), `checks` (single
properties: cover image, orientation, background color, transition, slide number color),
`settings` (Impress settings in `registrymodifications.xcu`, the slide panel in the accessibility
tree). Each metric returns what OSWorld's function of the same name returns on the same inputs
(proven by `tests/oracle/test_slides.py`), except where its docstring names a deliberate difference.
"""

from __future__ import annotations

from services.runner.osworld.metrics.base import Metric
from services.runner.osworld.metrics.slides.checks import (
    check_image_stretch_and_center,
    check_page_number_colors,
    check_slide_orientation_Portrait,
    check_transition,
    evaluate_presentation_fill_to_rgb_distance,
)
from services.runner.osworld.metrics.slides.compare import compare_pptx_files
from services.runner.osworld.metrics.slides.settings import (
    check_auto_saving_time,
    check_left_panel,
    check_presenter_console_disable,
)

METRICS: dict[str, Metric] = {
    "check_auto_saving_time": check_auto_saving_time,
    "check_image_stretch_and_center": check_image_stretch_and_center,
    "check_left_panel": check_left_panel,
    "check_page_number_colors": check_page_number_colors,
    "check_presenter_console_disable": check_presenter_console_disable,
    "check_slide_orientation_Portrait": check_slide_orientation_Portrait,
    "check_transition": check_transition,
    "compare_pptx_files": compare_pptx_files,
    "evaluate_presentation_fill_to_rgb_distance": evaluate_presentation_fill_to_rgb_distance,
}
