"""VLC metrics comparing media files: images (a snapshot, a wallpaper, an exported frame) by SSIM
and videos frame by frame by perceptual hash.

Semantics of `compare_images` and `compare_videos` in OSWorld
`desktop_env/evaluators/metrics/vlc.py`, computed with the same libraries (Pillow, scikit-image,
OpenCV, ImageHash).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cv2
import imagehash
import numpy as np
from numpy.typing import NDArray
from PIL import Image
from skimage.metrics import structural_similarity

from services.runner.osworld.crash import input_errors
from services.runner.osworld.errors import EvalError
from services.runner.osworld.metrics.base import score

MediaPath = str | Path

_BASE_MARGIN = 0.01


def compare_images(image1_path: MediaPath | None, image2_path: MediaPath | None, **options: Any) -> float:
    """SSIM of the two images as grayscale, both resized (Lanczos) to the smaller size -- "smaller"
    as Python compares `(width, height)` tuples: by width first. Scores the raw SSIM (in [-1, 1]);
    with option `reference_base_result` b (the SSIM an untouched screen gets), scores
    `(ssim - b) / (1 - b)` when ssim >= b + 0.01, else 0.0. A None / empty path scores 0.0.

    Raises: EvalError for an unreadable image or one under 7 pixels on a side (SSIM's window).
    """
    if not image1_path or not image2_path:
        return 0.0
    base = options.get("reference_base_result")
    with input_errors("compare_images"):
        first = Image.open(image1_path).convert("L")
        second = Image.open(image2_path).convert("L")
        size = min(first.size, second.size)
        first = first.resize(size, Image.Resampling.LANCZOS)
        second = second.resize(size, Image.Resampling.LANCZOS)
        similarity = float(structural_similarity(np.array(first), np.array(second)))
    if base is None:
        return similarity
    return (similarity - base) / (1 - base) if similarity >= base + _BASE_MARGIN else 0.0


def _frames(path: MediaPath | None) -> Iterator[NDArray[Any]]:
    """The BGR frames OpenCV decodes from `path`; none when it is None or cannot be opened.

    Raises: EvalError when `path` is not a path (OpenCV rejects it; OSWorld crashes there)."""
    if path is None or path == "":
        return
    if not isinstance(path, str | os.PathLike):
        raise EvalError(f"compare_videos: expected a video path, got {path!r}")
    capture = cv2.VideoCapture(os.fspath(path))
    try:
        while True:
            ok, frame = capture.read()
            if not ok:
                return
            yield frame
    finally:
        capture.release()


def _phash(frame: NDArray[Any]) -> imagehash.ImageHash:
    return imagehash.phash(Image.fromarray(cv2.cvtColor(frame, cv2.COLOR_BGR2RGB)))


def compare_videos(video_path1: MediaPath | None, video_path2: MediaPath | None,
                   max_frames_to_check: int = 100, threshold: int = 5) -> float:
    """1.0 iff the videos look the same: frames are compared pairwise by perceptual hash (64-bit
    phash), a pair differing in more than `threshold` bits is a mismatch, and more than `threshold`
    mismatches score 0.0. Stops after `max_frames_to_check` pairs (1.0), or when a video ends: 1.0
    iff both ended together. A missing file counts as a video without frames (two missing: 1.0).

    Raises: EvalError when a side is neither None nor a path.
    """
    first, second = _frames(video_path1), _frames(video_path2)
    checked = mismatches = 0
    while checked < max_frames_to_check:
        frame1, frame2 = next(first, None), next(second, None)
        if frame1 is None or frame2 is None:
            return score(frame1 is None and frame2 is None)
        checked += 1
        if _phash(frame1) - _phash(frame2) > threshold:
            mismatches += 1
            if mismatches > threshold:
                return 0.0
    return 1.0
