"""Differential tests: our Chrome metrics (`services/runner/osworld/metrics/chrome/`) against OSWorld's
own `desktop_env/evaluators/metrics/chrome.py` on the same inputs.

For every task of test_nogdrive.json using a metric, the task's rules come from its JSON and the
getter values are what the task's getter returns for a solved task and for realistic wrong
attempts; plus edge cases (empty values, malformed rules). Where OSWorld raises, ours must raise
EvalError. Fixture files (PDFs, archives, HTML) are built here with PyMuPDF, Pillow and zipfile.
"""

from __future__ import annotations

import copy
import json
import shutil
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from PIL import Image, ImageDraw

from services.runner.osworld import METRICS, EvalError
from tests.oracle.client import Oracle, same_value
from tests.oracle.osworld_tasks import Piece, pieces

STUBS = ("borb", "borb.pdf")  # imported by OSWorld's chrome.py, used by none of its functions


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value))


def check(oracle: Oracle, name: str, *args: Any, expect: float | None = None, **kwargs: Any) -> Any:
    """Run metric `name` here and in OSWorld on the same (JSON) arguments; assert the same value, or
    that ours raised EvalError where OSWorld raised. `expect`: the value the fixture is meant to get."""
    args = tuple(_jsonable(a) for a in args)
    theirs = oracle.call("metrics.chrome", name, *copy.deepcopy(args), stubs=STUBS, **copy.deepcopy(kwargs))
    try:
        ours: Any = METRICS[name](*args, **kwargs)
    except EvalError as exc:
        assert not theirs.ok, f"{name}: ours raised {exc}, OSWorld returned {theirs.value!r}"
        return exc
    assert theirs.ok, f"{name}: OSWorld raised {theirs.error}, ours returned {ours!r}"
    assert same_value(ours, theirs.value), f"{name}: ours {ours!r} != OSWorld {theirs.value!r}"
    if expect is not None:
        assert ours == expect
    return ours


def _ids(items: list[Piece]) -> list[str]:
    return [p.id for p in items]


# --- URLs and tabs --------------------------------------------------------------------------------------

URL_PATTERN_CASES = {  # task id prefix -> (URL of a solved task per metric index, a wrong URL)
    "368d9ba4": (["https://www.accuweather.com/en/gb/manchester/m15-6/november-weather/329260"],
                 "https://www.accuweather.com/en/gb/london/ec4a-2/november-weather/328328"),
    "47543840": (["https://www.budget.com/en/reservation#/vehicles"], "https://www.budget.com/en/reservation#/location"),
    "9f935cce": (["https://www.justice.gov/forms?title=&field_component_target_id=431"],
                 "https://www.justice.gov/forms?title=&field_component_target_id=441"),
    "a728a36e": (["https://www.dmv.virginia.gov/licenses-ids/license/applying/eligibility"],
                 "https://www.dmv.virginia.gov/licenses-ids/license"),
    "b070486d": (["https://www.drugs.com/tamiflu.html#side-effects", "https://www.drugs.com/sfx/tamiflu-side-effects.html"],
                 "https://www.drugs.com/tamiflu.html"),
    "c1fa57f3": (["https://www.united.com/en/us/checked-bag-fee-calculator/any-flights"],
                 "https://www.united.com/en/us/fly/baggage.html"),
    "da46d875": (["https://outlook.office365.com/book/CharlieCardStoreAppointments@mbta.com/"],
                 "https://outlook.office365.com/book/OtherStore@mbta.com/"),
    "f3b19d1e": (["https://help.ticketmaster.com/hc/en-us/articles/9663528775313-Ticket-Delivery-FAQs"],
                 "https://help.ticketmaster.com/hc/en-us"),
    "36037439": (["https://scholar.google.com/citations?user=qRAQ5BsAAAAJ&hl=en"],
                 "https://scholar.google.com/citations?user=WLN3QrAAAAAJ&hl=en"),
}


def _url_value(piece: Piece, url: str) -> Any:
    """What the task's result getter gives for `url`: a string, or `active_tab_info`'s dict."""
    if piece.result and piece.result["type"] == "active_tab_info":
        return {"title": "page", "url": url, "content": "<html></html>"}
    return url


