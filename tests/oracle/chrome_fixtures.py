"""Fixtures of the Chrome tests: OSWorld-format accessibility trees, Chrome profile files (Preferences,
Bookmarks, History and Cookies databases with Chrome's schemas), and the env / context doubles for
our getters and OSWorld's (the oracle's `controller` stand-in)."""

from __future__ import annotations

import base64
import json
import sqlite3
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from services.cli.standin_formats import HISTORY_SCHEMA  # the tables OSWorld's Chrome getters read
from services.runner.osworld import EvalContext, SetupContext
from tests.runner.osworld.test_setup import FakeEnv, Sleeps

A11Y_NAMESPACES = {
    "st": "uri:deskat:state.at-spi.gnome.org",
    "attr": "uri:deskat:attributes.at-spi.gnome.org",
    "cp": "uri:deskat:component.at-spi.gnome.org",
}


def a11y_tree(*address_bars: str | None, app: str = "Google Chrome") -> str:
    """OSWorld's accessibility tree XML with a Chrome window whose toolbar holds one `entry` "Address
    and search bar" per text (None: an empty entry), beside a terminal application."""
    ns = " ".join(f"xmlns:{prefix}={quoteattr(uri)}" for prefix, uri in A11Y_NAMESPACES.items())
    entries = "".join(
        f'<entry name="Address and search bar" st:focusable="true" st:editable="true" '
        f'cp:screencoord="(180, 84)" cp:size="(1200, 34)">{escape(text or "")}</entry>'
        for text in address_bars)
    return (f'<desktop-frame {ns}><application name="gnome-terminal-server"><frame name="Terminal"/></application>'
            f'<application name={quoteattr(app)}><frame name="Page - {escape(app)}" st:active="true">'
            f'<panel name=""><tool-bar name=""><push-button name="Reload"/>{entries}</tool-bar></panel>'
            f'<document-web name="Page"/></frame></application></desktop-frame>')


def preferences(**values: Any) -> bytes:
    """A Chrome `Preferences` file: a fresh profile's keys with `values` merged in."""
    base: dict[str, Any] = {"browser": {"has_seen_welcome_page": True}, "countryid_at_install": 21843,
                            "profile": {"name": "Person 1", "avatar_index": 26}}
    base.update(values)
    return json.dumps(base).encode()


def local_state(experiments: list[str] | None) -> bytes:
    """A Chrome `Local State` file; `experiments`: chrome://flags entries (None: no key)."""
    browser: dict[str, Any] = {"last_redirect_origin": ""}
    if experiments is not None:
        browser["enabled_labs_experiments"] = experiments
    return json.dumps({"browser": browser, "intl": {"app_locale": "en-US"}}).encode()


def bookmarks_file(roots: dict[str, Any]) -> bytes:
    return json.dumps({"checksum": "0" * 32, "roots": roots, "version": 1}).encode()


"""The tables of Chrome's History database that OSWorld reads and writes (Chrome 12x schema)."""

COOKIES_SCHEMA = """
CREATE TABLE meta(key LONGVARCHAR NOT NULL UNIQUE PRIMARY KEY, value LONGVARCHAR);
CREATE TABLE cookies(creation_utc INTEGER NOT NULL, host_key TEXT NOT NULL, top_frame_site_key TEXT NOT NULL,
  name TEXT NOT NULL, value TEXT NOT NULL, encrypted_value BLOB NOT NULL, path TEXT NOT NULL,
  expires_utc INTEGER NOT NULL, is_secure INTEGER NOT NULL, is_httponly INTEGER NOT NULL,
  last_access_utc INTEGER NOT NULL, has_expires INTEGER NOT NULL, is_persistent INTEGER NOT NULL,
  priority INTEGER NOT NULL, samesite INTEGER NOT NULL, source_scheme INTEGER NOT NULL,
  source_port INTEGER NOT NULL, last_update_utc INTEGER NOT NULL, source_type INTEGER NOT NULL,
  has_cross_site_ancestor INTEGER NOT NULL);
INSERT INTO meta VALUES ('version', '23'), ('last_compatible_version', '23');
"""
"""Chrome's Cookies database schema (Chrome 12x)."""


