"""Differential tests: our Chrome getters that read profile files or the accessibility tree
(`services/runner/osworld/getters/chrome/profile.py`, `urls.py`) against OSWorld's own
`desktop_env/evaluators/getters/chrome.py`, both given the same env: the same files at the same
paths, the same accessibility tree, the same desktop listing (ours through the `FakeEnv` double,
OSWorld's through the oracle's `controller` stand-in). Getter configs come from the tasks' JSON.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from services.runner.osworld import GETTERS, EvalError, chrome_profile
from tests.oracle.chrome_fixtures import (
    a11y_tree,
    bookmarks_file,
    cookies_db,
    eval_context,
    history_db,
    local_state,
    our_env,
    preferences,
    their_env,
)
from tests.oracle.client import Oracle, same_value
from tests.oracle.osworld_tasks import getter_configs

STUBS = ("pydrive", "pydrive.auth", "pydrive.drive")  # imported by OSWorld's getters, unused here
OSWORLD_NAME = {  # getter type -> OSWorld function, where it is not get_<type>
    "url_path_parse": "get_url_path_parse",
}


def _as_oracle_sees(value: Any) -> Any:
    """Our value as the oracle's JSON reply shows it (tuples as lists, bytes as their repr)."""
    if isinstance(value, bytes):
        return repr(value)
    if isinstance(value, list | tuple):
        return [_as_oracle_sees(v) for v in value]
    if isinstance(value, dict):
        return {k: _as_oracle_sees(v) for k, v in value.items()}
    return value


def check(oracle: Oracle, tmp_path: Path, kind: str, config: dict[str, Any], *, files: dict[str, bytes] | None = None,
          tree: str | None = None, desktop: dict[str, Any] | None = None, expect: Any = ...) -> Any:
    """Run getter `kind` with `config` here and in OSWorld on the same env; assert equal values (or
    EvalError here where OSWorld raised). `expect`: the value the fixture is meant to give."""
    theirs = oracle.call("getters.chrome", OSWORLD_NAME.get(kind, f"get_{kind}"), stubs=STUBS, config=dict(config),
                         env=their_env(tmp_path, files, tree, desktop))
    try:
        ours = GETTERS[kind](our_env(files, tree, desktop), dict(config), eval_context(tmp_path))
    except EvalError as exc:
        assert not theirs.ok, f"{kind}: ours raised {exc}, OSWorld returned {theirs.value!r}"
        return exc
    assert theirs.ok, f"{kind}: OSWorld raised {theirs.error}, ours returned {ours!r}"
    assert same_value(_as_oracle_sees(ours), theirs.value), f"{kind}: ours {ours!r} != OSWorld {theirs.value!r}"
    if expect is not ...:
        assert ours == expect
    return ours


def _configs(kind: str) -> list[dict[str, Any]]:
    found = [config for _, config in getter_configs(kind)]
    assert found, f"no task uses getter {kind}"
    return found


def _ids(kind: str) -> list[str]:
    return [f"{task_id[:8]}" for task_id, _ in getter_configs(kind)]


# --- Preferences / Local State --------------------------------------------------------------------------

PREFS = chrome_profile.PREFERENCES
BROKEN_PREFS: list[bytes | None] = [None, b"", b"{not json", b"[1, 2]"]
"""A missing file, an empty one, broken JSON, JSON of the wrong shape: each getter's fallback."""

