"""Text in a screenshot (OSWorld `desktop_env/evaluators/metrics/docs.py` `compare_image_text`).

Deliberate difference: OSWorld reads the text with easyocr, whose detection and recognition models
are downloaded from a model hub the first time it runs; this project never fetches models at run
time. Here the text is read by Tesseract (Debian package `tesseract-ocr`, English data included)
through pytesseract. On clear screenshots (a terminal after `ls`) both engines read the words; on
hard images they may read differently, so the metric declares the requirement
`requirements.EASYOCR` and `cua-rollout coverage` lists its tasks under it. Everything around the
OCR follows OSWorld: 0.0 for a missing path or file, X11 screen dumps (XWD) converted first, any
reading failure scored 0.0, and the rule `{"type": "text", "text": s}` passing when `s` is a
substring of the recognised words joined by spaces.
"""

from __future__ import annotations

import logging
import os
import struct
from typing import Any

import numpy as np
import pytesseract
from PIL import Image, ImageOps

from services.runner.osworld.crash import crashes_as_eval_error
from services.runner.osworld.errors import EvalError

logger = logging.getLogger(__name__)

XWD_VERSION = 7
"""X11 window dump files carry file version 7 in their second big-endian 32-bit header word."""


def read_xwd(path: str) -> Image.Image:
    """RGB image of an X11 window dump (`xwd`) of depth 24 or 32 (BGRA byte order), as OSWorld's
    `read_x11_image` reads it. Raises: ValueError for another depth or a truncated file."""
    with open(path, "rb") as handle:
        header = handle.read(100)
        if len(header) < 24:
            raise ValueError(f"{path}: not an X11 window dump (header of {len(header)} bytes)")
        header_size, _version, _format, depth, width, height = struct.unpack(">6I", header[:24])
        handle.seek(header_size)
        if depth not in (24, 32):
            raise ValueError(f"{path}: unsupported X11 pixel depth {depth} (24 and 32 are supported)")
        channels = depth // 8
        data = handle.read(width * height * channels)
    pixels = np.frombuffer(data, dtype=np.uint8).reshape((height, width, channels))
    if depth == 32:
        pixels = pixels[:, :, [2, 1, 0]]
    return Image.fromarray(np.ascontiguousarray(pixels))


def _is_xwd(path: str) -> bool:
    with open(path, "rb") as handle:
        header = handle.read(8)
    return len(header) == 8 and struct.unpack(">I", header[4:8])[0] == XWD_VERSION


def load_screenshot(path: str) -> Image.Image:
    """The image at `path`: any format Pillow reads, or an X11 window dump.
    Raises: OSError / ValueError when it is neither."""
    try:
        image = Image.open(path)
        image.load()
        return image
    except OSError:
        if _is_xwd(path):
            return read_xwd(path)
        raise


def ocr_words(image: Image.Image) -> str:
    """Words Tesseract reads in `image`, joined by single spaces (easyocr's results are joined so
    in OSWorld). The image is read in grayscale, inverted when dark (terminal text) and upscaled
    2x when small, which is how Tesseract reads screen text best.
    Raises: EvalError when the Tesseract binary is missing (an install problem, not a score)."""
    gray = ImageOps.grayscale(image)
    if np.asarray(gray).mean() < 128:
        gray = ImageOps.invert(gray)
    if gray.height < 1000:
        gray = gray.resize((gray.width * 2, gray.height * 2), Image.Resampling.LANCZOS)
    try:
        text = pytesseract.image_to_string(gray, lang="eng")
    except pytesseract.TesseractNotFoundError as exc:
        raise EvalError("compare_image_text: the tesseract binary is missing (install tesseract-ocr)") from exc
    return " ".join(text.split())


@crashes_as_eval_error("compare_image_text")
def compare_image_text(image_path: Any, rule: Any) -> float:
    """OSWorld `compare_image_text` (OCR by Tesseract, see the module docstring): 1.0 when
    `rule["text"]` occurs in the text read from the image at `image_path` (`rule["type"]` must be
    "text"), else 0.0; 0.0 also for a missing file, an unreadable image or a malformed rule.
    Raises: EvalError when `image_path` is not a path (OSWorld's `os.path.exists` raises) or
    Tesseract is not installed."""
    if not image_path:
        return 0.0
    if not os.path.exists(image_path):
        return 0.0
    try:
        text = ocr_words(load_screenshot(image_path))
        logger.info("compare_image_text: read %r", text)
        if rule["type"] == "text":
            return 1.0 if rule["text"] in text else 0.0
        raise ValueError(f"unsupported rule type {rule['type']!r}")
    except EvalError:
        raise
    except Exception as exc:  # OSWorld: any failure while reading the image scores 0
        logger.info("compare_image_text: %s", exc)
        return 0.0