def empty_history(path: Path) -> Path:
    """An empty Chrome History database at `path` (what OSWorld's `history_empty.sqlite` is)."""
    connection = sqlite3.connect(path)
    connection.executescript(HISTORY_SCHEMA)
    connection.close()
    return path


def history_db(path: Path, urls: list[tuple[str, str, int]]) -> bytes:
    """Bytes of a History database holding `(url, title, last_visit_time)` rows with one visit each."""
    empty_history(path)
    connection = sqlite3.connect(path)
    for url, title, stamp in urls:
        row = connection.execute("INSERT INTO urls (url, title, visit_count, typed_count, last_visit_time, hidden)"
                                 " VALUES (?, ?, 1, 0, ?, 0)", (url, title, stamp)).lastrowid
        connection.execute("INSERT INTO visits (url, visit_time, from_visit, transition, segment_id, visit_duration)"
                           " VALUES (?, ?, 0, 805306368, 0, 0)", (row, stamp))
    connection.commit()
    connection.close()
    return path.read_bytes()


def cookies_db(path: Path, hosts: list[tuple[str, str]]) -> bytes:
    """Bytes of a Cookies database holding a cookie `(host_key, name)` per entry (encrypted values
    left empty, as Chrome stores them on Linux without a keyring)."""
    connection = sqlite3.connect(path)
    connection.executescript(COOKIES_SCHEMA)
    for index, (host, name) in enumerate(hosts):
        stamp = 13370000000000000 + index
        connection.execute("INSERT INTO cookies VALUES (?, ?, '', ?, 'v', x'', '/', ?, 1, 1, ?, 1, 1, 1, 0, 2, 443, ?,"
                           " 0, 0)", (stamp, host, name, stamp + 10**13, stamp, stamp))
    connection.commit()
    connection.close()
    return path.read_bytes()


def eval_context(tmp_path: Path, chromium_port: int = 9222) -> EvalContext:
    """Our EvalContext: work dir `tmp_path/ours`, a recording sleep, Chrome DevTools on `chromium_port`."""
    setup = SetupContext(client_password="pw", screen=(1920, 1080), cache_dir=tmp_path / "cache", sleep=Sleeps(),
                         chromium_port=chromium_port)
    return EvalContext(setup=setup, cache_dir=tmp_path / "cache", work_dir=tmp_path / "ours")


def our_env(files: dict[str, bytes] | None = None, tree: str | None = None,
            desktop: dict[str, Any] | None = None, host: str = "127.0.0.1") -> FakeEnv:
    """The env double of our getters: env files, accessibility tree (None: none, read as ""),
    desktop directory tree."""
    env = FakeEnv(files=dict(files or {}), a11y_xml=tree or "", host=host)
    if desktop is not None:
        env.tree = desktop
    return env


def their_env(tmp_path: Path, files: dict[str, bytes] | None = None, tree: str | None = None,
              desktop: dict[str, Any] | None = None, chromium_port: int = 9222,
              host: str = "127.0.0.1") -> dict[str, Any]:
    """The same env for OSWorld's getters (the oracle's stand-in `env` with a `controller`)."""
    cache = tmp_path / "theirs"
    cache.mkdir(exist_ok=True)
    return {
        "vm_platform": "Linux", "vm_ip": host, "chromium_port": chromium_port, "server_port": 1,
        "current_use_proxy": False, "cache_dir": str(cache),
        "controller": {
            "file_data": {path: base64.b64encode(data).decode() for path, data in (files or {}).items()},
            "accessibility_tree": tree,
            "directory_trees": {"/home/user/Desktop": desktop} if desktop is not None else {},
        },
    }
