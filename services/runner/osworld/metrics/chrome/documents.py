"""OSWorld `desktop_env/evaluators/metrics/chrome.py`: metrics of files a Chrome task produces (PDFs,
archives of files, HTML pages), on host paths from the file getters.

Libraries as OSWorld: PyMuPDF (`fitz`) text and images, rapidfuzz `fuzz.ratio`, imagehash `phash`,
BeautifulSoup with lxml, `shutil.unpack_archive`.
"""

from __future__ import annotations

import io
import logging
import os
import shutil
from typing import Any

import imagehash
import pymupdf
from bs4 import BeautifulSoup, Tag
from PIL import Image
from rapidfuzz import fuzz

from services.runner.osworld.crash import crashes_as_eval_error
from services.runner.osworld.errors import EvalError
from services.runner.osworld.metrics.base import Metric

logger = logging.getLogger(__name__)

PHASH_THRESHOLD = 5
"""`compare_pdf_images`: two images match when their perceptual hashes differ in at most 5 bits."""

ARCHIVE_FILE_METRICS = {
    "text": "compare_text_file", "pdf": "compare_pdfs", "docx": "compare_docx_files", "ppt": "compare_pptx_files",
    "image": "compare_images", "csv": "compare_csv", "table": "compare_table", "audio": "compare_audios",
    "video": "compare_videos",
}
"""`compare_archive` `file_type` -> the metric comparing each pair of files (OSWorld's dispatch)."""


def _pdf_text(path: Any) -> str:
    """All pages' text, stripped (OSWorld's `extract_text_from_pdf`; a None path opens an empty PDF)."""
    with pymupdf.open(path) as document:
        return "".join(page.get_text() for page in document).strip()


@crashes_as_eval_error("compare_pdfs")
def compare_pdfs(pdf1_path: Any, pdf2_path: Any) -> float:
    """OSWorld `compare_pdfs`: mean over the file pairs of `fuzz.ratio(text1, text2) / 100` of the
    PDFs' text. One path each, or lists (pairs zipped; the mean divides by the length of the second).
    A pair whose PDF cannot be read scores 0. Raises EvalError for an empty second list."""
    if not isinstance(pdf2_path, list):
        pdf1_path, pdf2_path = [pdf1_path], [pdf2_path]
    total = 0.0
    for path1, path2 in zip(pdf1_path, pdf2_path):  # noqa: B905 (OSWorld zips to the shorter)
        try:
            total += fuzz.ratio(_pdf_text(path1), _pdf_text(path2)) / 100
        except Exception as exc:  # noqa: BLE001 - OSWorld logs any failure of a pair and scores it 0
            logger.info("compare_pdfs: cannot compare %s and %s: %s", path1, path2, exc)
    return total / len(pdf2_path)


def _pdf_images(path: str) -> list[Image.Image]:
    """Every embedded image of every page, as PIL images (images PIL cannot open are skipped)."""
    images: list[Image.Image] = []
    with pymupdf.open(path) as document:
        for page in document:
            for info in page.get_images(full=True):
                data = document.extract_image(info[0])["image"]
                try:
                    images.append(Image.open(io.BytesIO(data)))
                except Exception as exc:  # noqa: BLE001 - OSWorld skips an image PIL cannot read
                    logger.error("compare_pdf_images: skipping an image of %s: %s", path, exc)
    return images


def compare_pdf_images(pdf1_path: Any, pdf2_path: Any, **kwargs: Any) -> float:
    """OSWorld `compare_pdf_images`: share of the embedded images (in page order) whose perceptual
    hashes differ by at most `PHASH_THRESHOLD`; 0.0 for a missing path or file or a different image
    count, 1.0 when neither PDF has images.

    Raises: EvalError when a PDF cannot be read (OSWorld then fails too: its cleanup removes its
    temporary folder twice and raises FileNotFoundError). OSWorld reads copies of both files in a
    `temp_pdf_comparison` folder beside the first; reading them in place gives the same images.
    """
    if not pdf1_path or not pdf2_path:
        return 0.0
    if not (os.path.exists(pdf1_path) and os.path.exists(pdf2_path)):
        return 0.0
    try:
        images1, images2 = _pdf_images(str(pdf1_path)), _pdf_images(str(pdf2_path))
    except Exception as exc:  # noqa: BLE001 - any PyMuPDF failure: OSWorld's scoring ends there
        raise EvalError(f"compare_pdf_images: cannot read the images of {pdf1_path} or {pdf2_path}: {exc}") from exc
    if len(images1) != len(images2):
        return 0.0
    if not images1:
        return 1.0
    matches = sum(imagehash.phash(a) - imagehash.phash(b) <= PHASH_THRESHOLD for a, b in zip(images1, images2,
                                                                                              strict=True))
    return matches / len(images1)


