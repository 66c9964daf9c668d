"""OSWorld `desktop_env/evaluators/getters/chrome.py`: getters reading Chrome's profile files from the
env (`Preferences`, `Local State`, `Bookmarks`, `History`, `Cookies`) and the desktop's shortcuts.

Each reads the file with `env.get_file` at OSWorld's Linux path (`chrome_profile`) and returns what
OSWorld's getter returns, including its fallback value when the file is missing or not what it
expects (e.g. `"Google"` for a missing Preferences in `default_search_engine`, or even in
`find_unpacked_extension_path`). Env transport errors propagate (OSWorld logs them and returns the
fallback).
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable
from typing import Any

from services.runner.osworld import chrome_profile
from services.runner.osworld.context import EvalContext
from services.runner.osworld.errors import EvalError
from services.runner.osworld.getters.base import Getter, work_dir
from services.runner.osworld.hostpaths import local_name
from services.runner.osworld.protocol import EnvLike

logger = logging.getLogger(__name__)

DEFAULT_WEBPREFS = {"default_fixed_font_size": 13, "default_font_size": 16, "minimum_font_size": 13}
"""`chrome_font_size` when Preferences has no `webkit.webprefs` (OSWorld's default)."""
UNREADABLE_WEBPREFS = {"default_fixed_font_size": 13, "default_font_size": 16}
"""`chrome_font_size` when Preferences cannot be read (OSWorld's fallback, without the minimum)."""


def _from_json(env: EnvLike, path: str, pick: Callable[[Any], Any], fallback: Any, where: str) -> Any:
    """`pick(parsed JSON of env file path)`, or `fallback` when the file is missing, is not JSON, or
    `pick` fails on it (OSWorld catches every exception of its getter and returns its fallback)."""
    content = env.get_file(path)
    try:
        return pick(json.loads(content))  # type: ignore[arg-type]  # None -> TypeError -> fallback
    except Exception as exc:  # noqa: BLE001 - OSWorld's getter returns its fallback on any failure
        logger.info("%s: %s unreadable (%s): %r", where, path, exc, fallback)
        return fallback


def get_default_search_engine(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> Any:
    """`default_search_engine`: Preferences' `default_search_provider_data.template_url_data.short_name`
    (default and fallback `"Google"`)."""
    return _from_json(env, chrome_profile.PREFERENCES, lambda data: data.get("default_search_provider_data", {})
                      .get("template_url_data", {}).get("short_name", "Google"), "Google", "default_search_engine")


def get_enabled_experiments(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> Any:
    """`enabled_experiments`: Local State's `browser.enabled_labs_experiments` (chrome://flags entries
    such as `"chrome-refresh-2023@2"`; default and fallback `[]`)."""
    return _from_json(env, chrome_profile.LOCAL_STATE, lambda data: data.get("browser", {})
                      .get("enabled_labs_experiments", []), [], "enabled_experiments")


def get_profile_name(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> Any:
    """`profile_name`: Preferences' `profile.name` (default and fallback None)."""
    return _from_json(env, chrome_profile.PREFERENCES, lambda data: data.get("profile", {}).get("name", None),
                      None, "profile_name")


def get_chrome_font_size(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> Any:
    """`chrome_font_size`: Preferences' `webkit.webprefs` (font sizes in CSS pixels; defaults
    `DEFAULT_WEBPREFS`, fallback `UNREADABLE_WEBPREFS`)."""
    return _from_json(env, chrome_profile.PREFERENCES, lambda data: data.get("webkit", {})
                      .get("webprefs", dict(DEFAULT_WEBPREFS)), dict(UNREADABLE_WEBPREFS), "chrome_font_size")


def _true_false(value: Any) -> str:
    return "true" if value else "false"


def get_enable_do_not_track(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> Any:
    """`enable_do_not_track`: `"true"` when Preferences' `enable_do_not_track` is truthy, else
    `"false"` (also the fallback)."""
    return _from_json(env, chrome_profile.PREFERENCES, lambda data: _true_false(data.get("enable_do_not_track", {})),
                      "false", "enable_do_not_track")


def get_enable_safe_browsing(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> Any:
    """`enable_safe_browsing`: `"true"` when Preferences' `safebrowsing.enhanced` or
    `safebrowsing.enabled` is truthy, else `"false"` (also the fallback)."""

    def pick(data: Any) -> str:
        safebrowsing = data.get("safebrowsing", {})
        return _true_false(bool(safebrowsing.get("enhanced", False)) or bool(safebrowsing.get("enabled", False)))

    return _from_json(env, chrome_profile.PREFERENCES, pick, "false", "enable_safe_browsing")


def get_new_startup_page(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> Any:
    """`new_startup_page`: `"true"` when Preferences has no `session` key (a fresh profile opens the
    New Tab page) or `session.restore_on_startup == 5`, else `"false"`; fallback `"Google"`."""

    def pick(data: Any) -> str:
        if "session" not in data.keys():
            return "true"
        return _true_false(data.get("session", {}).get("restore_on_startup", {}) == 5)

    return _from_json(env, chrome_profile.PREFERENCES, pick, "Google", "new_startup_page")


def get_find_unpacked_extension_path(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> Any:
    """`find_unpacked_extension_path`: the `path` of every entry of Preferences'
    `extensions.settings` (OSWorld's fallback, also when an entry has no `path`: `"Google"`)."""
    return _from_json(env, chrome_profile.PREFERENCES, lambda data: [
        entry["path"] for entry in data.get("extensions", {}).get("settings", {}).values()],
        "Google", "find_unpacked_extension_path")


def get_find_installed_extension_name(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> Any:
    """`find_installed_extension_name`: `manifest.name` of every entry of Preferences'
    `extensions.settings` (fallback, also when an entry has no manifest name: `"Google"`)."""
    return _from_json(env, chrome_profile.PREFERENCES, lambda data: [
        entry["manifest"]["name"] for entry in data.get("extensions", {}).get("settings", {}).values()],
        "Google", "find_installed_extension_name")


def get_data_delete_automacally(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> Any:
    """`data_delete_automacally` (OSWorld's spelling): `"true"` when Preferences'
    `profile.default_content_setting_values` exists, else `"false"`; fallback `"Google"`."""
    return _from_json(env, chrome_profile.PREFERENCES, lambda data: _true_false(
        data["profile"].get("default_content_setting_values", None) is not None), "Google", "data_delete_automacally")


def get_bookmarks(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> Any:
    """`bookmarks`: the `roots` object of Chrome's Bookmarks file (`{}` when it has none; `[]` when
    the file is missing or empty).

    Raises: EvalError when the file is not a JSON object (OSWorld's getter raises there too).
    """
    content = env.get_file(chrome_profile.BOOKMARKS)
    if not content:
        return []
    try:
        data = json.loads(content)
        return data.get("roots", {})
    except (ValueError, AttributeError) as exc:
        raise EvalError(f"bookmarks: {chrome_profile.BOOKMARKS} is not a JSON object: {exc}") from exc


def _sqlite_rows(env: EnvLike, config: dict[str, Any], ctx: EvalContext, path: str, query: str,
                 where: str) -> list[tuple[Any, ...]] | None:
    """Rows of `query` on a copy of the env's SQLite file `path` at `work_dir/<config["dest"]>`;
    None when the file is missing, `dest` is not given, or the query fails (OSWorld's fallback)."""
    content = env.get_file(path)
    dest = config.get("dest")
    if content is None or not isinstance(dest, str) or not dest:
        logger.info("%s: no %s or no 'dest': None", where, path)
        return None
    local = work_dir(ctx, where) / local_name(dest, where, EvalError)
    local.write_bytes(content)
    try:
        connection = sqlite3.connect(local)
        try:
            return connection.execute(query).fetchall()
        finally:
            connection.close()
    except sqlite3.Error as exc:
        logger.info("%s: cannot query %s: %s", where, path, exc)
        return None


def get_cookie_data(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> list[tuple[Any, ...]] | None:
    """`cookie_data`: every row of the `cookies` table of Chrome's Cookies file (copied to
    `work_dir/<dest>`; column 1 is `host_key`), None when unreadable."""
    return _sqlite_rows(env, config, ctx, chrome_profile.COOKIES, "SELECT * FROM cookies", "cookie_data")


def get_history(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> list[tuple[Any, ...]] | None:
    """`history`: `(url, title, last_visit_time)` of every row of the `urls` table of Chrome's History
    file (copied to `work_dir/<dest>`), None when unreadable."""
    return _sqlite_rows(env, config, ctx, chrome_profile.HISTORY, "SELECT url, title, last_visit_time FROM urls",
                        "history")


def get_shortcuts_on_desktop(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> dict[str, str]:
    """`shortcuts_on_desktop`: `{file name: text}` of every `*.desktop` file on the desktop
    (`chrome_profile.DESKTOP`).

    Raises: EvalError when the desktop cannot be listed or a listed file cannot be read as UTF-8
    (OSWorld's getter raises there too).
    """
    tree = env.list_directory(chrome_profile.DESKTOP)
    if tree is None:
        raise EvalError(f"shortcuts_on_desktop: cannot list {chrome_profile.DESKTOP}")
    names = [item["name"] for item in tree.get("children") or [] if str(item.get("name", "")).endswith(".desktop")]
    shortcuts: dict[str, str] = {}
    for name in names:
        content = env.get_file(f"{chrome_profile.DESKTOP}/{name}")
        try:
            shortcuts[name] = content.decode("utf-8")  # type: ignore[union-attr]
        except (AttributeError, UnicodeDecodeError) as exc:
            raise EvalError(f"shortcuts_on_desktop: cannot read {chrome_profile.DESKTOP}/{name}: {exc}") from exc
    return shortcuts


GETTERS: dict[str, Getter] = {
    "default_search_engine": get_default_search_engine,
    "enabled_experiments": get_enabled_experiments,
    "profile_name": get_profile_name,
    "chrome_font_size": get_chrome_font_size,
    "enable_do_not_track": get_enable_do_not_track,
    "enable_safe_browsing": get_enable_safe_browsing,
    "new_startup_page": get_new_startup_page,
    "find_unpacked_extension_path": get_find_unpacked_extension_path,
    "find_installed_extension_name": get_find_installed_extension_name,
    "data_delete_automacally": get_data_delete_automacally,
    "bookmarks": get_bookmarks,
    "cookie_data": get_cookie_data,
    "history": get_history,
    "shortcuts_on_desktop": get_shortcuts_on_desktop,
}
