"""GIMP metrics on files: a setting in GIMP's config, an image's pixel size, a file's byte size,
and a list of images equal to references.

Semantics of the functions of the same names in OSWorld `desktop_env/evaluators/metrics/gimp.py`.
A None path scores 0.0; where OSWorld's function crashes on an input (an unreadable file, a rule
without its key), ours raises EvalError.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from PIL import Image, ImageChops

from services.runner.osworld.crash import input_errors
from services.runner.osworld.metrics.base import score
from services.runner.osworld.metrics.gimp.similarity import open_image

ImagePath = str | Path


def _setting_matches(items: list[str], rule: Any) -> bool:
    key = rule["key"]
    if isinstance(key, str):
        return items[0] == key and items[-1] == rule["value"]
    if isinstance(key, list) and len(key) == 2:
        return items[0] == key[0] and items[1] == key[1] and items[-1] == rule["value"]
    return False


def check_config_status(actual_config_path: ImagePath | None, rule: Any) -> float:
    """1.0 iff a line of a GIMP config file (`gimprc`, `sessionrc`: `(key value)` S-expressions)
    has its first word equal to `rule["key"]` (or its first two words equal to a two-item key) and
    its last word equal to `rule["value"]` (quotes included, e.g. `"\\"Light\\""`). Lines starting
    with `#` and empty lines are skipped; a line is stripped, then leading `(` and trailing `)` are
    removed before splitting on whitespace.

    Raises: EvalError for an unreadable / non-UTF-8 file, a rule without `key` (or `value` once the
    key matched), or a blank line holding only spaces (OSWorld indexes its first word).
    """
    if actual_config_path is None:
        return 0.0
    with input_errors("check_config_status"):
        with open(actual_config_path) as config:
            lines = config.readlines()
        for line in lines:
            if line.startswith("#") or line == "\n":
                continue
            if _setting_matches(line.strip().lstrip("(").rstrip(")\n").split(), rule):
                return 1.0
    return 0.0


def check_image_size(src_path: ImagePath | None, rule: Any) -> float:
    """1.0 iff the image's width / height equal `rule["width"]` / `rule["height"]` (each checked
    only when given and not None).

    The size measured is that of the non-transparent content (bounding box of alpha > 0; 0 x 0
    when fully transparent) when the image has a `transparency` entry, or when
    `rule["ignore_transparent"]` is true and its mode is RGBA or LA; otherwise the full size. (That
    is OSWorld's operator precedence: a `transparency` entry alone is enough.)
    Raises: EvalError for an unreadable image or a rule that is not an object.
    """
    if src_path is None:
        return 0.0
    with input_errors("check_image_size"):
        image = open_image(src_path)
        ignore_transparent = rule.get("ignore_transparent", False)
        if (ignore_transparent and image.mode in ("RGBA", "LA")) or "transparency" in image.info:
            rgba = image if image.mode == "RGBA" else image.convert("RGBA")
            box = rgba.split()[-1].getbbox()
            width, height = (0, 0) if box is None else (box[2] - box[0], box[3] - box[1])
        else:
            width, height = image.size
        height_ok = rule.get("height") is None or height == rule["height"]
        width_ok = rule.get("width") is None or width == rule["width"]
    return score(height_ok and width_ok)


def check_image_file_size(src_path: ImagePath | None, rule: Any) -> float:
    """1.0 iff the file is smaller than `rule["max_size"]` bytes.

    Raises: EvalError for a missing file or a rule without `max_size`.
    """
    if src_path is None:
        return 0.0
    with input_errors("check_image_file_size"):
        return score(os.path.getsize(src_path) < rule["max_size"])


def _same_image(pred_path: ImagePath, gold_path: ImagePath) -> bool:
    pred, gold = open_image(pred_path), open_image(gold_path)
    if pred.size != gold.size:
        pred = pred.resize(gold.size, Image.Resampling.LANCZOS)
    if pred.mode != gold.mode:
        pred = pred.convert(gold.mode)
    return ImageChops.difference(pred, gold).getbbox() is None


def compare_image_list(pred_img_path_list: Any, gold_img_path_list: Any) -> float:
    """1.0 iff each predicted image equals its gold image pixel for pixel (after resizing the
    prediction to the gold size with Lanczos and converting it to the gold mode; Pillow's
    `getbbox` of the difference, which for RGBA / LA looks at the alpha band only). Takes two paths
    or two lists of paths (a non-list prediction wraps both in lists; pairs beyond the shorter list
    are ignored). A None / empty path in a pair scores 0.0.

    Raises: EvalError for an unreadable image or modes Pillow cannot convert / compare.
    """
    preds, golds = pred_img_path_list, gold_img_path_list
    if not isinstance(preds, list):
        preds, golds = [preds], [golds]
    with input_errors("compare_image_list"):
        for pred, gold in zip(preds, golds):  # noqa: B905 - OSWorld ignores unpaired items
            if not pred or not gold:
                return 0.0
            if not _same_image(pred, gold):
                return 0.0
    return 1.0
