"""The Chrome setup steps and live-browser getters against a real Chromium (one per module, started
here, headless, on a free DevTools port) and pages served from 127.0.0.1 (never the internet).

The tasks' steps and getter configs come from their JSON; their web URLs are mapped to local pages
(`/site/<scheme>/<host><path>`), and the address bar's `goto_prefix` becomes `http://`. The
live getters are also differential: OSWorld's own getter (in the oracle process) connects to the
same browser with the same accessibility tree, and must return the same value.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import pymupdf
import pytest

from common.task import SetupStep
from services.runner.osworld import GETTERS, METRICS, EvalError, SetupContext, SetupError, cdp, run_setup
from tests.oracle.chrome_fixtures import a11y_tree, eval_context, our_env, their_env
from tests.oracle.chrome_live import Site, body_for_config, page_urls, reset_tabs, run_chromium, serve_site, value_of
from tests.oracle.client import Oracle, same_value
from tests.oracle.osworld_tasks import getter_configs, setup_steps
from tests.runner.osworld.test_setup import FakeEnv, Sleeps

STUBS = ("pydrive", "pydrive.auth", "pydrive.drive")
CLOSED_PORT = 1
UNREACHABLE = f"http://127.0.0.1:{CLOSED_PORT}/"
"""A URL whose load fails at once (nothing listens on port 1), as an internet site does offline."""


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    with serve_site() as served:
        yield served


@pytest.fixture(scope="module")
def chrome_port(site: Site) -> Iterator[int]:
    # recreation.gov resolves to the local site's HTTPS port (a self-signed certificate)
    rules = f"MAP www.recreation.gov 127.0.0.1:{site.tls_port},MAP recreation.gov 127.0.0.1:{site.tls_port}"
    with run_chromium((f"--host-resolver-rules={rules}", "--ignore-certificate-errors")) as port:
        yield port


def local(site: Site, url: str) -> str:
    """The local stand-in of a task's web URL (other schemes unchanged)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return url
    query = f"?{parts.query}" if parts.query else ""
    return site.url(f"/site/{parts.scheme}/{parts.netloc}{parts.path or '/'}{query}")


def setup_ctx(tmp_path: Path, port: int) -> SetupContext:
    return SetupContext(client_password="pw", screen=(1920, 1080), cache_dir=tmp_path / "cache", sleep=Sleeps(),
                        chromium_port=port)


def address(url: str) -> str:
    """What Chrome's address bar shows for `url`: no scheme."""
    return url.split("://", 1)[1]


def compare_live(oracle: Oracle, tmp_path: Path, port: int, kind: str, config: dict[str, Any],
                 tree: str | None = None) -> Any:
    """Getter `kind` here and OSWorld's on the same browser and tree: equal values (ours returned)."""
    pending = oracle.submit("getters.chrome", f"get_{kind}", stubs=STUBS, config=dict(config),
                           env=their_env(tmp_path, tree=tree, chromium_port=port))  # runs while ours runs
    ours = GETTERS[kind](our_env(tree=tree), dict(config), eval_context(tmp_path, port))
    theirs = pending()
    assert theirs.ok, f"{kind}: OSWorld raised {theirs.error}"
    assert same_value(ours, theirs.value), f"{kind}: ours {ours!r} != OSWorld {theirs.value!r}"
    return ours


# --- setup steps ----------------------------------------------------------------------------------------

OPEN_TABS = setup_steps("chrome_open_tabs")


def _live_open_tabs() -> list[tuple[str, dict[str, Any]]]:
    """The tasks whose `chrome_open_tabs` run against the browser (each costs a playwright driver
    start, ~1 s): every task opening 3 URLs, two opening 2, those with a query string, two opening
    1. Every task's parameters are checked without a browser in tests/runner/osworld/setup/test_chrome.py."""
    by_count: dict[int, list[tuple[str, dict[str, Any]]]] = {}
    for task_id, params in OPEN_TABS:
        by_count.setdefault(len(params["urls_to_open"]), []).append((task_id, params))
    queries = [(t, p) for t, p in OPEN_TABS if any("?" in url for url in p["urls_to_open"])]
    chosen = by_count.get(3, []) + by_count.get(2, [])[:2] + queries + by_count.get(1, [])[:2]
    return list(dict((t, (t, p)) for t, p in chosen).values())