@pytest.mark.parametrize("piece", pieces("is_expected_url_pattern_match"),
                         ids=_ids(pieces("is_expected_url_pattern_match")))
def test_is_expected_url_pattern_match(oracle: Oracle, piece: Piece) -> None:
    good, bad = URL_PATTERN_CASES[piece.task_id[:8]]
    index = min(piece.index, len(good) - 1) if len(good) > 1 else 0
    check(oracle, piece.func, _url_value(piece, good[index]), piece.rules, expect=1.0)
    check(oracle, piece.func, _url_value(piece, bad), piece.rules, expect=0.0)


ACTIVE_TAB_CASES = {
    "0d8b7de3": (["https://www.drugs.com/npc/", "https://www.drugs.com/npp/"], "https://www.drugs.com/"),
    "59155008": (["https://www.babycenter.com/baby-names/details/carl-853"],
                 "http://babycenter.com/baby-names/details/carl-853"),
    "a96b564e": (["https://discussions.flightaware.com/t/the-banter-thread/4412"],
                 "https://discussions.flightaware.com/c/community/5"),
    "f0b971a1": (["https://www.nfl.com/scores/2019/post4"], "https://www.nfl.com/scores/2019/post3"),
}


@pytest.mark.parametrize("piece", pieces("is_expected_active_tab"), ids=_ids(pieces("is_expected_active_tab")))
def test_is_expected_active_tab(oracle: Oracle, piece: Piece) -> None:
    good, bad = ACTIVE_TAB_CASES[piece.task_id[:8]]
    check(oracle, piece.func, _url_value(piece, good[piece.index]), piece.rules, expect=1.0)
    # the same site without www and with a trailing slash is the same page for compare_urls
    check(oracle, piece.func, _url_value(piece, good[piece.index].replace("www.", "") + "/"), piece.rules)
    check(oracle, piece.func, _url_value(piece, bad), piece.rules, expect=0.0)


@pytest.mark.parametrize("piece", pieces("is_expected_active_tab_approximate"),
                         ids=_ids(pieces("is_expected_active_tab_approximate")))
def test_is_expected_active_tab_approximate(oracle: Oracle, piece: Piece) -> None:
    check(oracle, piece.func, "chrome://password-manager/passwords?q=etsy", piece.rules, expect=1.0)
    check(oracle, piece.func, "chrome://password-manager/passwords", piece.rules, expect=1.0)
    check(oracle, piece.func, "chrome://settings/passwords", piece.rules, expect=0.0)
    check(oracle, piece.func, {"title": "x", "url": "chrome://password-manager/settings"}, piece.rules, expect=0.0)


TABS_CASES = {
    "06fe7178": (["https://www.lonelyplanet.com/", "https://www.airbnb.com/", "https://www.tripadvisor.com/"],
                 ["https://www.lonelyplanet.com/", "https://www.airbnb.com/"]),
    "48c46dc7": (["https://github.com/", "https://docs.python.org/3/"],
                 ["https://github.com/", "https://docs.python.org/3.12/"]),
    "58565672": (["https://www.apple.com/", "https://scholar.google.com/", "https://www.amazon.com/"],
                 ["https://www.apple.com/", "https://scholar.google.com/", "https://www.amazon.com/",
                  "https://www.google.com/"]),
    "e135df7c": (["https://aclanthology.org/", "https://openai.com/", "https://www.linkedin.com/home/",
                  "file:///home/user/Desktop/annual-enterprise-survey-2021-financial-year-provisional.html"],
                 ["https://aclanthology.org/", "https://openai.com/", "https://www.linkedin.com/home/",
                  "file:///home/user/Desktop/annual-enterprise-survey-2021-financial-year-provisional.xlsx"]),
}


def _tabs(urls: list[str]) -> list[dict[str, str]]:
    return [{"title": f"tab {i}", "url": url} for i, url in enumerate(urls)]


@pytest.mark.parametrize("piece", pieces("is_expected_tabs"), ids=_ids(pieces("is_expected_tabs")))
def test_is_expected_tabs(oracle: Oracle, piece: Piece) -> None:
    good, bad = TABS_CASES[piece.task_id[:8]]
    check(oracle, piece.func, _tabs(good), piece.rules, expect=1.0)
    check(oracle, piece.func, _tabs(list(reversed(good))), piece.rules, expect=1.0)
    check(oracle, piece.func, _tabs(bad), piece.rules, expect=0.0)
    check(oracle, piece.func, [], piece.rules, expect=0.0)  # open_tabs_info without a Chrome


