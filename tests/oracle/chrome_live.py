"""A real browser for the Chrome tests: Debian's Chromium (headless, remote debugging on a free port,
a throw-away profile) and a local HTTP server on 127.0.0.1 serving the pages the tests build. Never
the internet. Both are stopped by the fixture that starts them (by PID / server shutdown)."""

from __future__ import annotations

import html
import re
import ssl
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx

from common.polling import free_port, http_ok, wait_until
from common.processes import stop_child

CHROMIUM = "/usr/bin/chromium"


@dataclass
class Site:
    """Pages served at `http://127.0.0.1:<port>/<path>` (query ignored); any other `/site/...` path
    serves a small page titled with its path; the rest is 404."""

    port: int = 0
    tls_port: int = 0
    pages: dict[str, str] = field(default_factory=dict)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def add(self, path: str, body: str, title: str = "Page") -> str:
        """Serve `body` (HTML inside <body>) at `path`; returns its URL."""
        self.pages[path] = f"<!DOCTYPE html><html><head><title>{html.escape(title)}</title></head>" \
                           f"<body>{body}</body></html>"
        return self.url(path)


def _handler(site: Site) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            path = urlsplit(self.path).path
            page = site.pages.get(path)
            if page is None and path.startswith("/site/"):
                page = f"<!DOCTYPE html><html><head><title>{html.escape(path)}</title></head><body>{path}</body></html>"
            if page is None:
                self.send_error(404)
                return
            data = page.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
            return

    return Handler