LIVE_OPEN_TABS = _live_open_tabs()


@pytest.mark.parametrize("params", [p for _, p in LIVE_OPEN_TABS], ids=[t[:8] for t, _ in LIVE_OPEN_TABS])
def test_chrome_open_tabs(site: Site, chrome_port: int, tmp_path: Path, params: dict[str, Any]) -> None:
    reset_tabs(chrome_port)
    urls = [local(site, url) for url in params["urls_to_open"]]
    run_setup([SetupStep(type="chrome_open_tabs", parameters={"urls_to_open": urls})], our_env(),
              setup_ctx(tmp_path, chrome_port))
    # the start tab (about:blank) is closed, every URL has its tab
    assert sorted(unquote(u) for u in page_urls(chrome_port)) == sorted(unquote(u) for u in urls)


def test_chrome_open_tabs_offline_url_and_no_browser(site: Site, chrome_port: int, tmp_path: Path) -> None:
    reset_tabs(chrome_port)
    urls = [site.url("/site/a"), UNREACHABLE, site.url("/site/b")]
    run_setup([SetupStep(type="chrome_open_tabs", parameters={"urls_to_open": urls})], our_env(),
              setup_ctx(tmp_path, chrome_port))
    assert len(page_urls(chrome_port)) == 3  # a tab that fails to load stays, the next ones open
    with pytest.raises(SetupError, match="chrome_open_tabs"):
        run_setup([SetupStep(type="chrome_open_tabs", parameters={"urls_to_open": "https://x.org"})], our_env(),
                  setup_ctx(tmp_path, chrome_port))


def test_chrome_close_tabs(site: Site, chrome_port: int, tmp_path: Path) -> None:
    [(task_id, params)] = setup_steps("chrome_close_tabs")
    [(_, opened)] = [(t, p) for t, p in OPEN_TABS if t == task_id]
    urls = [local(site, url) for url in opened["urls_to_open"]]
    to_close = [local(site, url) for url in params["urls_to_close"]]
    reset_tabs(chrome_port, tuple(urls))
    ctx = setup_ctx(tmp_path, chrome_port)
    run_setup([SetupStep(type="chrome_close_tabs", parameters={"urls_to_close": to_close})], our_env(), ctx)
    remaining = list(urls)
    for url in to_close:
        remaining.remove(url)
    assert page_urls(chrome_port) == sorted(remaining)
    assert ctx.sleep.seconds == [5.0]  # type: ignore[attr-defined]  # OSWorld's settle time, not slept here


def test_setup_without_a_browser_is_a_setup_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cdp, "SETUP_CONNECT_TIMEOUT_S", 0.5)
    with pytest.raises(SetupError, match="no Chrome DevTools at http://127.0.0.1:1"):
        run_setup([SetupStep(type="chrome_open_tabs", parameters={"urls_to_open": ["about:blank"]})], our_env(),
                  setup_ctx(tmp_path, CLOSED_PORT))


# --- open tabs ------------------------------------------------------------------------------------------

def _expected_tabs(task_id: str) -> list[str]:
    from tests.oracle.osworld_tasks import pieces

    [piece] = [p for p in pieces("is_expected_tabs") if p.task_id == task_id]
    return list(piece.rules["urls"])


@pytest.mark.parametrize("task_id", [t for t, _ in getter_configs("open_tabs_info")],
                         ids=[t[:8] for t, _ in getter_configs("open_tabs_info")])
