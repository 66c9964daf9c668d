"""OSWorld `desktop_env/evaluators/metrics/gimp.py`: images edited in GIMP (structure, brightness,
saturation, contrast, size, position) and GIMP's config files.

Sub-modules by concern: `similarity` (SSIM / MSE and image measures), `edits` (an edited image
against a reference), `layout` (where things are in an image), `files` (config settings, sizes,
image lists).
"""

from __future__ import annotations

from services.runner.osworld.metrics.base import Metric
from services.runner.osworld.metrics.gimp.edits import (
    check_brightness_decrease_and_structure_sim,
    check_contrast_increase_and_structure_sim,
    check_file_exists_and_structure_sim,
    check_image_mirror,
    check_palette_and_structure_sim,
    check_saturation_increase_and_structure_sim,
    check_structure_sim,
    check_structure_sim_resized,
)
from services.runner.osworld.metrics.gimp.files import (
    check_config_status,
    check_image_file_size,
    check_image_size,
    compare_image_list,
)
from services.runner.osworld.metrics.gimp.layout import (
    check_green_background,
    check_textbox_on_leftside,
    check_triangle_position,
)

METRICS: dict[str, Metric] = {
    "check_brightness_decrease_and_structure_sim": check_brightness_decrease_and_structure_sim,
    "check_config_status": check_config_status,
    "check_contrast_increase_and_structure_sim": check_contrast_increase_and_structure_sim,
    "check_file_exists_and_structure_sim": check_file_exists_and_structure_sim,
    "check_green_background": check_green_background,
    "check_image_file_size": check_image_file_size,
    "check_image_mirror": check_image_mirror,
    "check_image_size": check_image_size,
    "check_palette_and_structure_sim": check_palette_and_structure_sim,
    "check_saturation_increase_and_structure_sim": check_saturation_increase_and_structure_sim,
    "check_structure_sim": check_structure_sim,
    "check_structure_sim_resized": check_structure_sim_resized,
    "check_textbox_on_leftside": check_textbox_on_leftside,
    "check_triangle_position": check_triangle_position,
    "compare_image_list": compare_image_list,
}