PREFERENCE_CASES: dict[str, list[tuple[bytes, Any]]] = {
    "default_search_engine": [
        (preferences(default_search_provider_data={"template_url_data": {"short_name": "Bing", "keyword": "bing.com"}}),
         "Bing"),
        (preferences(), "Google"),
        (preferences(default_search_provider_data={"template_url_data": {"keyword": "duckduckgo.com"}}), "Google"),
    ],
    "profile_name": [(preferences(profile={"name": "Thomas"}), "Thomas"), (preferences(profile={}), None)],
    "chrome_font_size": [
        (preferences(webkit={"webprefs": {"default_font_size": 24, "default_fixed_font_size": 13}}),
         {"default_font_size": 24, "default_fixed_font_size": 13}),
        (preferences(), {"default_fixed_font_size": 13, "default_font_size": 16, "minimum_font_size": 13}),
    ],
    "enable_do_not_track": [(preferences(enable_do_not_track=True), "true"),
                            (preferences(enable_do_not_track=False), "false"), (preferences(), "false")],
    "enable_safe_browsing": [(preferences(safebrowsing={"enabled": True, "enhanced": False}), "true"),
                             (preferences(safebrowsing={"enhanced": True}), "true"),
                             (preferences(safebrowsing={"enabled": False}), "false"), (preferences(), "false")],
    "new_startup_page": [(preferences(), "true"), (preferences(session={"restore_on_startup": 5}), "true"),
                         (preferences(session={"restore_on_startup": 4, "startup_urls": ["https://funbrain.com/"]}),
                          "false"), (preferences(session={}), "false")],
    "find_unpacked_extension_path": [
        (preferences(extensions={"settings": {
            "ahfgeienlihckogmohjhadlkjgocpleb": {"path": "ahfgeienlihckogmohjhadlkjgocpleb/1.0.0_0", "location": 5},
            "kfgkmhbplnmcngnlldmjjphnmgmdjjmm": {"path": "/home/user/Desktop/helloExtension", "location": 4}}}),
         ["ahfgeienlihckogmohjhadlkjgocpleb/1.0.0_0", "/home/user/Desktop/helloExtension"]),
        (preferences(extensions={"settings": {"abc": {"location": 4}}}), "Google"),
        (preferences(), []),
    ],
    "find_installed_extension_name": [
        (preferences(extensions={"settings": {
            "a": {"manifest": {"name": "React Developer Tools", "version": "5.0"}},
            "b": {"manifest": {"name": "Google Translate"}}}}), ["React Developer Tools", "Google Translate"]),
        (preferences(extensions={"settings": {"a": {"path": "x"}}}), "Google"),
    ],
    "data_delete_automacally": [
        (preferences(profile={"default_content_setting_values": {"cookies": 4}}), "true"),
        (preferences(profile={"name": "Person 1"}), "false"),
        (json.dumps({"browser": {}}).encode(), "Google"),
    ],
}


@pytest.mark.parametrize("kind", sorted(PREFERENCE_CASES))
def test_preferences_getters(oracle: Oracle, tmp_path: Path, kind: str) -> None:
    for config in _configs(kind):
        for content, expected in PREFERENCE_CASES[kind]:
            check(oracle, tmp_path, kind, config, files={PREFS: content}, expect=expected)
        for broken in BROKEN_PREFS:
            check(oracle, tmp_path, kind, config, files={} if broken is None else {PREFS: broken})


def test_enabled_experiments(oracle: Oracle, tmp_path: Path) -> None:
    for config in _configs("enabled_experiments"):
        flags = ["chrome-refresh-2023@2", "chrome-webui-refresh-2023@2"]
        check(oracle, tmp_path, "enabled_experiments", config, files={chrome_profile.LOCAL_STATE: local_state(flags)},
              expect=flags)
        check(oracle, tmp_path, "enabled_experiments", config, files={chrome_profile.LOCAL_STATE: local_state(None)},
              expect=[])
        check(oracle, tmp_path, "enabled_experiments", config, files={}, expect=[])
        check(oracle, tmp_path, "enabled_experiments", config, files={chrome_profile.LOCAL_STATE: b"{"}, expect=[])


def test_bookmarks(oracle: Oracle, tmp_path: Path) -> None:
    roots = {"bookmark_bar": {"children": [{"type": "folder", "name": "Favorites", "children": []},
                                          {"type": "url", "name": "T", "url": "https://jalammar.github.io/"}],
                              "name": "Bookmarks bar", "type": "folder"},
             "other": {"children": [], "name": "Other bookmarks", "type": "folder"}}
    for config in _configs("bookmarks"):
        check(oracle, tmp_path, "bookmarks", config, files={chrome_profile.BOOKMARKS: bookmarks_file(roots)},
              expect=roots)
        check(oracle, tmp_path, "bookmarks", config, files={chrome_profile.BOOKMARKS: b'{"version": 1}'}, expect={})
        check(oracle, tmp_path, "bookmarks", config, files={}, expect=[])
        check(oracle, tmp_path, "bookmarks", config, files={chrome_profile.BOOKMARKS: b""}, expect=[])
        assert isinstance(check(oracle, tmp_path, "bookmarks", config, files={chrome_profile.BOOKMARKS: b"{x"}),
                          EvalError)
        assert isinstance(check(oracle, tmp_path, "bookmarks", config, files={chrome_profile.BOOKMARKS: b"[]"}),
                          EvalError)


