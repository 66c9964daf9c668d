"""Qwen2.5-VL / UI-TARS `smart_resize` and the mapping of model coordinates to screen pixels."""

from __future__ import annotations

import math

IMAGE_FACTOR = 28
MIN_PIXELS = 100 * 28 * 28
MAX_PIXELS = 16384 * 28 * 28
MAX_RATIO = 200


def smart_resize(
    height: int, width: int, factor: int = IMAGE_FACTOR, min_pixels: int = MIN_PIXELS, max_pixels: int = MAX_PIXELS
) -> tuple[int, int]:
    """(height, width) in pixels as the vision encoder sees the image (Qwen2.5-VL smart_resize).

    Both sides are multiples of `factor`, the area is within [min_pixels, max_pixels] and the aspect
    ratio is kept as closely as possible. Raises: ValueError when the aspect ratio exceeds 200.
    """
    if max(height, width) / min(height, width) > MAX_RATIO:
        raise ValueError(f"aspect ratio must be <= {MAX_RATIO}, got {max(height, width) / min(height, width):.1f}")
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = math.floor(height / beta / factor) * factor
        w_bar = math.floor(width / beta / factor) * factor
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def to_screen(x: float, y: float, resized: tuple[int, int], screen: tuple[int, int]) -> tuple[int, int]:
    """Map a point from the smart-resized image space (w, h) to screen pixels (w, h), clamped.

    UI-TARS-1.5 answers absolute coordinates in the resized image it was shown. Clamped to the image before
    scaling: a finite but huge coordinate (5e307) would overflow to infinity in the product.
    """
    x, y = min(max(x, 0.0), float(resized[0])), min(max(y, 0.0), float(resized[1]))
    sx = round(x * screen[0] / resized[0])
    sy = round(y * screen[1] / resized[1])
    return min(max(sx, 0), screen[0] - 1), min(max(sy, 0), screen[1] - 1)
