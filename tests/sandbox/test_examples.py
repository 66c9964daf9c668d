"""The real-app example tasks resolve every `download` through the URL cache the local stack seeds
from examples/fixtures (no network), and each has a script whose expectation the demo checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from common import url_cache
from common.task import load_task_file
from services.cli.cache_ops import seed as seed_url_cache

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
APP_DOMAINS = ("libreoffice_calc", "libreoffice_writer", "chrome", "vlc")


def test_every_download_of_the_examples_is_in_the_seeded_cache(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    indexed = sum(len(json.loads(p.read_text())) for p in (EXAMPLES / "fixtures").rglob("index.json"))
    assert seed_url_cache(EXAMPLES / "fixtures", cache) == indexed
    downloads = 0
    for path in sorted((EXAMPLES / "tasks").rglob("*.json")):
        task = load_task_file(path)
        for step in task.config:
            if step.type != "download":
                continue
            for item in step.parameters["files"]:
                cached = url_cache.lookup(cache, item["url"], url_cache.basename_of(item["path"]))
                assert cached.read_bytes() == (EXAMPLES / "fixtures" / cached.relative_to(cache)).read_bytes()
                if "osworld" not in path.parts:  # ours use a reserved domain: nothing could fetch them
                    assert ".invalid/" in item["url"]
                downloads += 1
    assert downloads >= 4


def test_each_app_domain_has_a_task_with_a_script() -> None:
    for domain in APP_DOMAINS:
        tasks = list((EXAMPLES / "tasks" / domain).glob("*.json"))
        assert tasks, domain
        for path in tasks:
            script = json.loads((EXAMPLES / "scripts" / path.name).read_text())
            assert script["instruction"] == load_task_file(path).instruction
            assert script["expected"] == {"status": "completed", "reward": 1.0}


def test_seeding_rejects_an_index_naming_a_missing_file(tmp_path: Path) -> None:
    (tmp_path / "index.json").write_text(json.dumps({"https://x.invalid/a": "missing.csv"}))
    with pytest.raises(ValueError, match="missing.csv, which does not exist"):
        seed_url_cache(tmp_path, tmp_path / "cache")