def test_history(oracle: Oracle, tmp_path: Path) -> None:
    rows = [("https://www.youtube.com/watch?v=dQw4w9WgXcQ", "Video - YouTube", 13370000000000000),
            ("https://github.com/xlang-ai/OSWorld", "OSWorld", 13370000000000001)]
    for config in _configs("history"):
        database = history_db(tmp_path / "fixture-history", rows)
        ours = check(oracle, tmp_path, "history", config, files={chrome_profile.HISTORY: database})
        assert ours == rows
        check(oracle, tmp_path, "history", config, files={}, expect=None)
        check(oracle, tmp_path, "history", config, files={chrome_profile.HISTORY: b"not sqlite"}, expect=None)
        check(oracle, tmp_path, "history", {"type": "history"}, files={chrome_profile.HISTORY: database}, expect=None)


def test_cookie_data(oracle: Oracle, tmp_path: Path) -> None:
    for config in _configs("cookie_data"):
        database = cookies_db(tmp_path / "fixture-cookies", [(".amazon.com", "session-id"), (".google.com", "NID")])
        ours = check(oracle, tmp_path, "cookie_data", config, files={chrome_profile.COOKIES: database})
        assert [row[1] for row in ours] == [".amazon.com", ".google.com"]
        check(oracle, tmp_path, "cookie_data", config, files={}, expect=None)
        check(oracle, tmp_path, "cookie_data", config, files={chrome_profile.COOKIES: b""}, expect=None)


def test_shortcuts_on_desktop(oracle: Oracle, tmp_path: Path) -> None:
    entry = ("[Desktop Entry]\nVersion=1.0\nType=Application\nName=Page\n"
             "Exec=/opt/google/chrome/google-chrome --profile-directory=Default --app-id=abc\n")
    desktop = {"name": "Desktop", "type": "directory",
               "children": [{"name": "chrome-abc-Default.desktop", "type": "file"},
                            {"name": "notes.txt", "type": "file"}]}
    files = {f"{chrome_profile.DESKTOP}/chrome-abc-Default.desktop": entry.encode(),
             f"{chrome_profile.DESKTOP}/notes.txt": b"hello"}
    for config in _configs("shortcuts_on_desktop"):
        check(oracle, tmp_path, "shortcuts_on_desktop", config, files=files, desktop=desktop,
              expect={"chrome-abc-Default.desktop": entry})
        check(oracle, tmp_path, "shortcuts_on_desktop", config, files=files,
              desktop={"name": "Desktop", "type": "directory", "children": []}, expect={})
        # a listed shortcut that cannot be read: both raise
        assert isinstance(check(oracle, tmp_path, "shortcuts_on_desktop", config, files={}, desktop=desktop), EvalError)


# --- the accessibility tree -----------------------------------------------------------------------------

ADDRESS = "drugs.com/npc/"


@pytest.mark.parametrize("config", _configs("active_url_from_accessTree"), ids=_ids("active_url_from_accessTree"))
def test_active_url_from_accessTree(oracle: Oracle, tmp_path: Path, config: dict[str, Any]) -> None:  # noqa: N802
    kind = "active_url_from_accessTree"
    url = check(oracle, tmp_path, kind, config, tree=a11y_tree(ADDRESS))
    assert url == f"{config.get('goto_prefix', 'https://')}{ADDRESS}"
    check(oracle, tmp_path, kind, config, tree=a11y_tree("first.com/a", "second.com/b"),
          expect=f"{config.get('goto_prefix', 'https://')}first.com/a")
    check(oracle, tmp_path, kind, config, tree=a11y_tree(ADDRESS, None), expect=None)  # last bar empty
    check(oracle, tmp_path, kind, config, tree=a11y_tree(), expect=None)  # no address bar
    check(oracle, tmp_path, kind, config, tree=None, expect=None)  # no tree
    assert isinstance(check(oracle, tmp_path, kind, config, tree="<desktop-frame><application"), EvalError)


def test_active_url_from_chromium_tree_is_a_deliberate_difference(oracle: Oracle, tmp_path: Path) -> None:
    """The env pod's browser is Debian chromium, whose tree names the application "Chromium" (as on
    OSWorld's ARM VMs, where OSWorld looks for that name). OSWorld on x86 looks only for
    "Google Chrome" and finds nothing; ours falls back to "Chromium"."""
    tree = a11y_tree(ADDRESS, app="Chromium")
    theirs = oracle.call("getters.chrome", "get_active_url_from_accessTree", stubs=STUBS, config={},
                         env=their_env(tmp_path, tree=tree))
    assert theirs.ok and theirs.value is None
    ours = GETTERS["active_url_from_accessTree"](our_env(tree=tree), {}, eval_context(tmp_path))
    assert ours == f"https://{ADDRESS}"


