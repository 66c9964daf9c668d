"""Unit tests of the Chrome pieces of the OSWorld layer that need no browser: what each setup step and
getter needs (`NEEDS`) for every task of test_nogdrive.json that uses it, the parameter errors of
the Chrome setup steps, `update_browse_history`'s database edit, and the shared URL comparison.

The live browser and OSWorld differential tests are in tests/oracle/test_chrome_*.py."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from common import url_cache
from common.task import SetupStep
from services.runner.osworld import SetupContext, SetupError, getters, run_setup, setup
from services.runner.osworld.chrome_profile import HISTORY
from services.runner.osworld.requirements import INTERNET, resolve
from services.runner.osworld.setup.chrome import EMPTY_HISTORY_URL, chrome_timestamp
from services.runner.osworld.urlcompare import are_lists_equal, compare_urls, normalize_url
from tests.oracle.chrome_fixtures import empty_history
from tests.oracle.osworld_tasks import getter_configs, setup_steps
from tests.runner.osworld.test_setup import FakeEnv, Sleeps

ALWAYS_INTERNET = {"active_tab_info", "active_tab_html_parse", "gotoRecreationPage_and_get_html_content"}
BY_URL = {"page_info": "url", "pdf_from_url": "path", "info_from_website": "url"}
OFFLINE = {"open_tabs_info", "active_url_from_accessTree", "active_tab_url_parse", "url_dashPart", "url_path_parse",
           "bookmarks", "chrome_font_size", "cookie_data", "data_delete_automacally", "default_search_engine",
           "enable_do_not_track", "enable_safe_browsing", "enabled_experiments", "find_installed_extension_name",
           "find_unpacked_extension_path", "history", "new_startup_page", "profile_name", "shortcuts_on_desktop"}


def ctx(tmp_path: Path) -> SetupContext:
    return SetupContext(client_password="pw", screen=(1920, 1080), cache_dir=tmp_path / "cache", sleep=Sleeps(),
                        chromium_port=1)


@pytest.mark.parametrize("kind", sorted(ALWAYS_INTERNET | set(BY_URL) | OFFLINE))
def test_getter_needs_for_every_task(kind: str) -> None:
    configs = getter_configs(kind)
    assert configs, f"no task uses {kind}"
    assert kind in getters.GETTERS
    for task_id, config in configs:
        needs = resolve(getters.NEEDS.get(kind), config)
        if kind in ALWAYS_INTERNET:
            assert needs == {INTERNET}, task_id
        elif kind in BY_URL:  # every task's URL is an internet site
            assert needs == {INTERNET} and config[BY_URL[kind]].startswith("https://"), task_id
        else:
            assert needs == frozenset(), task_id


def test_getter_needs_follow_the_url() -> None:
    assert resolve(getters.NEEDS["page_info"], {"url": "file:///home/user/cart.html"}) == frozenset()
    assert resolve(getters.NEEDS["pdf_from_url"], {"path": "http://example.org/"}) == {INTERNET}


def test_setup_needs_for_every_task() -> None:
    steps = setup_steps("chrome_open_tabs")
    assert len(steps) == 46
    for task_id, params in steps:
        assert resolve(setup.NEEDS["chrome_open_tabs"], params) == {INTERNET}, task_id
    assert resolve(setup.NEEDS["chrome_open_tabs"], {"urls_to_open": ["file:///home/user/a.html"]}) == frozenset()
    for kind in ("chrome_close_tabs", "update_browse_history"):
        for task_id, params in setup_steps(kind):
            assert resolve(setup.NEEDS.get(kind), params) == frozenset(), task_id


@pytest.mark.parametrize(("kind", "params", "message"), [
    ("chrome_open_tabs", {}, "missing parameter 'urls_to_open'"),
    ("chrome_open_tabs", {"urls_to_open": "https://x.org"}, "must be a list of URL strings"),
    ("chrome_close_tabs", {"urls_to_close": [1]}, "must be a list of URL strings"),
    ("update_browse_history", {}, "missing parameter 'history'"),
    ("update_browse_history", {"history": [{"url": "u", "title": "t"}]}, "visit_time_from_now_in_seconds"),
])
def test_setup_parameter_errors(tmp_path: Path, kind: str, params: dict[str, Any], message: str) -> None:
    env = FakeEnv()
    with pytest.raises(SetupError, match=message):
        run_setup([SetupStep(type=kind, parameters=params)], env, ctx(tmp_path))
    assert env.calls == []  # nothing was sent to the env


def test_update_browse_history_writes_chrome_timestamps(tmp_path: Path) -> None:
    [(_, params)] = setup_steps("update_browse_history")
    context = ctx(tmp_path)
    url_cache.store(context.cache_dir, EMPTY_HISTORY_URL, empty_history(tmp_path / "empty.sqlite").read_bytes())
    env = FakeEnv()
    before = chrome_timestamp(datetime.now(UTC))
    run_setup([SetupStep(type="update_browse_history", parameters=params)], env, context)
    after = chrome_timestamp(datetime.now(UTC))
    uploaded = tmp_path / "History"
    uploaded.write_bytes(env.files[HISTORY])
    connection = sqlite3.connect(uploaded)
    urls = connection.execute("SELECT id, url, title, visit_count, last_visit_time FROM urls ORDER BY id").fetchall()
    visits = connection.execute("SELECT url, visit_time, transition FROM visits ORDER BY id").fetchall()
    connection.close()
    assert [(u, t) for _, u, t, _, _ in urls] == [(h["url"], h["title"]) for h in params["history"]]
    for (row_id, _, _, count, stamp), item, visit in zip(urls, params["history"], visits, strict=True):
        offset = int(item["visit_time_from_now_in_seconds"] * 1_000_000)
        assert before - offset <= stamp <= after - offset
        assert count == 1 and visit == (row_id, stamp, 805306368)


def test_update_browse_history_cache_miss_and_bad_database(tmp_path: Path) -> None:
    [(_, params)] = setup_steps("update_browse_history")
    context = ctx(tmp_path)
    with pytest.raises(SetupError, match="history_empty.sqlite.*not in the URL cache"):
        run_setup([SetupStep(type="update_browse_history", parameters=params)], FakeEnv(), context)
    url_cache.store(context.cache_dir, EMPTY_HISTORY_URL, b"not a database")
    with pytest.raises(SetupError, match="not a Chrome History database"):
        run_setup([SetupStep(type="update_browse_history", parameters=params)], FakeEnv(), context)


def test_chrome_timestamp_epoch() -> None:
    assert chrome_timestamp(datetime(1601, 1, 1, tzinfo=UTC)) == 0
    assert chrome_timestamp(datetime(1970, 1, 1, tzinfo=UTC)) == 11_644_473_600_000_000


@pytest.mark.parametrize(("a", "b", "same"), [
    ("https://www.airbnb.com/", "https://airbnb.com.sg", True),  # www and the public suffix ignored
    ("https://www.airbnb.com/", "http://airbnb.com", False),  # the scheme counts
    ("github.com", "http://github.com/", True),  # no scheme: http
    ("https://a.example.com/x?q=1", "https://a.example.org/x?q=2", False),
    (".amazon.com", "amazon.com", True),
    (None, None, True),
    (None, "https://x.org", False),
])
def test_compare_urls(a: str | None, b: str | None, same: bool) -> None:
    assert compare_urls(a, b) is same


def test_normalize_url_and_lists() -> None:
    assert normalize_url("HTTPS://WWW.Docs.Python.org/3/") == "https://www.docs.python/3/"  # www.docs is kept
    assert normalize_url("https://x.org/p?q=1#f", full=False) == "https://x/p"
    assert are_lists_equal(["a", "a"], ["a", "b"], str.__eq__)  # OSWorld's check is not a bijection
    assert not are_lists_equal(["a"], ["a", "b"], str.__eq__)