@pytest.mark.parametrize("piece", pieces("is_expected_search_query"), ids=_ids(pieces("is_expected_search_query")))
def test_is_expected_search_query(oracle: Oracle, piece: Piece) -> None:
    check(oracle, piece.func, {"title": "nereida - Google Search",
                               "url": "https://www.google.com/search?q=nereida&sca_esv=1"}, piece.rules, expect=1.0)
    check(oracle, piece.func, {"title": "x", "url": "https://www.google.com/search?q=nereida2"}, piece.rules,
          expect=0.0)
    check(oracle, piece.func, None, piece.rules, expect=0.0)  # active_tab_info without network


def _bookmark_bar(*children: dict[str, Any]) -> dict[str, Any]:
    return {"bookmark_bar": {"children": list(children), "name": "Bookmarks bar", "type": "folder"},
            "other": {"children": [], "name": "Other bookmarks", "type": "folder"}}


def _url_item(url: str, name: str = "page") -> dict[str, Any]:
    return {"type": "url", "name": name, "url": url}


def _folder(name: str, *children: dict[str, Any]) -> dict[str, Any]:
    return {"type": "folder", "name": name, "children": list(children)}


@pytest.mark.parametrize("piece", pieces("is_expected_bookmarks"), ids=_ids(pieces("is_expected_bookmarks")))
def test_is_expected_bookmarks(oracle: Oracle, piece: Piece) -> None:
    kind = piece.rules["type"]
    if kind == "bookmark_bar_folders_names":
        good = _bookmark_bar(_url_item("https://www.google.com/"), _folder("Favorites"))
        bad = _bookmark_bar(_folder("Favourites"))
    elif kind == "bookmark_bar_websites_urls":
        good = _bookmark_bar(_url_item("https://jalammar.github.io/illustrated-transformer/"), _folder("Work"))
        bad = _bookmark_bar(_url_item("https://jalammar.github.io/illustrated-transformer/"),
                            _url_item("https://jalammar.github.io/"))
    else:
        choices = [urls[i % len(urls)] for i, urls in enumerate(piece.rules["urls"])]
        good = _bookmark_bar(_folder("Liked Authors", *[_url_item(url) for url in choices]))
        bad = _bookmark_bar(_folder("Liked Authors", *[_url_item(url) for url in choices[:-1]]))
        check(oracle, piece.func, _bookmark_bar(*[_url_item(url) for url in choices]), piece.rules, expect=0.0)
    check(oracle, piece.func, good, piece.rules, expect=1.0)
    check(oracle, piece.func, bad, piece.rules, expect=0.0)
    check(oracle, piece.func, [], piece.rules, expect=0.0)  # the getter's value for no Bookmarks file


@pytest.mark.parametrize("piece", pieces("is_expected_installed_extensions"),
                         ids=_ids(pieces("is_expected_installed_extensions")))
def test_is_expected_installed_extensions(oracle: Oracle, piece: Piece) -> None:
    wanted = piece.rules["expected"]
    check(oracle, piece.func, ["Chrome Web Store Payments", *wanted], piece.rules, expect=1.0)
    check(oracle, piece.func, wanted[:-1], piece.rules, expect=0.0)
    check(oracle, piece.func, "Google", piece.rules, expect=0.0)  # the getter's fallback value
    check(oracle, piece.func, [], piece.rules, expect=0.0)


@pytest.mark.parametrize("piece", pieces("is_added_to_steam_cart"), ids=_ids(pieces("is_added_to_steam_cart")))
def test_is_added_to_steam_cart(oracle: Oracle, piece: Piece) -> None:
    items = "".join(f"<div class='cart_item'>{item}</div>" for item in piece.rules["items"])
    check(oracle, piece.func, {"title": "Shopping Cart", "url": piece.result["url"],  # type: ignore[index]
                               "content": f"<html><body>{items}</body></html>"}, piece.rules, expect=1.0)
    check(oracle, piece.func, {"title": "Shopping Cart", "url": "u", "content": "<html>Dota 2</html>"}, piece.rules,
          expect=0.0)
    check(oracle, piece.func, {"title": "Connection failed", "url": "u", "content": ""}, piece.rules, expect=0.0)
    check(oracle, piece.func, None, piece.rules)  # OSWorld raises on None