def _file_metric(file_type: str) -> Any:
    from services.runner.osworld import metrics  # the registry imports this module: look up at call time

    name = ARCHIVE_FILE_METRICS.get(file_type)
    if name is None:
        raise EvalError(f"compare_archive: not support file type: {file_type}")
    metric = metrics.METRICS.get(name)
    if metric is None:
        raise EvalError(f"compare_archive: file type {file_type!r} needs metric {name!r}, which is not implemented")
    return metric


@crashes_as_eval_error("compare_archive")
def compare_archive(pred_path: Any, gold_path: Any, **kwargs: Any) -> float:
    """OSWorld `compare_archive`: unpack both archives (`<name>_pred`, `<name>_gold` beside them;
    format from the extension), list the files under `file_path` (option, default the root); 0.0
    when the sorted names differ, else the mean of the `file_type` metric (option: text, pdf, docx,
    ppt, image, csv, table, audio, video; default text) over the file pairs, the other options
    passed to it. 0.0 when `pred_path` is empty. Raises EvalError for an unreadable archive, a
    missing `file_path` folder, empty archives or an unknown `file_type`."""
    file_path = kwargs.pop("file_path", "")
    if not pred_path:
        return 0.0
    pred_folder = os.path.splitext(pred_path)[0] + "_pred"
    gold_folder = os.path.splitext(gold_path)[0] + "_gold"
    if os.path.exists(pred_folder):
        shutil.rmtree(pred_folder, ignore_errors=True)
    os.makedirs(pred_folder)
    shutil.unpack_archive(pred_path, pred_folder)
    if not os.path.exists(gold_folder):  # OSWorld reuses an unpacked gold folder
        os.makedirs(gold_folder)
        shutil.unpack_archive(gold_path, gold_folder)
    pred_files = sorted(os.listdir(os.path.join(pred_folder, file_path)))
    gold_files = sorted(os.listdir(os.path.join(gold_folder, file_path)))
    if pred_files != gold_files:
        return 0.0
    metric = _file_metric(kwargs.pop("file_type", "text"))
    total = sum(float(metric(os.path.join(pred_folder, file_path, a), os.path.join(gold_folder, file_path, b),
                             **kwargs)) for a, b in zip(pred_files, gold_files, strict=True))
    return total / len(pred_files)


def _same_element(elem1: Any, elem2: Any, ignore_sdnum: Any) -> bool:
    if not (isinstance(elem1, Tag) and isinstance(elem2, Tag)):
        return bool(elem1 == elem2)
    if elem1.name != elem2.name or elem1.text.strip() != elem2.text.strip():
        return False
    if elem1.attrs != elem2.attrs:
        if ignore_sdnum:
            return {k: v for k, v in elem1.attrs.items() if k != "sdnum"} == \
                {k: v for k, v in elem2.attrs.items() if k != "sdnum"}
        return False
    return True


@crashes_as_eval_error("compare_htmls")
def compare_htmls(html_path1: Any, html_path2: Any, **options: Any) -> float:
    """OSWorld `compare_htmls`: both files parsed by BeautifulSoup (lxml); 1.0 when every pair of
    nodes in document order (zipped to the shorter document) has the same tag name, stripped text
    and attributes (`ignore_sdnum`: LibreOffice's `sdnum` attribute ignored), strings equal.
    Raises EvalError for a missing or unreadable file."""
    with open(html_path1, encoding="utf-8") as file1:
        soup1 = BeautifulSoup(file1, "lxml")
    with open(html_path2, encoding="utf-8") as file2:
        soup2 = BeautifulSoup(file2, "lxml")
    ignore_sdnum = options.get("ignore_sdnum", None)
    for elem1, elem2 in zip(soup1.descendants, soup2.descendants):  # noqa: B905 (OSWorld zips to the shorter)
        if not _same_element(elem1, elem2, ignore_sdnum):
            return 0.0
    return 1.0


METRICS: dict[str, Metric] = {
    "compare_pdfs": compare_pdfs,
    "compare_pdf_images": compare_pdf_images,
    "compare_archive": compare_archive,
    "compare_htmls": compare_htmls,
}


