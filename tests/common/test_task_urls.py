"""Which files an OSWorld task downloads (common/task_urls.py), on hand-made shapes and OSWorld's own tasks."""

from __future__ import annotations

import json
from pathlib import Path

from common.task_urls import task_files, unique_urls

OSWORLD = Path(__file__).resolve().parents[3] / "shared" / "osworld"


def test_every_place_a_task_downloads_from_is_listed() -> None:
    task = {
        "config": [{"type": "download",
                    "parameters": {"files": [{"url": "https://h/a.xlsx", "path": "/home/user/a.xlsx"}]}},
                   {"type": "open", "parameters": {"path": "/home/user/a.xlsx"}}],
        "evaluator": {
            "postconfig": [{"type": "download", "parameters": {"files": [{"url": "https://h/p.py", "path": "p.py"}]}}],
            "result": [{"type": "vm_file", "path": "/home/user/a.xlsx", "dest": "a.xlsx"},
                       {"type": "cloud_file", "path": "https://h/r.txt", "dest": "r.txt"}],
            "expected": [{"type": "cloud_file", "path": ["https://h/e1.png", "https://h/e2.png"],
                          "dest": ["e1.png", "e2.png"], "multi": True},
                         {"type": "rule", "rules": {"url": "https://not-a-file"}}]}}
    files = task_files(task)
    assert [(f.url, f.basename, f.where) for f in files] == [
        ("https://h/a.xlsx", "a.xlsx", "config"), ("https://h/p.py", "p.py", "postconfig"),
        ("https://h/r.txt", "r.txt", "result"), ("https://h/e1.png", "e1.png", "expected"),
        ("https://h/e2.png", "e2.png", "expected")]


def test_osworld_offline_set_lists_every_download_step_url() -> None:
    index = json.loads((OSWORLD / "test_nogdrive.json").read_text())
    tasks = [json.loads((OSWORLD / "examples" / d / f"{i}.json").read_text()) for d, ids in index.items() for i in ids]
    urls = unique_urls(tasks)
    steps = {f["url"] for t in tasks for s in t.get("config", []) if s["type"] == "download"
             for f in s["parameters"]["files"]}
    assert steps <= set(urls) and len(urls) > len(steps)  # plus postconfig downloads and cloud_file getters
    assert all(u.startswith(("http://", "https://")) for u in urls)