# --- profile state --------------------------------------------------------------------------------------

@pytest.mark.parametrize("piece", pieces("check_enabled_experiments"), ids=_ids(pieces("check_enabled_experiments")))
def test_check_enabled_experiments(oracle: Oracle, piece: Piece) -> None:
    names = piece.rules["names"]
    check(oracle, piece.func, [f"{name}@2" for name in names], piece.rules, expect=1.0)
    check(oracle, piece.func, list(reversed(names)), piece.rules, expect=0.0)
    check(oracle, piece.func, [], piece.rules, expect=0.0)
    check(oracle, piece.func, [f"{names[0]}@2"], {"type": "regex"})  # unsupported rule type: raises


@pytest.mark.parametrize("piece", pieces("check_font_size"), ids=_ids(pieces("check_font_size")))
def test_check_font_size(oracle: Oracle, piece: Piece) -> None:
    webprefs = {"default_fixed_font_size": 13, "minimum_font_size": 13}
    check(oracle, piece.func, {**webprefs, "default_font_size": 24}, piece.rules, expect=1.0)
    check(oracle, piece.func, {**webprefs, "default_font_size": 16}, piece.rules, expect=0.0)
    check(oracle, piece.func, {**webprefs, "default_font_size": 20}, {"type": "value", "value": 20}, expect=1.0)
    check(oracle, piece.func, webprefs, piece.rules)  # no default_font_size: raises


@pytest.mark.parametrize("piece", pieces("check_history_deleted"), ids=_ids(pieces("check_history_deleted")))
def test_check_history_deleted(oracle: Oracle, piece: Piece) -> None:
    kept = [["https://www.google.com/search?q=osworld", "osworld - Google Search", 13370000000000000],
            ["https://github.com/xlang-ai/OSWorld", "OSWorld", 13370000000000001]]
    check(oracle, piece.func, kept, piece.rules, expect=1.0)
    check(oracle, piece.func, [*kept, ["https://www.youtube.com/watch?v=x", "video", 1]], piece.rules, expect=0.0)
    check(oracle, piece.func, [], piece.rules, expect=1.0)
    check(oracle, piece.func, None, piece.rules)  # the getter's value for an unreadable History: raises


def _cookie(host: str, name: str = "session-id") -> list[Any]:
    return [13370000000000000, host, "", name, "", b"".hex(), "/", 13400000000000000, 1, 1, 13370000000000000, 1, 1,
            1, -1, 2, 443, 13370000000000000, 1]


@pytest.mark.parametrize("piece", pieces("is_cookie_deleted"), ids=_ids(pieces("is_cookie_deleted")))
def test_is_cookie_deleted(oracle: Oracle, piece: Piece) -> None:
    others = [_cookie(".google.com", "NID"), _cookie("github.com", "_gh_sess")]
    check(oracle, piece.func, others, piece.rules, expect=1.0)
    check(oracle, piece.func, [*others, _cookie(".amazon.com")], piece.rules, expect=0.0)
    check(oracle, piece.func, [*others, _cookie("www.amazon.com")], piece.rules)
    check(oracle, piece.func, [], piece.rules, expect=1.0)
    check(oracle, piece.func, None, piece.rules)  # unreadable Cookies: raises


@pytest.mark.parametrize("piece", pieces("is_shortcut_on_desktop"), ids=_ids(pieces("is_shortcut_on_desktop")))
def test_is_shortcut_on_desktop(oracle: Oracle, piece: Piece) -> None:
    entry = "[Desktop Entry]\nVersion=1.0\nTerminal=false\nType=Application\nName=Page\n"
    good = {"chrome-app.desktop": f"{entry}Exec={piece.rules['exec']}\nIcon=chrome-app\n"}
    bad = {"chrome-app.desktop": f"{entry}Exec={piece.rules['exec']} --incognito\n"}
    check(oracle, piece.func, good, piece.rules, expect=1.0)
    check(oracle, piece.func, bad, piece.rules, expect=0.0)
    check(oracle, piece.func, {}, piece.rules, expect=0.0)
    check(oracle, piece.func, good, {"type": "name", "name": "Page"}, expect=1.0)
    check(oracle, piece.func, good, {"type": "url", "url": "x"})  # unsupported: raises


