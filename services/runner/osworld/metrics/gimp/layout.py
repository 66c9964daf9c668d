"""GIMP metrics about where things are in an image: a shape at the centre, a text box at the left
edge, a green background behind an object.

Semantics of the functions of the same names in OSWorld `desktop_env/evaluators/metrics/gimp.py`,
with its quirks kept so scores match (each documented below). A None path scores 0.0; where
OSWorld's function crashes on an input, ours raises EvalError.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from services.runner.osworld.crash import input_errors
from services.runner.osworld.metrics.base import score
from services.runner.osworld.metrics.gimp.similarity import open_image

ImagePath = str | Path

_CENTRE_TOLERANCE = 0.05
_LEFT_MARGIN = 0.05
_DARK_BELOW = 128


def check_triangle_position(tgt_path: ImagePath | None) -> float:
    """1.0 iff the pixels of the image's "shape colour" have their centroid within 5% of the
    image's height and width of its centre.

    OSWorld's choice of the shape colour is kept: the distinct colours sorted by ascending pixel
    count (numpy's default argsort), the second one. In a two-colour image that is the most common
    colour (the background), so the metric then measures the background's centroid.
    Raises: EvalError for an unreadable image, an image without colour bands or with one colour.
    """
    if tgt_path is None:
        return 0.0
    with input_errors("check_triangle_position"):
        pixels = np.array(open_image(tgt_path))
        colours, counts = np.unique(pixels.reshape(-1, pixels.shape[2]), axis=0, return_counts=True)
        shape_colour = colours[np.argsort(counts)][1]
        centroid = np.argwhere(np.all(pixels == shape_colour, axis=2)).mean(axis=0)
        dims = np.array(pixels.shape[:2])
        return score(bool(np.all(np.abs(centroid - dims / 2) < _CENTRE_TOLERANCE * dims)))


def check_textbox_on_leftside(src_path: ImagePath | None) -> float:
    """1.0 iff the leftmost dark pixel (grayscale < 128) is within the left 5% of the image's width
    (no dark pixel at all scores 0.0).

    Raises: EvalError for an unreadable image.
    """
    if src_path is None:
        return 0.0
    with input_errors("check_textbox_on_leftside"):
        image = open_image(src_path)
        gray = np.asarray(image.convert("L"))
        dark_columns = np.flatnonzero((gray < _DARK_BELOW).any(axis=0))
        leftmost = int(dark_columns[0]) if dark_columns.size else image.width
        return score(leftmost < image.width * _LEFT_MARGIN)


def check_green_background(src_path: ImagePath | None, tgt_path: ImagePath | None) -> float:
    """1.0 iff every pixel that is not black (RGB != 0, 0, 0) in `tgt` (the reference: an object in
    black on a background) is green in `src` (G above both R and B).

    OSWorld walks the pixel arrays as `[x, y]` (x over the width, y over the height) although numpy
    arrays are `[row, column]`: for a square image that is a transposition, for any other image its
    walk goes out of range and crashes unless a non-green pixel ends it first. Kept, so the score
    (or crash) is OSWorld's; the walk is vectorised per x.
    Raises: EvalError for an unreadable image, an image without colour bands, or that out-of-range walk.
    """
    if src_path is None or tgt_path is None:
        return 0.0
    with input_errors("check_green_background"):
        source, target = open_image(src_path), open_image(tgt_path)
        src, tgt = np.array(source), np.array(target)
        if src.ndim == 3 and tgt.ndim == 3 and src.shape[2] >= 3:
            return _green_walk(src, tgt, target.width, target.height)
        return _green_walk_per_pixel(src, tgt, target.width, target.height)


def _not_black(pixel: NDArray[Any]) -> bool:
    return tuple(pixel[:3]) != (0, 0, 0)


def _green_walk(src: NDArray[Any], tgt: NDArray[Any], width: int, height: int) -> float:
    """`check_green_background`'s walk for colour arrays, one vectorised step per x."""
    for x in range(width):
        if height and x >= tgt.shape[0]:
            raise IndexError(f"reference pixel [{x}, 0] is outside an array of shape {tgt.shape}")
        inside = min(height, tgt.shape[1])
        row = tgt[x, :inside]
        not_black = np.any(row[:, :3] != 0, axis=1) if tgt.shape[2] >= 3 else np.ones(inside, dtype=bool)
        if x < src.shape[0]:
            checked = min(inside, src.shape[1])
            rgb = src[x, :checked, :3]
            ok = np.ones(inside, dtype=bool)
            ok[:checked] = (rgb[:, 1] > rgb[:, 0]) & (rgb[:, 1] > rgb[:, 2])
        else:
            ok, checked = np.zeros(inside, dtype=bool), 0
        stops = np.flatnonzero(not_black & (~ok | (np.arange(inside) >= checked)))
        if stops.size:
            y = int(stops[0])
            if x >= src.shape[0] or y >= src.shape[1]:
                raise IndexError(f"pixel [{x}, {y}] is outside the result's array of shape {src.shape}")
            return 0.0
        if height > inside:
            raise IndexError(f"reference pixel [{x}, {inside}] is outside an array of shape {tgt.shape}")
    return 1.0


def _green_walk_per_pixel(src: NDArray[Any], tgt: NDArray[Any], width: int, height: int) -> float:
    """The same walk pixel by pixel, for arrays without colour bands (where it crashes at once)."""
    for x in range(width):
        for y in range(height):
            if _not_black(tgt[x, y]):
                r, g, b = src[x, y][:3]
                if not (g > r and g > b):
                    return 0.0
    return 1.0
