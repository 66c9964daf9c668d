"""Text comparisons of documents (OSWorld `desktop_env/evaluators/metrics/docs.py`):
`compare_docx_files`, `compare_docx_files_and_ignore_new_lines`, `compare_references`,
`compare_unique_train_records`.

Scores are OSWorld's: 1.0 / 0.0, or a rapidfuzz `fuzz.ratio` similarity in [0, 1] for the fuzzy
options. A missing or unreadable file scores 0.0; a result that is not a path (e.g. a list) raises
EvalError, as OSWorld's function raises on it.
"""

from __future__ import annotations

import re
from typing import Any

from docx.document import Document as DocxDocument
from rapidfuzz import fuzz

from services.runner.osworld.crash import crashes_as_eval_error
from services.runner.osworld.metrics.docs.load import docx_paragraph_texts, odt_paragraph_texts, open_docx, open_odt


def _collapsed(paragraphs: list[str]) -> str:
    """Paragraphs joined by newlines, every whitespace run as one space, stripped."""
    return re.sub(r"\s+", " ", "\n".join(paragraphs)).strip()


def _paragraph_lists(file1: str, file2: str) -> tuple[list[str], list[str]] | None:
    """Paragraph texts of two .docx or two .odt files; None when the types differ or are neither, or
    a file cannot be opened (OSWorld scores 0 then)."""
    if file1.endswith(".docx") and file2.endswith(".docx"):
        doc1, doc2 = open_docx(file1), open_docx(file2)
        if doc1 is None or doc2 is None:
            return None
        return docx_paragraph_texts(doc1), docx_paragraph_texts(doc2)
    if file1.endswith(".odt") and file2.endswith(".odt"):
        odt1, odt2 = open_odt(file1), open_odt(file2)
        if odt1 is None or odt2 is None:
            return None
        return odt_paragraph_texts(odt1), odt_paragraph_texts(odt2)
    return None


@crashes_as_eval_error("compare_docx_files")
def compare_docx_files(file1: Any, file2: Any, **options: Any) -> float:
    """OSWorld `compare_docx_files`: the paragraph texts of two .docx (or two .odt) files agree.

    Options (OSWorld's defaults): `ignore_blanks` (True: compare the whole texts with whitespace
    runs collapsed), `ignore_case` (False), `ignore_order` (False: sort paragraphs first),
    `content_only` (False: rapidfuzz ratio of the collapsed texts), `fuzzy_match` (False: ratio
    instead of equality; per paragraph, averaged, when blanks count), `delete_empty_lines` (False).
    Returns 1.0 / 0.0 or a similarity in [0, 1]; 0.0 for a missing file or mismatched types.
    Raises: EvalError when a file argument is not a path string (OSWorld's `.endswith` fails).
    """
    ignore_blanks = options.get("ignore_blanks", True)
    ignore_case = options.get("ignore_case", False)
    ignore_order = options.get("ignore_order", False)
    content_only = options.get("content_only", False)
    fuzzy_match = options.get("fuzzy_match", False)
    delete_empty_lines = options.get("delete_empty_lines", False)
    if not file1 or not file2:
        return 0.0
    lists = _paragraph_lists(file1, file2)
    if lists is None:
        return 0.0
    paragraphs1, paragraphs2 = lists
    if ignore_order:
        paragraphs1, paragraphs2 = sorted(paragraphs1), sorted(paragraphs2)
    if delete_empty_lines:
        paragraphs1 = [p for p in paragraphs1 if p.strip()]
        paragraphs2 = [p for p in paragraphs2 if p.strip()]

    if content_only or ignore_blanks:
        text1, text2 = _collapsed(paragraphs1), _collapsed(paragraphs2)
        if ignore_case:
            text1, text2 = text1.lower(), text2.lower()
        if content_only or fuzzy_match:
            return fuzz.ratio(text1, text2) / 100.0
        return 1.0 if text1 == text2 else 0.0

    if len(paragraphs1) != len(paragraphs2):
        return 0.0
    pairs = [(p1.lower(), p2.lower()) if ignore_case else (p1, p2)
             for p1, p2 in zip(paragraphs1, paragraphs2, strict=True)]
    if fuzzy_match:
        if not pairs:
            return 1.0
        return sum(fuzz.ratio(p1, p2) / 100.0 for p1, p2 in pairs) / len(pairs)
    return 1.0 if all(p1 == p2 for p1, p2 in pairs) else 0.0


def _both_docx(file1: Any, file2: Any) -> tuple[DocxDocument, DocxDocument] | None:
    """Both documents when both paths are given, end in `.docx` and open, else None (OSWorld then
    scores 0). Raises: AttributeError for a path that is not a string (OSWorld's `.endswith` crash,
    turned into EvalError by `crashes_as_eval_error`)."""
    if not file1 or not file2 or not (file1.endswith(".docx") and file2.endswith(".docx")):
        return None
    doc1, doc2 = open_docx(file1), open_docx(file2)
    return None if doc1 is None or doc2 is None else (doc1, doc2)


