"""The URL cache's index files (`common/url_cache.py`): the runners' cache index and the fixtures indexes the
local stack seeds it from name the broken file and what is wrong with it."""

from __future__ import annotations

from pathlib import Path

import pytest

from common import url_cache
from services.cli.cache_ops import seed as seed_url_cache


def test_lookup_names_an_unreadable_cache_index(tmp_path: Path) -> None:
    (tmp_path / url_cache.INDEX_FILE).write_text("{not json")
    with pytest.raises(url_cache.CacheMiss, match=r"cannot read URL cache index .*index\.json"):
        url_cache.lookup(tmp_path, "http://example.test/a.txt")
    (tmp_path / url_cache.INDEX_FILE).write_text('["a list"]')
    with pytest.raises(url_cache.CacheMiss, match="must map URL -> file name"):
        url_cache.lookup(tmp_path, "http://example.test/a.txt")


def test_lookup_follows_the_index(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a")
    (tmp_path / url_cache.INDEX_FILE).write_text('{"http://example.test/a.txt": "a.txt"}')
    assert url_cache.lookup(tmp_path, "http://example.test/a.txt") == tmp_path / "a.txt"


def test_seeding_names_a_fixtures_index_that_is_not_an_object(tmp_path: Path) -> None:
    fixtures = tmp_path / "fixtures" / "domain"
    fixtures.mkdir(parents=True)
    (fixtures / url_cache.INDEX_FILE).write_text('"just a string"')
    with pytest.raises(ValueError, match=r"fixtures index .*domain/index\.json must map URL -> file name"):
        seed_url_cache(tmp_path / "fixtures", tmp_path / "cache")
