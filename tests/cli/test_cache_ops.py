"""`cua-rollout cache fill|add|seed` (services/cli/cache_ops.py) against a real HTTP server: each URL fetched
once into the runners' URL cache with its checksum and size recorded, failures named per URL, offline adds."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from common import url_cache
from common.task_urls import TaskFile
from services.cli import cache_ops
from tests.servers import serve_app

ROOT = Path(__file__).resolve().parents[2]
FILES = {"/a.xlsx": b"PK\x03\x04 sheet", "/b.docx": b"PK\x03\x04 document" * 1000}


@pytest.fixture()
def file_server() -> Iterator[tuple[str, list[str]]]:
    """A real HTTP server with `FILES` (404 for anything else); yields its URL and the paths requested."""
    requested: list[str] = []

    async def serve(request: Request) -> Response:
        requested.append(request.url.path)
        body = FILES.get(request.url.path)
        return Response(body, 200) if body is not None else Response(b"no", 404)

    app = Starlette(routes=[Route("/{name:path}", serve)])
    with serve_app(app) as url:
        yield url, requested


def test_fill_fetches_each_url_once_and_records_checksums(tmp_path: Path, file_server: tuple[str, list[str]]) -> None:
    url, requested = file_server
    files = [TaskFile(f"{url}/a.xlsx", "/home/user/a.xlsx", "config"),
             TaskFile(f"{url}/b.docx", "/home/user/b.docx", "expected"),
             TaskFile(f"{url}/gone.pdf", "/home/user/gone.pdf", "config")]
    result = cache_ops.fill(tmp_path, files)
    assert sorted(result.fetched) == [f"{url}/a.xlsx", f"{url}/b.docx"] and result.present == []
    assert result.failed == {f"{url}/gone.pdf": "HTTP 404"}
    for name in ("a.xlsx", "b.docx"):
        assert url_cache.lookup(tmp_path, f"{url}/{name}").read_bytes() == FILES[f"/{name}"]
    manifest = json.loads((tmp_path / cache_ops.MANIFEST_FILE).read_text())
    entry = manifest[f"{url}/b.docx"]
    assert entry["bytes"] == len(FILES["/b.docx"]) and entry["sha256"] == hashlib.sha256(FILES["/b.docx"]).hexdigest()
    assert f"{url}/gone.pdf" not in manifest and not list(tmp_path.glob(".fill-*"))  # no partial file left
    again = cache_ops.fill(tmp_path, files)
    assert sorted(again.present) == [f"{url}/a.xlsx", f"{url}/b.docx"] and again.fetched == []
    assert requested.count("/a.xlsx") == 1  # never fetched twice


def test_fill_names_an_unreachable_host(tmp_path: Path) -> None:
    result = cache_ops.fill(tmp_path, [TaskFile("http://127.0.0.1:9/x.csv", "x.csv", "config")], timeout_s=5)
    assert list(result.failed) == ["http://127.0.0.1:9/x.csv"] and "ConnectError" in result.failed[
        "http://127.0.0.1:9/x.csv"]


def test_add_puts_a_local_file_under_its_url(tmp_path: Path) -> None:
    source = tmp_path / "local.csv"
    source.write_text("a,b\n1,2\n")
    path = cache_ops.add(tmp_path / "cache", "https://example.test/data.csv", source)
    assert url_cache.lookup(tmp_path / "cache", "https://example.test/data.csv") == path
    assert json.loads((tmp_path / "cache" / cache_ops.MANIFEST_FILE).read_text())[
        "https://example.test/data.csv"]["source"] == "cache add"
    with pytest.raises(ValueError, match="not an http"):
        cache_ops.add(tmp_path / "cache", "ftp://example.test/x", source)
    with pytest.raises(ValueError, match="is not a file"):
        cache_ops.add(tmp_path / "cache", "https://example.test/x", tmp_path / "missing")


def test_cache_fill_command_prints_each_failed_url_and_exits_1(tmp_path: Path,
                                                              file_server: tuple[str, list[str]]) -> None:
    url, _ = file_server
    task = {"id": "t1", "instruction": "x", "config": [{"type": "download", "parameters": {"files": [
        {"url": f"{url}/a.xlsx", "path": "/home/user/a.xlsx"}, {"url": f"{url}/nope.pptx", "path": "n.pptx"}]}}],
        "evaluator": {"func": "compare_table", "result": {"type": "vm_file", "path": "/home/user/a.xlsx"},
                      "expected": {"type": "cloud_file", "path": f"{url}/b.docx", "dest": "b.docx"}}}
    (tmp_path / "t1.json").write_text(json.dumps(task))
    done = subprocess.run([sys.executable, "-m", "services.cli", "cache", "fill", str(tmp_path / "t1.json"),
                           "--cache-dir", str(tmp_path / "cache")], capture_output=True, text=True, timeout=120,
                          cwd=ROOT)
    assert done.returncode == 1, done.stderr
    assert f"failed {url}/nope.pptx: HTTP 404" in done.stderr
    assert "2 fetched, 0 already present, 1 failed, of 3 URLs" in " ".join(done.stdout.split())
    assert url_cache.lookup(tmp_path / "cache", f"{url}/b.docx").read_bytes() == FILES["/b.docx"]


def test_seed_copies_the_example_fixtures(tmp_path: Path) -> None:
    count = cache_ops.seed(ROOT / "examples" / "fixtures", tmp_path)
    index = url_cache.read_index(tmp_path / url_cache.INDEX_FILE)
    assert count == len(index) > 0
    assert all(url_cache.lookup(tmp_path, url).is_file() for url in index)