@crashes_as_eval_error("compare_docx_files_and_ignore_new_lines")
def compare_docx_files_and_ignore_new_lines(file1: Any, file2: Any, **options: Any) -> float:
    """OSWorld `compare_docx_files_and_ignore_new_lines`: the non-empty paragraphs of two .docx files
    agree, as one whitespace-collapsed text (`ignore_blanks`, default True) or one by one.

    Returns 1.0 / 0.0; 0.0 for a missing/unreadable file or a file that is not .docx.
    Raises: EvalError when a file argument is not a path string.
    """
    ignore_blanks = options.get("ignore_blanks", True)
    opened = _both_docx(file1, file2)
    if opened is None:
        return 0.0
    doc1, doc2 = opened
    paragraphs1 = [text for text in docx_paragraph_texts(doc1) if text != ""]
    paragraphs2 = [text for text in docx_paragraph_texts(doc2) if text != ""]
    if ignore_blanks:
        return 1.0 if _collapsed(paragraphs1) == _collapsed(paragraphs2) else 0.0
    return 1.0 if paragraphs1 == paragraphs2 else 0.0


@crashes_as_eval_error("compare_references")
def compare_references(file1: Any, file2: Any, **options: Any) -> float:
    """OSWorld `compare_references`: the reference lists (non-blank paragraphs after the first
    paragraph equal to `reference_indicator`, default "References") of two .docx files agree.

    Score: the mean rapidfuzz ratio r of the paired references, rescaled as
    `(r - base) / (1 - base)` when `r >= base + 0.01` (`reference_base_result`, default 0.5), else
    0.0; 1.0 when neither file has the indicator, 0.0 when one lacks it or the counts differ.
    Raises: EvalError when a file argument is not a path string.
    """
    indicator = options.get("reference_indicator", "References")
    base = options.get("reference_base_result", 0.5)
    opened = _both_docx(file1, file2)
    if opened is None:
        return 0.0
    doc1, doc2 = opened
    paragraphs1, paragraphs2 = docx_paragraph_texts(doc1), docx_paragraph_texts(doc2)
    index1 = paragraphs1.index(indicator) if indicator in paragraphs1 else -1
    index2 = paragraphs2.index(indicator) if indicator in paragraphs2 else -1
    if index1 == -1 and index2 == -1:
        return 1.0
    if index1 == -1 or index2 == -1:
        return 0.0
    references1 = [p for p in paragraphs1[index1 + 1:] if p.strip()]
    references2 = [p for p in paragraphs2[index2 + 1:] if p.strip()]
    if len(references1) != len(references2):
        return 0.0
    ratios = [fuzz.ratio(r1, r2) / 100.0 for r1, r2 in zip(references1, references2, strict=True)]
    similarity = sum(ratios) / len(references1)
    if similarity >= base + 0.01:
        return float((similarity - base) / (1 - base))
    return 0.0


def _record_lines(path: Any) -> tuple[list[str], list[str]] | None:
    """(non-blank stripped paragraph texts, train ids) of a train-record .docx; a train id is the
    second field of a line with exactly four comma-separated fields. None when unreadable."""
    document = open_docx(path)
    if document is None:
        return None
    lines = [text.strip() for text in docx_paragraph_texts(document) if text.strip()]
    ids = [line.split(",")[1].strip() for line in lines if len(line.split(",")) == 4]
    return lines, ids


@crashes_as_eval_error("compare_unique_train_records")
def compare_unique_train_records(processed_file: Any, expected_files: Any, **options: Any) -> float:
    """OSWorld `compare_unique_train_records`: the processed record file keeps one line per train.

    `expected_files` is `[gold, initial]` (a `multi` cloud_file with `gives: [0, 1]`). Scores 1.0
    when every processed line comes from the initial file, no train id repeats, the set of ids
    equals the gold file's and the line count equals the gold file's; else 0.0 (also for missing
    or unreadable files and a malformed `expected_files`).
    """
    if not processed_file or not isinstance(expected_files, list) or len(expected_files) < 2:
        return 0.0
    gold_file, initial_file = expected_files[0], expected_files[1]
    if not gold_file or not initial_file:
        return 0.0
    processed, gold, initial = _record_lines(processed_file), None, None
    if processed is None:
        return 0.0
    gold = _record_lines(gold_file)
    if gold is None:
        return 0.0
    initial = _record_lines(initial_file)
    if initial is None:
        return 0.0
    processed_lines, processed_ids = processed
    gold_lines, gold_ids = gold
    if not set(processed_lines).issubset(set(initial[0])):
        return 0.0
    if len(processed_ids) != len(set(processed_ids)):
        return 0.0
    if set(processed_ids) != set(gold_ids):
        return 0.0
    return 1.0 if len(processed_lines) == len(gold_lines) else 0.0