@contextmanager
def _serving(server: ThreadingHTTPServer) -> Iterator[None]:
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _self_signed(folder: Path) -> tuple[Path, Path]:
    """A throw-away self-signed certificate and key (the browser runs with --ignore-certificate-errors)."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-days",
                    "1", "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return cert, key


@contextmanager
def serve_site() -> Iterator[Site]:
    """A `Site` on free ports of 127.0.0.1, plain HTTP (`port`) and HTTPS (`tls_port`, self-signed),
    shut down on exit."""
    site = Site()
    plain = ThreadingHTTPServer(("127.0.0.1", 0), _handler(site))
    secure = ThreadingHTTPServer(("127.0.0.1", 0), _handler(site))
    with tempfile.TemporaryDirectory(prefix="chrome-test-tls-") as folder:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*_self_signed(Path(folder)))
    secure.socket = context.wrap_socket(secure.socket, server_side=True)
    site.port, site.tls_port = plain.server_address[1], secure.server_address[1]
    with _serving(plain), _serving(secure):
        yield site


@contextmanager
def run_chromium(extra_flags: tuple[str, ...] = ()) -> Iterator[int]:
    """Debian's Chromium, headless, DevTools on a free port (yielded) of 127.0.0.1, fresh profile;
    stopped by PID on exit."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="chrome-test-profile-") as profile:
        process = subprocess.Popen(
            [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-dev-shm-usage", f"--remote-debugging-port={port}", f"--user-data-dir={profile}",
             *extra_flags, "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_until(lambda: process.poll() is None and http_ok(f"http://127.0.0.1:{port}/json/version"),
                       60.0, "Chromium's DevTools", interval_s=0.1)
            yield port
        finally:
            stop_child(process, grace_s=5.0)


def page_urls(port: int) -> list[str]:
    """URLs of the browser's open tabs (DevTools `/json/list`, pages only), sorted."""
    targets = httpx.get(f"http://127.0.0.1:{port}/json/list", timeout=5).json()
    return sorted(t["url"] for t in targets if t["type"] == "page")


def reset_tabs(port: int, urls: tuple[str, ...] = ("about:blank",)) -> None:
    """Leave exactly the tabs `urls` open (in order), through DevTools' HTTP endpoints (no playwright:
    the code under test runs its own), and wait until each has loaded."""
    base = f"http://127.0.0.1:{port}/json"
    old = [t["id"] for t in httpx.get(f"{base}/list", timeout=5).json() if t["type"] == "page"]
    for url in urls:
        httpx.put(f"{base}/new?{url}", timeout=5).raise_for_status()
    for target in old:
        httpx.get(f"{base}/close/{target}", timeout=5)
    wanted = sorted(unquote(url) for url in urls)  # Chrome shows some escapes decoded (%24 as $)
    wait_until(lambda: sorted(unquote(url) for url in page_urls(port)) == wanted, 10.0, f"tabs {urls}")

# --- pages for active_tab_html_parse configs ----------------------------------------------------------

_STEP = re.compile(r"^([a-z0-9]+)(?:\[(\d+)\])?$")


@dataclass
class _Node:
    tag: str
    children: list[_Node] = field(default_factory=list)
    text: str = ""
    value: str | None = None

    def child(self, tag: str, index: int) -> _Node:
        same = [c for c in self.children if c.tag == tag]
        while len(same) < index:
            same.append(_Node(tag))
            self.children.append(same[-1])
        return same[index - 1]

    def render(self) -> str:
        if self.tag == "input":
            return f'<input value="{html.escape(self.value or "")}">'
        inner = html.escape(self.text) + "".join(c.render() for c in self.children)
        return f"<{self.tag}>{inner}</{self.tag}>"


def body_for_xpaths(leaves: dict[str, str], inputs: bool = False) -> str:
    """The <body> content of a document where each absolute XPath (`/html/body/div[2]/...`) of
    `leaves` selects an element holding its text (or, with `inputs`, an <input> with that value)."""
    root = _Node("html")
    for xpath, text in leaves.items():
        node = root
        steps = xpath.strip("/").split("/")
        assert steps[0] == "html", xpath
        for step in steps[1:]:
            match = _STEP.match(step)
            assert match, step
            node = node.child(match.group(1), int(match.group(2) or 1))
        if inputs:
            node.value = text
        else:
            node.text = text
    body = root.child("body", 1)
    return "".join(c.render() for c in body.children)


def value_of(key: str) -> str:
    return f"value of {key}"


def body_for_config(config: dict[str, Any]) -> str:
    """A page on which every selector of an `active_tab_html_parse` config finds its element, the
    element for result key K reading `value of K` (`class&url`/`search_exist`: the listed texts)."""
    parts: list[str] = []
    category = config["category"]
    if category == "xpath":
        return body_for_xpaths({xpath: value_of(key) for xpath, key in config["xpathObject"].items()})
    if category == "input":
        return body_for_xpaths({xpath: value_of(key) for xpath, key in config["inputObject"].items()}, inputs=True)
    for cls, keys in config.get("class_multiObject", {}).items():
        if isinstance(keys, dict):
            count = max(int(i) for i in keys) + 1
            parts += [f'<div class="{cls}">  {value_of(keys.get(str(i), "filler"))}\n</div>' for i in range(count)]
        else:
            parts += [f'<a class="{cls}" href="#">{html.escape(text)}</a>' for text in keys]
    for cls, keys in config.get("class_multiObject_child", {}).items():
        texts = [value_of(keys[str(i)]) for i in range(len(keys))]
        parts.append(f'<div class="{cls}">' + '<div class="aura-separator"></div>'.join(texts) + "</div>")
    for cls, keys in config.get("class_multiObject_only_child", {}).items():
        count = max(int(i) for i in keys) + 1
        parts += [f'<div class="{cls}"><h3> {value_of(keys.get(str(i), "filler"))} </h3><p>more</p></div>'
                  for i in range(count)]
    for cls, texts in config.get("class_multiObject_search_exist", {}).items():
        parts += [f'<span class="{cls}">{html.escape(t)}</span>' for t in texts if t != "is_other_exist"]
    for cls, key in config.get("class_singleObject", {}).items():
        parts.append(f'<div class="{cls}">{value_of(key)}</div>')
    for cls, texts in config.get("class_multiObject_li", {}).items():
        items = "".join(f'<li class="catAllProducts"><span>{html.escape(t)}</span></li>' for t in texts)
        parts.append(f'<ul class="{cls}">{items}<li class="other">no span</li></ul>')
    return "\n".join(parts)