# --- files ----------------------------------------------------------------------------------------------

def make_pdf(path: Path, pages: list[str], images: list[Image.Image] | None = None) -> str:
    """A PDF at `path` with one page per text (and the `images`, one per page, on the first pages)."""
    document = pymupdf.open()
    for index, text in enumerate(pages):
        page = document.new_page()
        page.insert_text((72, 72), text, fontsize=11)
        if images and index < len(images):
            png = path.with_suffix(f".{index}.png")
            images[index].save(png)
            page.insert_image(pymupdf.Rect(72, 100, 372, 400), filename=str(png))
    document.save(path)
    document.close()
    return str(path)


def _text(task_id: str, name: str) -> list[str]:
    return [f"{name}\nTask {task_id}: the report of the first quarter.\nRevenue 1200, cost 800.",
            "Second page: notes and the summary of the findings."]


def _wrong(pages: list[str]) -> list[str]:
    return [pages[0].replace("1200", "1300").replace("first", "second"), pages[1]]


@pytest.mark.parametrize("piece", pieces("compare_pdfs"), ids=_ids(pieces("compare_pdfs")))
def test_compare_pdfs(oracle: Oracle, piece: Piece, tmp_path: Path) -> None:
    assert piece.result is not None and piece.expected is not None
    multi = isinstance(piece.result.get("dest"), list)
    dests = piece.result["dest"] if multi else [piece.result["dest"]]
    gold_dests = piece.expected["dest"] if multi else [piece.expected["dest"]]
    gold = [make_pdf(tmp_path / d, _text(piece.task_id, d)) for d in gold_dests]
    good = [make_pdf(tmp_path / d, _text(piece.task_id, g)) for d, g in zip(dests, gold_dests, strict=True)]
    wrong_dir = tmp_path / "wrong"
    wrong_dir.mkdir()
    wrong = [make_pdf(wrong_dir / d, _wrong(_text(piece.task_id, g))) for d, g in zip(dests, gold_dests, strict=True)]
    shape = (lambda xs: xs) if multi else (lambda xs: xs[0])
    check(oracle, piece.func, shape(good), shape(gold), expect=1.0)
    score = check(oracle, piece.func, shape(wrong), shape(gold))
    assert 0.5 < score < 1.0
    # a result file missing in the env (vm_file gives None): PyMuPDF opens an empty PDF
    check(oracle, piece.func, shape([None] * len(gold)), shape(gold), expect=0.0)
    not_pdf = tmp_path / "not.pdf"
    not_pdf.write_text("not a pdf")
    check(oracle, piece.func, shape([str(not_pdf)] * len(gold)), shape(gold), expect=0.0)


def test_compare_pdfs_edges(oracle: Oracle, tmp_path: Path) -> None:
    one = make_pdf(tmp_path / "a.pdf", ["alpha"])
    check(oracle, "compare_pdfs", None, None, expect=1.0)  # two empty documents: ratio("", "") = 100
    check(oracle, "compare_pdfs", [one], [])  # empty list: OSWorld divides by zero
    check(oracle, "compare_pdfs", [one, one], [one], expect=1.0)  # zipped to the shorter list


def _receipt(color: str, lines: int) -> Image.Image:
    image = Image.new("RGB", (240, 320), "white")
    draw = ImageDraw.Draw(image)
    for i in range(lines):
        draw.rectangle([20, 20 + i * 28, 60 + (i * 37) % 150, 36 + i * 28], fill=color)
    return image


