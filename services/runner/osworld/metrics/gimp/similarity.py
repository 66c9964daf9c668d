"""Image measures the GIMP metrics share: structural similarity (SSIM), mean squared error after a
brightness normalisation, mean brightness, saturation and contrast.

Semantics of OSWorld `desktop_env/evaluators/metrics/gimp.py` (`structure_check_by_ssim`,
`structure_check_by_mse`, `calculate_brightness`, `normalize_brightness`, `measure_saturation`,
`calculate_contrast`), computed with the same libraries (Pillow, numpy, scikit-image) so values match.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image, ImageStat
from skimage.metrics import structural_similarity

SSIM_WINDOW = 7
"""SSIM window side in pixels (scikit-image's default); smaller images are never "similar"."""


def open_image(path: str | Path) -> Image.Image:
    """`Image.open(path)` (lazy, as OSWorld). Raises: OSError / UnidentifiedImageError."""
    return Image.open(path)


def _rgb(image: Image.Image) -> Image.Image:
    return image if image.mode == "RGB" else image.convert("RGB")


def ssim_similar(first: Image.Image, second: Image.Image, threshold: float = 0.9) -> bool:
    """Whether two images have SSIM >= `threshold` (both as RGB, 7x7 window, channel axis 2).

    False when either side is smaller than 7 pixels or the sizes differ (no resizing).
    Raises: ValueError from Pillow when an image cannot be converted to RGB (as OSWorld).
    """
    if min(first.width, first.height, second.width, second.height) < SSIM_WINDOW:
        return False
    first, second = _rgb(first), _rgb(second)
    if first.size != second.size:
        return False
    try:
        value = structural_similarity(np.array(first), np.array(second), win_size=SSIM_WINDOW, channel_axis=2)
    except ValueError:  # OSWorld treats a failed SSIM computation as "not similar"
        return False
    return bool(value >= threshold)


def mse_similar(first: Image.Image, second: Image.Image, threshold: float = 0.03) -> bool:
    """Whether the mean squared error of two images (RGB, channels scaled to [0, 1], float32) is
    below `threshold`; `first` is resized to `second`'s size with Lanczos when they differ."""
    if first.size != second.size:
        first = first.resize(second.size, Image.Resampling.LANCZOS)
    a = np.array(_rgb(first), dtype=np.float32) / 255
    b = np.array(_rgb(second), dtype=np.float32) / 255
    return bool(np.mean((a - b) ** 2) < threshold)


def mean_brightness(image: Image.Image) -> float:
    """Mean of the grayscale ("L") image, 0..255."""
    return float(ImageStat.Stat(image.convert("L")).mean[0])


def normalise_brightness(image: Image.Image, target: float) -> Image.Image:
    """Every band scaled by `target / mean_brightness(image)`, truncated to an int and clipped to
    0..255 (Pillow's `point` with that function).

    Raises: ZeroDivisionError for an all-black image (as OSWorld).
    """
    factor = target / mean_brightness(image)

    def scale(level: float) -> int:
        return min(255, max(0, int(level * factor)))

    return image.point(scale)


def mean_saturation(image: Image.Image) -> float:
    """Mean of the S band of an HSV image (0..255)."""
    return float(np.mean(np.array(image.split()[1])))


def contrast(image: Image.Image) -> float:
    """Standard deviation of all pixel values (every band, float32)."""
    return float(np.std(np.asarray(image, dtype=np.float32)))
