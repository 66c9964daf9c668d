"""Differential tests: our `others` metrics (`services/runner/osworld/metrics/others.py`) against
OSWorld's own (`desktop_env/evaluators/metrics/others.py`): MP3s tagged with mutagen (encoded by
ffmpeg, which writes an ID3 header of its own) and EPUBs laid out as Calibre writes them, for every
task of `test_nogdrive.json` that uses one, plus edge cases.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from mutagen.easyid3 import EasyID3

from tests.oracle import media_fixtures as media
from tests.oracle.client import Oracle
from tests.oracle.differential import RAISES, Case, check_case
from tests.oracle.osworld_index import MetricUse, metric_uses


@pytest.fixture(scope="module")
def blank_mp3(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """Half a second of melody as MP3 with ffmpeg's ID3 header (no title or artist)."""
    tmp = tmp_path_factory.mktemp("mp3")
    wav = media.write_wav(media.melody(0.5, seed=4), tmp / "tune.wav")
    return Path(media.to_mp3(wav, tmp / "tune.mp3")).read_bytes()


def tagged(path: Path, blank: bytes, **tags: str) -> str:
    path.write_bytes(blank)
    if tags:
        id3 = EasyID3(str(path))
        for key, value in tags.items():
            id3[key] = value
        id3.save()
    return str(path)


def mp3_cases(tmp: Path, use: MetricUse, blank: bytes) -> list[Case]:
    """"<Artist> - <Title>.mp3": the tags filled from the file name, and wrong fillings."""
    meta = use.rules
    title, artist = meta["title"]["ref"], meta["artist"]["ref"]
    return [Case("title and artist set", tagged(tmp / "right.mp3", blank, title=title, artist=artist), meta),
            Case("swapped", tagged(tmp / "swapped.mp3", blank, title=artist, artist=title), meta, 0.0),
            Case("artist missing", tagged(tmp / "title.mp3", blank, title=title), meta, 0.0),
            Case("whole file name as title", tagged(tmp / "name.mp3", blank, title=f"{artist} - {title}",
                                                    artist=artist), meta, 0.0),
            Case("left blank", tagged(tmp / "blank.mp3", blank), meta, 0.0),
            Case("file missing", None, meta, 0.0)]


MP3_USES = metric_uses("check_mp3_meta")


@pytest.mark.parametrize("use", MP3_USES, ids=[u.id for u in MP3_USES])
def test_mp3_meta_tasks(oracle: Oracle, tmp_path: Path, blank_mp3: bytes, use: MetricUse) -> None:
    for case in mp3_cases(tmp_path, use, blank_mp3):
        check_case(oracle, "others", "check_mp3_meta", case, use.options)


def test_mp3_meta_edge_cases(oracle: Oracle, tmp_path: Path, blank_mp3: bytes) -> None:
    no_tag = tmp_path / "raw.mp3"
    no_tag.write_bytes(b"\xff\xfb\x90\x00" + bytes(400))
    song = tagged(tmp_path / "song.mp3", blank_mp3, title="Red Daughter", artist="Chen Shaohua",
                  genre="Folk")
    both = tagged(tmp_path / "multi.mp3", blank_mp3, title="Red Daughter")
    id3 = EasyID3(both)
    id3["artist"] = ["Chen Shaohua", "Zhou Xuan"]
    id3.save()
    for case in (Case("no ID3 header", str(no_tag), {"title": {"method": "eq", "ref": "x"}}, RAISES),
                 Case("file gone", str(tmp_path / "gone.mp3"), {}, RAISES),
                 Case("regex", song, {"title": {"method": "re.I", "ref": "^red"}}, 1.0),
                 Case("two artists joined", both, {"artist": {"method": "eq", "ref": "Chen Shaohua,Zhou Xuan"}}, 1.0),
                 Case("unknown field is empty", song, {"mood": {"method": "eq", "ref": ""}}, 1.0),
                 Case("ordering on text vs number", song, {"title": {"method": "gt", "ref": 3}}, RAISES),
                 Case("meta not an object", song, ["title"], RAISES)):
        check_case(oracle, "others", "check_mp3_meta", case)


CONTAINER = """<?xml version="1.0"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
   <rootfiles><rootfile full-path="content.opf" media-type="application/oebps-package+xml"/></rootfiles>
</container>
"""


def _opf(identifier: str, chapters: int) -> str:
    items = "\n".join(f'    <item href="index_split_{i:03d}.html" id="html{i}" media-type="application/xhtml+xml"/>'
                      for i in range(chapters))
    return f"""<?xml version='1.0' encoding='utf-8'?>
<package xmlns="http://www.idpf.org/2007/opf" unique-identifier="uuid_id" version="2.0">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
    <dc:title>Pass Through</dc:title>
    <dc:identifier id="uuid_id" opf:scheme="uuid">{identifier}</dc:identifier>
    <dc:language>en</dc:language>
  </metadata>
  <manifest>
{items}
  </manifest>
</package>
"""