@pytest.mark.parametrize("piece", pieces("compare_pdf_images"), ids=_ids(pieces("compare_pdf_images")))
def test_compare_pdf_images(oracle: Oracle, piece: Piece, tmp_path: Path) -> None:
    assert piece.result is not None and piece.expected is not None
    gold = make_pdf(tmp_path / piece.expected["dest"], ["Receipt"], [_receipt("black", 9)])
    good = make_pdf(tmp_path / piece.result["dest"], ["Receipt"], [_receipt("black", 9)])
    (tmp_path / "w").mkdir()
    other = make_pdf(tmp_path / "w" / piece.result["dest"], ["Receipt"], [_receipt("black", 9).rotate(90)])
    none = make_pdf(tmp_path / "n.pdf", ["Receipt"])
    two = make_pdf(tmp_path / "two.pdf", ["a", "b"], [_receipt("black", 9), _receipt("black", 3)])
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.4\n%garbage")
    check(oracle, piece.func, good, gold, expect=1.0)
    check(oracle, piece.func, other, gold, expect=0.0)
    check(oracle, piece.func, none, gold, expect=0.0)
    check(oracle, piece.func, none, none, expect=1.0)
    check(oracle, piece.func, two, gold, expect=0.0)
    check(oracle, piece.func, None, gold, expect=0.0)
    check(oracle, piece.func, str(tmp_path / "missing.pdf"), gold, expect=0.0)
    check(oracle, piece.func, str(broken), gold)  # OSWorld raises (its cleanup fails)


def _archive(path: Path, files: dict[str, list[str]], folder: str = "") -> str:
    """An archive (.zip or .tar.gz by `path`'s name) of PDFs `{name: pages}` under `folder`."""
    staging = path.parent / f"{path.name}-files"
    (staging / folder).mkdir(parents=True, exist_ok=True)
    for name, pages in files.items():
        make_pdf(staging / folder / name, pages)
    if path.name.endswith(".zip"):
        with zipfile.ZipFile(path, "w") as archive:
            for file in sorted(staging.rglob("*.pdf")):
                archive.write(file, file.relative_to(staging))
    else:
        with tarfile.open(path, "w:gz") as archive:
            for file in sorted(staging.rglob("*.pdf")):
                archive.add(file, str(file.relative_to(staging)))
    shutil.rmtree(staging)
    return str(path)


def _twin(path: str, side: str) -> str:
    """A copy of `path` in its own folder per side: each implementation unpacks beside its files."""
    folder = Path(path).parent / side
    folder.mkdir(exist_ok=True)
    return str(shutil.copy(path, folder / Path(path).name))


def check_archive(oracle: Oracle, pred: str, gold: str, options: dict[str, Any], expect: float | None = None) -> Any:
    theirs = oracle.call("metrics.chrome", "compare_archive", _twin(pred, "theirs"), _twin(gold, "theirs"),
                         stubs=STUBS, **options)
    try:
        ours: Any = METRICS["compare_archive"](_twin(pred, "ours"), _twin(gold, "ours"), **dict(options))
    except EvalError as exc:
        assert not theirs.ok, f"ours raised {exc}, OSWorld returned {theirs.value!r}"
        return exc
    assert theirs.ok, f"OSWorld raised {theirs.error}, ours returned {ours!r}"
    assert same_value(ours, theirs.value), f"ours {ours!r} != OSWorld {theirs.value!r}"
    if expect is not None:
        assert ours == expect
    return ours


@pytest.mark.parametrize("piece", pieces("compare_archive"), ids=_ids(pieces("compare_archive")))
def test_compare_archive(oracle: Oracle, piece: Piece, tmp_path: Path) -> None:
    assert piece.result is not None and piece.expected is not None
    folder = piece.options.get("file_path", "")
    files = {f"week{i}.pdf": [f"Lecture {i}: slides", f"Exercises of week {i}"] for i in range(3)}
    gold = _archive(tmp_path / piece.expected["dest"], files, folder)
    (tmp_path / "good").mkdir()
    good = _archive(tmp_path / "good" / piece.result["dest"], files, folder)
    (tmp_path / "missing").mkdir()
    missing = _archive(tmp_path / "missing" / piece.result["dest"], dict(list(files.items())[:-1]), folder)
    (tmp_path / "edited").mkdir()
    edited = _archive(tmp_path / "edited" / piece.result["dest"],
                      {**files, "week2.pdf": ["Lecture 2: draft", "Nothing yet"]}, folder)
    check_archive(oracle, good, gold, piece.options, expect=1.0)
    check_archive(oracle, missing, gold, piece.options, expect=0.0)
    score = check_archive(oracle, edited, gold, piece.options)
    assert 0.5 < score < 1.0
    theirs = oracle.call("metrics.chrome", "compare_archive", None, gold, stubs=STUBS, **piece.options)
    assert theirs.ok and theirs.value == 0 and METRICS["compare_archive"](None, gold, **dict(piece.options)) == 0.0