def _query_url(config: dict[str, Any], missing: int = 0) -> str:
    """An address-bar URL whose query has a value (with commas, spaces, non-ASCII) for each of the
    config's `parse_keys` but the last `missing` ones, plus an unrelated parameter."""
    keys = list(config["parse_keys"])[: len(config["parse_keys"]) - missing]
    values = [f"v{i},Zürich x" if i % 2 else f"{i}" for i in range(len(keys))]
    query = "&".join(f"{quote(k)}={quote(v)}" for k, v in zip(keys, values, strict=True))
    return f"shop.example.com/search?utm=1&{query}"


@pytest.mark.parametrize("config", _configs("active_tab_url_parse"), ids=_ids("active_tab_url_parse"))
def test_active_tab_url_parse(oracle: Oracle, tmp_path: Path, config: dict[str, Any]) -> None:
    kind = "active_tab_url_parse"
    parsed = check(oracle, tmp_path, kind, config, tree=a11y_tree(_query_url(config)))
    assert isinstance(parsed, dict) and len(parsed) == len(config["parse_keys"])
    check(oracle, tmp_path, kind, config, tree=a11y_tree(_query_url(config, missing=1)))
    check(oracle, tmp_path, kind, config, tree=a11y_tree("shop.example.com/"))
    check(oracle, tmp_path, kind, config, tree=None, expect=None)
    bad = {**config, "replace": {"not_a_parse_key": "x"}}
    assert isinstance(check(oracle, tmp_path, kind, bad, tree=a11y_tree(_query_url(config))), EvalError)
    no_keys = {k: v for k, v in config.items() if k != "parse_keys"}
    assert isinstance(check(oracle, tmp_path, kind, no_keys, tree=a11y_tree(_query_url(config))), EvalError)


@pytest.mark.parametrize("config", _configs("url_dashPart"), ids=_ids("url_dashPart"))
def test_url_dashPart(oracle: Oracle, tmp_path: Path, config: dict[str, Any]) -> None:  # noqa: N802
    kind = "url_dashPart"
    tree = a11y_tree("accuweather.com/en/gb/manchester/m15-6/november-weather/329260?id=7")
    check(oracle, tmp_path, kind, config, tree=tree, expect={config["key"]: "november-weather"})
    check(oracle, tmp_path, kind, {**config, "partIndex": -1, "needDeleteId": True}, tree=tree,
          expect={config["key"]: "329260"})
    check(oracle, tmp_path, kind, {**config, "returnType": "string"}, tree=tree, expect="november-weather")
    check(oracle, tmp_path, kind, {**config, "returnType": "xml"}, tree=tree, expect=None)
    check(oracle, tmp_path, kind, {**config, "partIndex": "two"}, tree=tree, expect=None)
    check(oracle, tmp_path, kind, {**config, "partIndex": 40}, tree=tree, expect=None)
    check(oracle, tmp_path, kind, config, tree=None, expect=None)
    assert isinstance(check(oracle, tmp_path, kind, {**config, "partIndex": -40}, tree=tree), EvalError)
    no_key = {k: v for k, v in config.items() if k != "key"}
    assert isinstance(check(oracle, tmp_path, kind, no_key, tree=tree), EvalError)


MACYS = "macys.com/shop/mens-clothing/mens-shirts/{names}/{values}?id=20626"


@pytest.mark.parametrize("config", _configs("url_path_parse"), ids=_ids("url_path_parse"))
def test_url_path_parse(oracle: Oracle, tmp_path: Path, config: dict[str, Any]) -> None:
    kind = "url_path_parse"
    solved = MACYS.format(names="Men_regular_size_t,Price_discount_range,Sleeve_length",
                          values=quote("L,50_PERCENT_ off & more,Short Sleeve"))
    check(oracle, tmp_path, kind, config, tree=a11y_tree(solved), expect={
        "mens_clothing": True, "shirts": True, "short_sleeve": True, "Men_regular_size_t": "L",
        "Price_discount_range": "50_PERCENT_ off & more"})
    wider = MACYS.format(names="Price_discount_range,Men_regular_size_t",
                         values=quote("30_PERCENT_ off & more|50_PERCENT_ off & more,XL"))
    check(oracle, tmp_path, kind, config, tree=a11y_tree(wider))
    check(oracle, tmp_path, kind, config, tree=a11y_tree("macys.com/shop/womens-clothing/dresses?id=1"))
    check(oracle, tmp_path, kind, config, tree=a11y_tree(
        "macys.com/shop/mens-clothing/Product_department,Sleeve_length/Shirts,short-sleeve"))
    check(oracle, tmp_path, kind, config, tree=None, expect=None)
