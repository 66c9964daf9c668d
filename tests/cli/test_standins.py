"""Stand-in files for the URL cache (services/cli/standins.py, standin_formats.py): each type opens in the
library a checker reads it with, the bytes depend only on the URL, two URLs never share content, and
`cua-rollout cache standins` loads one for every URL of OSWorld's offline index (kept by `fill`'s rules)."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from common import url_cache
from common.task import load_task_set
from common.task_urls import TaskFile, unique_urls
from services.cli import cache_ops, standins

ROOT = Path(__file__).resolve().parents[2]
NOGDRIVE = ROOT.parent / "shared" / "osworld" / "test_nogdrive.json"
BASE = "https://huggingface.co/datasets/xlangai/ubuntu_osworld_file_cache/resolve/main/x/"


def _open(name: str, data: bytes) -> object:
    """Open `data` as the library of its type would (what OSWorld's checkers read them with)."""
    kind = standins.kind_of(name)
    if kind in (".xlsx", ".xls"):
        import openpyxl
        return openpyxl.load_workbook(io.BytesIO(data)).active["D14"].value
    if kind == ".docx":
        import docx
        return docx.Document(io.BytesIO(data)).paragraphs[1].text
    if kind == ".pptx":
        import pptx
        return pptx.Presentation(io.BytesIO(data)).slides[0].placeholders[1].text
    if kind == ".pdf":
        import pymupdf
        return pymupdf.open(stream=data, filetype="pdf")[0].get_text().splitlines()[0]
    if kind in (".png", ".jpg", ".gif", ".webp", ".xcf"):
        from PIL import Image
        return Image.open(io.BytesIO(data)).size
    if kind in (".odt", ".ods"):
        from odf.opendocument import load
        from odf.text import P
        return str(load(io.BytesIO(data)).getElementsByType(P)[-1])
    if kind in (".zip", ".whl", ".vsix", ".epub"):
        return zipfile.ZipFile(io.BytesIO(data)).namelist()
    if kind in (".tar.gz", ".tar.xz"):
        return tarfile.open(fileobj=io.BytesIO(data)).getnames()
    if kind == ".json":
        return json.loads(data)["standin"]
    if kind == ".py":
        return compile(data, name, "exec") and "ok"
    return data.decode()


@pytest.mark.parametrize("name", ["a.xlsx", "b.xls", "c.docx", "d.pptx", "e.pdf", "f.png", "g.jpg", "h.gif",
                                  "i.webp", "j.xcf", "k.zip", "l.tar.gz", "m.tar.xz", "n.json", "o.py",
                                  "p.sh", "q.csv", "r.html", "s.txt", "t.srt", "u.epub", "v.odt", "w.ods",
                                  "x.whl", "y.vsix", "z.code-workspace"])
def test_each_type_opens_is_deterministic_and_distinct_per_url(name: str) -> None:
    first = standins.standin_bytes(BASE + name, name)
    assert standins.standin_bytes(BASE + name, name) == first  # same URL, same bytes (no time in them)
    other = standins.standin_bytes(BASE + "other/" + name, name)
    assert other != first
    opened, opened_other = _open(name, first), _open(name, other)
    assert opened is not None
    if isinstance(opened, str) and standins.kind_of(name) not in (".py",):
        assert opened != opened_other  # the content itself differs, not only metadata


def test_media_are_playable_and_distinct(tmp_path: Path) -> None:
    for name in ("clip.mp4", "song.mp3", "tone.wav"):
        data = standins.standin_bytes(BASE + name, name)
        assert data == standins.standin_bytes(BASE + name, name)
        (tmp_path / name).write_bytes(data)
        probe = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0",
                                str(tmp_path / name)], capture_output=True, check=True)
        assert 2.5 < float(probe.stdout) < 3.5
        assert standins.standin_bytes(BASE + "x" + name, name) != data


def test_stand_in_test_suite_never_passes(tmp_path: Path) -> None:
    path = tmp_path / "test_suite.py"
    path.write_bytes(standins.standin_bytes(BASE + "test.py", "test_suite.py"))
    result = subprocess.run([sys.executable, "-c", "import test_suite; print(test_suite.test(), test_suite.any())"],
                            cwd=tmp_path, capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["False", "False"]


def test_wheel_installs_with_pip(tmp_path: Path) -> None:
    name = "cssselect-1.3.0-py3-none-any.whl"
    (tmp_path / name).write_bytes(standins.standin_bytes(BASE + name, name))
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--target",
                    str(tmp_path / "site"), str(tmp_path / name)], check=True, capture_output=True, timeout=120)
    assert (tmp_path / "site" / "cssselect-1.3.0.dist-info" / "METADATA").is_file()


def test_file_name_prefers_the_destination_extension() -> None:
    assert standins.file_name(TaskFile(BASE + "file_1t5.bin", "background_script.js", "expected")) \
        == "background_script.js"
    assert standins.file_name(TaskFile(BASE + "Pass%20Through.epub", "", "expected")) == "Pass Through.epub"
    assert standins.kind_of("a.TAR.GZ") == ".tar.gz" and standins.kind_of("x.tgz") == ".tar.gz"