def test_open_tabs_info(oracle: Oracle, site: Site, chrome_port: int, tmp_path: Path, task_id: str) -> None:
    expected = [local(site, url) for url in _expected_tabs(task_id)]
    reset_tabs(chrome_port, tuple(u for u in expected if u.startswith("http")))
    config = dict(next(c for t, c in getter_configs("open_tabs_info") if t == task_id))
    tabs = compare_live(oracle, tmp_path, chrome_port, "open_tabs_info", config)
    assert sorted(t["url"] for t in tabs) == sorted(u for u in expected if u.startswith("http"))
    rule = {"type": "url", "urls": [u for u in expected if u.startswith("http")]}
    assert METRICS["is_expected_tabs"](tabs, rule) == 1.0


def test_open_tabs_info_without_a_browser(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """OSWorld relaunches Chrome through the env, then gives up with []."""
    monkeypatch.setattr(cdp, "RELAUNCH_CONNECT_TIMEOUT_S", 0.3)
    env = FakeEnv(host="127.0.0.1")
    assert GETTERS["open_tabs_info"](env, {"type": "open_tabs_info"}, eval_context(tmp_path, 1)) == []
    assert env.named("launch") == [((["google-chrome", "--remote-debugging-port=1337"],), {"shell": False})]


# --- the active tab -------------------------------------------------------------------------------------

HTML_PARSE = getter_configs("active_tab_html_parse")


def _parse_page(site: Site, task_id: str, index: int, config: dict[str, Any], body: str) -> str:
    words = config.get("url_include_expected") or list(config.get("url_include_expected_multichoice", {}))
    query = f"?q={quote(' '.join(words))}" if words else ""
    return site.add(f"/parse/{task_id[:8]}-{index}.html{query}".split("?")[0], body) + query


@pytest.mark.parametrize("index", range(len(HTML_PARSE)), ids=[f"{t[:8]}-{i}" for i, (t, _) in enumerate(HTML_PARSE)])
def test_active_tab_html_parse(oracle: Oracle, site: Site, chrome_port: int, tmp_path: Path, index: int) -> None:
    task_id, task_config = HTML_PARSE[index]
    config = {**task_config, "goto_prefix": "http://"}
    url = _parse_page(site, task_id, index, config, body_for_config(config))
    reset_tabs(chrome_port, (site.url("/site/other"), url))
    tree = a11y_tree(address(url))
    found = compare_live(oracle, tmp_path, chrome_port, "active_tab_html_parse", config, tree)
    keys = {**config.get("xpathObject", {}), **config.get("inputObject", {})}
    for key in keys.values():
        assert found[key] == value_of(key)
    for cls_keys in config.get("class_multiObject", {}).values():
        if isinstance(cls_keys, dict):
            assert all(found[key] == value_of(key) for key in cls_keys.values())


WRONG_PAGE_CASES = [i for kind in ("class", "input", "class&url")
                    for i in [next(i for i, (_, c) in enumerate(HTML_PARSE) if c["category"] == kind)]]


@pytest.mark.parametrize("index", WRONG_PAGE_CASES, ids=[f"{HTML_PARSE[i][0][:8]}-{i}" for i in WRONG_PAGE_CASES])
def test_active_tab_html_parse_page_without_the_elements(oracle: Oracle, site: Site, chrome_port: int,
                                                         tmp_path: Path, index: int) -> None:
    task_id, task_config = HTML_PARSE[index]
    config = {**task_config, "goto_prefix": "http://"}
    empty = _parse_page(site, task_id, index + 1000, config, "<p>nothing here</p>")
    reset_tabs(chrome_port, (empty,))
    found = compare_live(oracle, tmp_path, chrome_port, "active_tab_html_parse", config, a11y_tree(address(empty)))
    assert found and not any(isinstance(v, str) and v.startswith("value of") for v in found.values())


def test_active_tab_html_parse_no_matching_tab(oracle: Oracle, site: Site, chrome_port: int, tmp_path: Path) -> None:
    task_id, task_config = HTML_PARSE[0]
    reset_tabs(chrome_port, (site.url("/site/other"),))
    config = {**task_config, "goto_prefix": "http://"}
    tree = a11y_tree(address(site.url("/site/elsewhere")))
    assert compare_live(oracle, tmp_path, chrome_port, "active_tab_html_parse", config, tree) == {}
    assert GETTERS["active_tab_html_parse"](our_env(tree=None), config, eval_context(tmp_path, chrome_port)) is None
    with pytest.raises(EvalError, match="category"):
        GETTERS["active_tab_html_parse"](our_env(tree=tree), {"goto_prefix": "http://"},
                                         eval_context(tmp_path, chrome_port))


ACTIVE_TAB_INFO = getter_configs("active_tab_info")


def test_active_tab_info(oracle: Oracle, site: Site, chrome_port: int, tmp_path: Path) -> None:
    """The tasks' configs differ only in `goto_prefix`, which becomes `http://` here: one config."""
    [config] = {json.dumps({**c, "goto_prefix": "http://"}): {**c, "goto_prefix": "http://"}
                for _, c in ACTIVE_TAB_INFO}.values()
    url = site.add("/active/page.html", "<h1>Checked bag fee calculator</h1>", title="Calculator")
    reset_tabs(chrome_port, (url,))
    info = compare_live(oracle, tmp_path, chrome_port, "active_tab_info", config, a11y_tree(address(url)))
    assert info["url"] == url and info["title"] == "Calculator" and "Checked bag fee" in info["content"]
    # a page that cannot load (what an offline env gives for an internet site): None
    assert compare_live(oracle, tmp_path, chrome_port, "active_tab_info", config,
                        a11y_tree(f"127.0.0.1:{CLOSED_PORT}/page")) is None


# --- pages loaded by URL --------------------------------------------------------------------------------

def test_page_info(oracle: Oracle, site: Site, chrome_port: int, tmp_path: Path) -> None:
    [(_, config)] = getter_configs("page_info")
    url = site.add("/cart/", "<div class='cart_item'>The Dota 2 Official Soundtrack</div>", title="Shopping Cart")
    info = compare_live(oracle, tmp_path, chrome_port, "page_info", {**config, "url": url})
    assert info["title"] == "Shopping Cart"
    assert METRICS["is_added_to_steam_cart"](info, {"items": ["The Dota 2 Official Soundtrack"]}) == 1.0
    # no network: two attempts (OSWorld sleeps 3 s between; ours through ctx.sleep), then its fallback
    ctx = eval_context(tmp_path, chrome_port)
    failed = GETTERS["page_info"](our_env(), {**config, "url": UNREACHABLE + "cart/"}, ctx)
    assert failed == {"title": "Connection failed", "url": UNREACHABLE + "cart/", "content": ""}
    assert ctx.setup.sleep.seconds == [3.0]  # type: ignore[attr-defined]


def test_pdf_from_url(site: Site, chrome_port: int, tmp_path: Path) -> None:
    [(_, config)] = getter_configs("pdf_from_url")
    url = site.add("/posts/agent/", "<h1>LLM Powered Autonomous Agents</h1><p>Planning, memory, tool use.</p>")
    ctx = eval_context(tmp_path, chrome_port)
    path = GETTERS["pdf_from_url"](our_env(), {**config, "path": url}, ctx)
    assert Path(path).name == config["dest"]
    with pymupdf.open(path) as document:
        assert "LLM Powered Autonomous Agents" in "".join(page.get_text() for page in document)
    failed = GETTERS["pdf_from_url"](our_env(), {**config, "path": UNREACHABLE}, ctx)
    assert Path(failed).read_bytes() == b"%PDF-1.4\n%EOF\n"  # OSWorld's fallback after 3 attempts
    assert ctx.setup.sleep.seconds == [3.0, 5.0, 5.0]  # type: ignore[attr-defined]


SCHOLAR = """<div id="gsc_prf_in">Yann LeCun</div>
<table id="gsc_rsb_st"><tbody><tr><td>Citations</td><td>345074</td></tr><tr><td>h-index</td><td>147</td></tr>
<tr><td>i10-index</td><td>372</td></tr></tbody></table>
<table><tbody id="gsc_a_b"><tr><td class="gsc_a_t"><a href="/scholar/paper.html">Deep learning</a></td></tr>
</tbody></table>"""


def test_info_from_website(oracle: Oracle, site: Site, chrome_port: int, tmp_path: Path) -> None:
    [(_, task_config)] = getter_configs("info_from_website")
    url = site.add("/scholar/citations", SCHOLAR)
    site.add("/scholar/paper.html", '<div id="gsc_oci_title_gg"><div><a href="https://hal.science/doc">PDF</a></div>'
                                    "</div>")
    reset_tabs(chrome_port)
    config = {**task_config, "url": url}
    infos = compare_live(oracle, tmp_path, chrome_port, "info_from_website", config)
    assert infos == ["Yann LeCun", "345074", "147", "372", "Deep learning", "https://hal.science/doc"]
    backups = GETTERS["info_from_website"](our_env(), {**config, "url": UNREACHABLE},
                                           eval_context(tmp_path, chrome_port))
    assert backups == task_config["backups"]


RECREATION = """<input id="hero-search-input"><button class="nav-search-button" onclick="
document.getElementById('results').innerHTML='<a class=&quot;search-result-highlight--success&quot; '
+ 'href=&quot;/camping/diamond&quot; target=&quot;_blank&quot;>Diamond Lake</a>'">Search</button>
<div id="results"></div>"""
CAMPGROUND = """<button class="next-available" onclick="document.getElementById('grid').hidden=false">Next</button>
<div id="grid" hidden><span class="camp-sortable-column-header">Site</span>
<span class="camp-sortable-column-header">Loop</span><span class="camp-sortable-column-header"> Dec 12 </span></div>"""


def test_gotoRecreationPage(site: Site, chrome_port: int, tmp_path: Path) -> None:  # noqa: N802
    """Against a local stand-in of recreation.gov (the browser resolves its host to the local site)."""
    [(_, config)] = getter_configs("gotoRecreationPage_and_get_html_content")
    site.add("/", RECREATION, title="Recreation.gov")
    site.add("/camping/diamond", CAMPGROUND, title="Diamond Lake")
    reset_tabs(chrome_port)
    ctx = eval_context(tmp_path, chrome_port)
    found = GETTERS["gotoRecreationPage_and_get_html_content"](our_env(), dict(config), ctx)
    assert found == {"expected": {"camp-sortable-column-header": "Dec 12"}}
    assert ctx.setup.sleep.seconds == [10.0, 30.0]  # type: ignore[attr-defined]  # OSWorld's waits, not slept


# --- history, end to end --------------------------------------------------------------------------------

def test_update_browse_history_then_history_getter(tmp_path: Path) -> None:
    from common import url_cache
    from services.runner.osworld import chrome_profile
    from services.runner.osworld.setup.chrome import EMPTY_HISTORY_URL
    from tests.oracle.chrome_fixtures import empty_history

    [(task_id, params)] = setup_steps("update_browse_history")
    ctx = setup_ctx(tmp_path, 9222)
    url_cache.store(ctx.cache_dir, EMPTY_HISTORY_URL, empty_history(tmp_path / "empty.sqlite").read_bytes())
    env = FakeEnv()
    run_setup([SetupStep(type="update_browse_history", parameters=params)], env, ctx)
    assert env.named("setup_execute") == [((f"sudo chown -R user:user {chrome_profile.HISTORY}",), {"shell": True})]
    rows = GETTERS["history"](env, {"type": "history", "dest": "history.sqlite"}, eval_context(tmp_path))
    assert [(url, title) for url, title, _ in rows] == [(h["url"], h["title"]) for h in params["history"]]
    assert METRICS["check_history_deleted"](rows, {"type": "keywords", "keywords": ["youtube"]}) == 0.0
    json.dumps(rows)
