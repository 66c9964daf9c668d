"""GIMP metrics that compare an edited image with a reference: brightness, saturation and contrast
changes with the structure kept, exports, resizes, palette conversion and mirroring.

Semantics of the functions of the same names in OSWorld `desktop_env/evaluators/metrics/gimp.py`.
Each takes host paths (`src_path`: the first argument OSWorld's evaluator passes, `tgt_path`: the
second) and returns 1.0 or 0.0; a None path scores 0.0. Where OSWorld's function crashes on an
input (a file Pillow cannot read, an all-black image to normalise), ours raises EvalError; where
OSWorld catches the failure and scores 0, ours scores 0.0.
"""

from __future__ import annotations

import os
from pathlib import Path

from PIL import Image

from services.runner.osworld.crash import INPUT_ERRORS, input_errors
from services.runner.osworld.metrics.base import score
from services.runner.osworld.metrics.gimp.similarity import (
    contrast,
    mean_brightness,
    mean_saturation,
    mse_similar,
    normalise_brightness,
    open_image,
    ssim_similar,
)

ImagePath = str | Path

_BRIGHTNESS_TARGET = 128
_SOFT_FAILURES: tuple[type[BaseException], ...] = (*INPUT_ERRORS, Image.DecompressionBombError)
"""Failures OSWorld's `check_structure_sim` / `check_palette_and_structure_sim` catch (score 0)."""


def check_brightness_decrease_and_structure_sim(
    src_path: ImagePath | None, tgt_path: ImagePath | None, threshold: float = 0.03
) -> float:
    """1.0 iff `src` is darker than `tgt` (mean grayscale) and, both normalised to mean brightness
    128, their mean squared error (RGB in [0, 1]) is below `threshold`.

    Raises: EvalError for an unreadable or all-black image.
    """
    if src_path is None or tgt_path is None:
        return 0.0
    with input_errors("check_brightness_decrease_and_structure_sim"):
        src, tgt = open_image(src_path), open_image(tgt_path)
        darker = mean_brightness(tgt) > mean_brightness(src)
        same = mse_similar(normalise_brightness(src, _BRIGHTNESS_TARGET),
                           normalise_brightness(tgt, _BRIGHTNESS_TARGET), threshold)
    return score(darker and same)


def check_saturation_increase_and_structure_sim(src_path: ImagePath | None, tgt_path: ImagePath | None) -> float:
    """1.0 iff `src` (HSV) has a higher mean saturation than `tgt` and their hue and value bands
    are SSIM-similar (>= 0.9).

    Raises: EvalError for an unreadable image or one Pillow cannot convert to HSV.
    """
    if src_path is None or tgt_path is None:
        return 0.0
    with input_errors("check_saturation_increase_and_structure_sim"):
        src = open_image(src_path).convert("HSV")
        tgt = open_image(tgt_path).convert("HSV")
        more_saturated = mean_saturation(tgt) < mean_saturation(src)
        src_h, _, src_v = src.split()
        tgt_h, _, tgt_v = tgt.split()
        same = ssim_similar(src_h, tgt_h) and ssim_similar(src_v, tgt_v)
    return score(more_saturated and same)


def check_contrast_increase_and_structure_sim(src_path: ImagePath | None, tgt_path: ImagePath | None) -> float:
    """1.0 iff `src` has a higher contrast (standard deviation of its pixel values) than `tgt` and
    the two are SSIM-similar (>= 0.65).

    Raises: EvalError for an unreadable image.
    """
    if src_path is None or tgt_path is None:
        return 0.0
    with input_errors("check_contrast_increase_and_structure_sim"):
        src, tgt = open_image(src_path), open_image(tgt_path)
        stronger = contrast(tgt) < contrast(src)
        same = ssim_similar(src, tgt, threshold=0.65)
    return score(stronger and same)


def check_file_exists_and_structure_sim(src_path: ImagePath | None, tgt_path: ImagePath | None) -> float:
    """1.0 iff `src` is a file and SSIM-similar (>= 0.9, same size) to `tgt`.

    Raises: EvalError for an unreadable image.
    """
    if src_path is None or tgt_path is None or not os.path.isfile(src_path):
        return 0.0
    with input_errors("check_file_exists_and_structure_sim"):
        return score(ssim_similar(open_image(src_path), open_image(tgt_path)))


def check_structure_sim(src_path: ImagePath | None, tgt_path: ImagePath | None) -> float:
    """1.0 iff the two images have the same size and are SSIM-similar (>= 0.9); any failure to
    read or compare them scores 0.0 (as OSWorld)."""
    if src_path is None or tgt_path is None:
        return 0.0
    try:
        src, tgt = open_image(src_path), open_image(tgt_path)
        return score(src.size == tgt.size and ssim_similar(src, tgt))
    except _SOFT_FAILURES:
        return 0.0


def check_structure_sim_resized(src_path: ImagePath | None, tgt_path: ImagePath | None) -> float:
    """1.0 iff `src`, cropped to its non-transparent content when it has transparency (an alpha
    band or a `transparency` entry) and resized (Pillow's default filter) to `tgt`'s size, is
    SSIM-similar (>= 0.9) to `tgt`. A fully transparent `src` scores 0.0.

    Raises: EvalError for an unreadable image.
    """
    if src_path is None or tgt_path is None:
        return 0.0
    with input_errors("check_structure_sim_resized"):
        src, tgt = open_image(src_path), open_image(tgt_path)
        if src.mode in ("RGBA", "LA") or "transparency" in src.info:
            rgba = src if src.mode == "RGBA" else src.convert("RGBA")
            box = rgba.split()[-1].getbbox()
            if box is None:
                return 0.0
            resized = rgba.crop(box).convert("RGB").resize(tgt.size)
        else:
            resized = src.resize(tgt.size)
        return score(ssim_similar(resized, tgt if tgt.mode == "RGB" else tgt.convert("RGB")))


def _open_loaded(path: ImagePath) -> Image.Image | None:
    """The fully decoded image, or None when the file is missing, empty or unreadable (OSWorld's
    `safe_open_image_with_retry`, without its waits: our copy of the file is complete)."""
    if not path or not os.path.exists(path) or os.path.getsize(path) == 0:
        return None
    try:
        image = Image.open(path)
        image.load()
    except _SOFT_FAILURES:
        return None
    return image


def check_palette_and_structure_sim(src_path: ImagePath | None, tgt_path: ImagePath | None) -> float:
    """1.0 iff `src` is a palette ("P") image and, as RGB, SSIM-similar (>= 0.9) to `tgt`; any
    failure to read or compare them scores 0.0 (as OSWorld)."""
    if src_path is None or tgt_path is None:
        return 0.0
    src = _open_loaded(src_path)
    if src is None:
        return 0.0
    with src:
        tgt = _open_loaded(tgt_path)
        if tgt is None:
            return 0.0
        with tgt:
            try:
                return score(src.mode == "P" and ssim_similar(src.convert("RGB"), tgt))
            except _SOFT_FAILURES:
                return 0.0


def check_image_mirror(src_path: ImagePath | None, tgt_path: ImagePath | None) -> float:
    """1.0 iff `src` flipped left-right is SSIM-similar (>= 0.99, same size) to `tgt`.

    Raises: EvalError for an unreadable image.
    """
    if src_path is None or tgt_path is None:
        return 0.0
    with input_errors("check_image_mirror"):
        flipped = open_image(src_path).transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        return score(ssim_similar(flipped, open_image(tgt_path), threshold=0.99))