def test_load_keeps_real_files_and_fill_replaces_stand_ins(tmp_path: Path) -> None:
    real = TaskFile(BASE + "real.xlsx", "/home/user/real.xlsx", "config")
    made = TaskFile(BASE + "made.docx", "/home/user/made.docx", "config")
    source = tmp_path / "real.xlsx"
    source.write_bytes(b"real bytes")
    cache_ops.add(tmp_path / "cache", real.url, source)
    result = standins.load(tmp_path / "cache", [real, made])
    assert result.generated == [made.url] and result.kept == [real.url]
    assert url_cache.lookup(tmp_path / "cache", real.url).read_bytes() == b"real bytes"
    manifest = cache_ops.read_manifest(tmp_path / "cache")
    assert manifest[made.url]["source"] == "stand-in" and manifest[real.url]["source"] == "cache add"
    assert standins.load(tmp_path / "cache", [real, made]).generated == []  # idempotent
    # `fill` counts a stand-in as missing: it tries to fetch it (here: unreachable, so the stand-in stays).
    filled = cache_ops.fill(tmp_path / "cache", [TaskFile("http://127.0.0.1:9/m.docx", "m.docx", "config")],
                            timeout_s=5)
    assert filled.failed and not filled.present
    standins.load(tmp_path / "cache", [TaskFile("http://127.0.0.1:9/m.docx", "m.docx", "config")])
    again = cache_ops.fill(tmp_path / "cache", [TaskFile("http://127.0.0.1:9/m.docx", "m.docx", "config")],
                           timeout_s=5)
    assert again.present == [] and list(again.failed) == ["http://127.0.0.1:9/m.docx"]


@pytest.mark.skipif(not NOGDRIVE.is_file(), reason="OSWorld's index is not in ../shared/osworld")
def test_cli_loads_a_distinct_stand_in_for_every_url_of_the_offline_index(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "services.cli", "cache", "standins", str(NOGDRIVE),
                             "--cache-dir", str(tmp_path)], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert result.returncode == 0, result.stderr
    urls = unique_urls(task.model_dump() for task in load_task_set(NOGDRIVE).tasks)
    assert f"{len(urls)} stand-ins generated" in result.stdout
    digests = {hashlib.sha256(url_cache.lookup(tmp_path, url).read_bytes()).hexdigest() for url in urls}
    assert len(digests) == len(urls)  # no two URLs share content: no gold file equals a start file
    manifest = cache_ops.read_manifest(tmp_path)
    assert {entry["source"] for entry in manifest.values()} == {"stand-in"} and len(manifest) == len(urls)


def test_history_stand_in_takes_chromes_visits(tmp_path: Path) -> None:
    """`update_browse_history` (chrome/44ee5668) inserts visits into OSWorld's empty History database."""
    from datetime import UTC, datetime

    from common.task_urls import EMPTY_HISTORY_URL, task_files
    from services.runner.osworld.setup.chrome import add_history

    task = {"config": [{"type": "update_browse_history", "parameters": {"history": []}}], "evaluator": {}}
    [item] = task_files(task)
    assert item.url == EMPTY_HISTORY_URL
    path = tmp_path / "History"
    path.write_bytes(standins.standin_bytes(item.url, standins.file_name(item)))
    add_history(path, [("https://example.test/", "Example", 60.0)], datetime(2024, 1, 1, tzinfo=UTC))
    import sqlite3
    with sqlite3.connect(path) as connection:
        assert connection.execute("SELECT url, title FROM urls").fetchall() == [("https://example.test/", "Example")]


def test_archives_hold_the_files_a_task_opens_inside_them() -> None:
    """multi_apps/5df7b33a unzips book.zip on the Desktop, then opens a PDF inside it."""
    url = BASE + "raw_book.zip"
    download = {"files": [{"url": url, "path": "/home/user/Desktop/book.zip"}]}
    task = {"config": [{"type": "download", "parameters": download},
                       {"type": "execute", "parameters": {"command": ["unzip", "/home/user/Desktop/book.zip"]}},
                       {"type": "open", "parameters": {"path": "/home/user/Desktop/book/Spectral Graph Theory.pdf"}},
                       {"type": "open", "parameters": {"path": "/home/user/Desktop/.hidden/x.txt"}}],
            "evaluator": {}}
    members = standins.archive_members([task])
    assert members == {url: ["book/Spectral Graph Theory.pdf"]}
    archive = zipfile.ZipFile(io.BytesIO(standins.standin_bytes(url, "book.zip", members=members[url])))
    assert archive.read("book/Spectral Graph Theory.pdf").startswith(b"%PDF")


def test_archives_extracted_elsewhere_hold_the_folder_the_setup_enters() -> None:
    """multi_apps/2c9fc0de: `unzip binder.zip -d ~/projects/ && cd ~/projects/binder`."""
    url = BASE + "binder.zip"
    download = {"files": [{"url": url, "path": "/home/user/Downloads/binder.zip"}]}
    command = "unzip -q /home/user/Downloads/binder.zip -d /home/user/projects/ && cd /home/user/projects/binder"
    task = {"config": [{"type": "download", "parameters": download},
                       {"type": "execute", "parameters": {"command": ["/bin/bash", "-c", command]}}],
            "evaluator": {}}
    assert standins.archive_members([task]) == {url: ["binder/README.txt"]}