def _ncx(identifier: str, chapters: int) -> str:
    points = "\n".join(f'<navPoint id="p{i}" playOrder="{i + 1}"><navLabel><text>Chapter {i + 1}</text></navLabel>'
                       f'<content src="index_split_{i:03d}.html"/></navPoint>' for i in range(chapters))
    return f"""<?xml version='1.0' encoding='utf-8'?>
<ncx xmlns="http://www.daisy.org/z3986/2005/ncx/" version="2005-1">
  <head><meta content="{identifier}" name="dtb:uid"/></head>
  <docTitle><text>Pass Through</text></docTitle>
  <navMap>
{points}
  </navMap>
</ncx>
"""


def _chapter(index: int, paragraphs: list[str]) -> str:
    body = "\n".join(f"<p class=\"calibre1\">{p}</p>" for p in paragraphs)
    return (f"<?xml version='1.0' encoding='utf-8'?>\n<html xmlns=\"http://www.w3.org/1999/xhtml\">\n<head>"
            f"<title>Pass Through</title></head>\n<body class=\"calibre\">\n<h2>Chapter {index + 1}</h2>\n{body}\n"
            "</body></html>\n")


NOVEL = [[f"Line {c}.{n}: the road went on through the valley." for n in range(6)] for c in range(3)]


def epub(path: Path, identifier: str, chapters: list[list[str]], folder: str = "") -> str:
    """An EPUB as Calibre's TXT conversion writes it: content.opf and toc.ncx at the root, one
    index_split_NNN.html per chapter (inside `folder` when given)."""
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("mimetype", "application/epub+zip")
        archive.writestr("META-INF/container.xml", CONTAINER)
        archive.writestr("content.opf", _opf(identifier, len(chapters)))
        archive.writestr("toc.ncx", _ncx(identifier, len(chapters)))
        for index, paragraphs in enumerate(chapters):
            archive.writestr(f"{folder}index_split_{index:03d}.html", _chapter(index, paragraphs))
        archive.writestr("stylesheet.css", ".calibre { display: block }")
    return str(path)


def epub_cases(tmp: Path, use: MetricUse) -> list[Case]:
    gold = epub(tmp / "Pass Through Gold.epub", "gold-uuid", NOVEL)
    edited = [chapter[:] for chapter in NOVEL]
    edited[1][2] = "A paragraph the converter dropped."
    return [
        Case("same novel and identifier", epub(tmp / "copy.epub", "gold-uuid", NOVEL), gold, 1.0),
        # toc.ncx's dtb:uid line keeps the identifier, so a fresh conversion scores a little under 1
        Case("same novel, another identifier", epub(tmp / "Pass Through.epub", "agent-uuid", NOVEL), gold,
             (0.95, 0.99)),
        Case("one paragraph differs", epub(tmp / "edited.epub", "x", edited), gold, (0.8, 0.99)),
        Case("only the first chapter", epub(tmp / "short.epub", "x", NOVEL[:1]), gold, (0.3, 0.99)),
        Case("HTML in a folder: OSWorld cannot copy it", epub(tmp / "folders.epub", "x", NOVEL, "text/"), gold,
             RAISES),
        Case("not converted (a .txt)", str(_text(tmp / "Pass Through.txt")), gold, 0.0),
        Case("file missing", None, gold, 0.0),
    ]


def _text(path: Path) -> Path:
    path.write_text("\n".join(" ".join(chapter) for chapter in NOVEL))
    return path


EPUB_USES = metric_uses("compare_epub")


@pytest.mark.parametrize("use", EPUB_USES, ids=[u.id for u in EPUB_USES])
def test_epub_tasks(oracle: Oracle, tmp_path: Path, use: MetricUse) -> None:
    for case in epub_cases(tmp_path, use):
        check_case(oracle, "others", "compare_epub", case, use.options)


def test_epub_edge_cases(oracle: Oracle, tmp_path: Path) -> None:
    gold = epub(tmp_path / "gold.epub", "g", NOVEL)
    empty_html = tmp_path / "empty.epub"
    with zipfile.ZipFile(empty_html, "w") as archive:
        archive.writestr("a.html", "")
    latin1 = tmp_path / "latin1.epub"
    with zipfile.ZipFile(latin1, "w") as archive:
        archive.writestr("toc.ncx", b"caf\xe9")
    for case in (Case("expected missing", gold, str(tmp_path / "missing.epub"), RAISES),
                 Case("expected None", gold, None, RAISES),
                 Case("empty HTML member", str(empty_html), gold, RAISES),
                 Case("not UTF-8", str(latin1), gold, RAISES),
                 Case("gold not a zip", gold, str(_text(tmp_path / "gold.txt")), 0.0)):
        check_case(oracle, "others", "compare_epub", case)


def test_every_task_is_covered() -> None:
    assert {u.task for u in MP3_USES} == {"multi_apps/3f05f3b9-29ba-4b6b-95aa-2204697ffc06"} and len(MP3_USES) == 5
    assert len(EPUB_USES) == 3