def test_compare_archive_edges(oracle: Oracle, tmp_path: Path) -> None:
    files = {"a.pdf": ["alpha"]}
    gold = _archive(tmp_path / "gold.zip", files)
    (tmp_path / "p").mkdir()
    pred = _archive(tmp_path / "p" / "pred.zip", files)
    check_archive(oracle, pred, gold, {"file_type": "nonsense"})  # unknown file type: raises
    check_archive(oracle, pred, gold, {"file_type": "pdf", "file_path": "nowhere"})  # no such folder: raises
    broken = tmp_path / "b" / "broken.zip"
    broken.parent.mkdir()
    broken.write_bytes(b"PK not a zip")
    check_archive(oracle, str(broken), gold, {"file_type": "pdf"})  # unreadable archive: raises


HTML_TEMPLATE = """<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.0 Transitional//EN">
<html><head><meta http-equiv="content-type" content="text/html; charset=utf-8"/><title></title></head>
<body><table cellspacing="0" border="0">
<tr><td height="17" align="left">Year</td><td align="left">Industry</td><td align="left">Value</td></tr>
<tr><td height="17" align="right" sdval="2021" sdnum="{sdnum};">2021</td><td align="left">All industries</td>
<td align="right" sdval="{value}" sdnum="{sdnum};">{value}</td></tr>
</table></body></html>
"""


@pytest.mark.parametrize("piece", pieces("compare_htmls"), ids=_ids(pieces("compare_htmls")))
def test_compare_htmls(oracle: Oracle, piece: Piece, tmp_path: Path) -> None:
    assert piece.result is not None and piece.expected is not None

    def html(name: str, value: int = 757504, sdnum: str = "1033;0;#,##0") -> str:
        path = tmp_path / name
        path.write_text(HTML_TEMPLATE.format(value=value, sdnum=sdnum), encoding="utf-8")
        return str(path)

    gold = html(piece.expected["dest"])
    check(oracle, piece.func, html(piece.result["dest"]), gold, expect=1.0, **piece.options)
    check(oracle, piece.func, html("sdnum.html", sdnum="1033;0;0"), gold, expect=1.0, **piece.options)
    check(oracle, piece.func, html("sdnum.html", sdnum="1033;0;0"), gold, expect=0.0)  # without ignore_sdnum
    check(oracle, piece.func, html("value.html", value=757505), gold, expect=0.0, **piece.options)
    check(oracle, piece.func, str(tmp_path / "missing.html"), gold, **piece.options)  # raises


URL_PAIRS = [
    ("https://www.airbnb.com/", "https://airbnb.com.sg"), ("https://www.airbnb.com/", "http://airbnb.com"),
    ("github.com", "http://github.com/"), ("https://a.example.com/x?q=1", "https://a.example.org/x?q=1"),
    ("https://a.example.com/x?q=1", "https://a.example.com/x?q=2"), ("https://x.org/p#a", "https://x.org/p#b"),
    (".amazon.com", "amazon.com"), (".amazon.com", "www.amazon.com"),
    ("HTTPS://WWW.Docs.Python.org/3/", "docs.python.org/3"),
    ("file:///home/user/a.html", "file:///home/user/a.html"), ("chrome://settings/", "chrome://settings"),
    ("http://127.0.0.1:8000/a", "http://localhost:8000/a"), ("https://bbc.co.uk/news", "https://www.bbc.com/news"),
    (None, None), (None, "https://x.org"),
]


@pytest.mark.parametrize(("url1", "url2"), URL_PAIRS)
@pytest.mark.parametrize("full", [True, False])
def test_compare_urls(oracle: Oracle, url1: str | None, url2: str | None, full: bool) -> None:
    """The shared `urlcompare.compare_urls` against OSWorld's `metrics/utils.py` one."""
    from services.runner.osworld.urlcompare import compare_urls

    theirs = oracle.call("metrics.utils", "compare_urls", url1, url2, full=full)
    assert theirs.ok and compare_urls(url1, url2, full=full) == theirs.value
