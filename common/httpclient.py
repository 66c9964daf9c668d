"""Process-wide HTTP plumbing for the runner's sync clients (model gateway, env pods), over libcurl (pycurl).

Why libcurl: a rollout step makes three requests (model, action, screenshot) and the runner's CPU per step
bounds the pipeline's steps/s (bench/pipeline.py). In GIL profiles of a runner, the HTTP client's own Python
was the largest part of its time: httpx's request and response objects (~60 %), then urllib3's and
http.client's (~50 %: header objects, `email.parser` for the response's headers, URL parsing, retries).
libcurl does the request, the parsing and the keep-alive in C: on the same loopback server ~0.14 ms of CPU
per small request against urllib3's ~0.45 and httpx's ~0.7 (bench/runner_http.py).

- `HttpClient`: libcurl easy handles (one per thread) with their keep-alive connections (libcurl's connection
  cache; a connection the server closed is detected before reuse). Safe to share between threads.
- `shared(key)`: one `HttpClient` per process and key, reused across rollouts. A forked child never uses its
  parent's handles (their sockets belong to the parent): it makes new ones (`os.register_at_fork`, and a
  process id check in `HttpClient`).
- `send(...)`: one request, its response read whole into an `HttpResponse`; transport failures raise `HttpError`
  (refused, timed out, connection closed mid-response). No retries, no redirects followed, no proxy from the
  environment (the runner talks to its own services), no `Expect: 100-continue` round trip.
"""

from __future__ import annotations

import json as jsonlib
import os
import threading
import weakref
from collections.abc import Callable, Hashable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import pycurl
from pydantic_core import from_json
from urllib3 import encode_multipart_formdata


class HttpError(Exception):
    """A transport failure (libcurl's error code and message): refused, timed out, cut short, bad URL."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"curl error {code}: {message}")
        self.code = code


class Headers(Mapping[str, str]):
    """A response's headers, looked up case-insensitively (a repeated header keeps its last value)."""

    def __init__(self, items: dict[str, str]) -> None:
        self._items = items  # lower-cased name -> value

    def __getitem__(self, name: str) -> str:
        return self._items[name.lower()]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._items

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        return self._items.get(name.lower(), default)


@dataclass(frozen=True)
class HttpResponse:
    """A finished response: `status_code`, `headers` (case-insensitive), `content` (the whole body, bytes)."""

    status_code: int
    headers: Mapping[str, str]
    content: bytes

    @property
    def is_success(self) -> bool:
        """2xx."""
        return 200 <= self.status_code < 300

    @property
    def text(self) -> str:
        """The body decoded as UTF-8 (what our env pod, OSWorld's server and vLLM send), bad bytes replaced."""
        return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        """The body parsed as JSON (pydantic-core's parser: a model's response with token ids and logprobs parses in
        about half the time of `json.loads`). Raises: ValueError when it is not JSON."""
        return from_json(self.content)


class _HeaderReader:
    """libcurl's header callback: keeps the last response's header lines (interim 1xx responses are dropped)."""

    def __init__(self) -> None:
        self.items: dict[str, str] = {}

    def __call__(self, line: bytes) -> None:
        if line.startswith(b"HTTP/"):  # a new response's status line (after an interim 100): start over
            self.items = {}
            return
        name, sep, value = line.decode("latin-1").partition(":")
        if sep:
            self.items[name.strip().lower()] = value.strip()


class HttpClient:
    """libcurl easy handles, one per thread that sends through this client (an easy handle serves one request at a
    time), each keeping up to `max_connections` connections alive. Safe to share between threads; in a forked
    child it makes new handles (the inherited ones' connections are the parent's sockets)."""

    def __init__(self, max_connections: int = 4) -> None:
        self._max_connections = max_connections
        self._local = threading.local()
        # every live handle, for close(); a thread's handle (and its connections) goes when the thread ends
        self._handles: weakref.WeakSet[pycurl.Curl] = weakref.WeakSet()

    def _handle(self) -> pycurl.Curl:
        """This thread's easy handle in this process."""
        local = self._local
        if getattr(local, "pid", None) != os.getpid():
            local.curl = pycurl.Curl()
            local.pid = os.getpid()
            self._handles.add(local.curl)
        curl: pycurl.Curl = local.curl
        return curl

    def close(self) -> None:
        """Close every handle this process made and their connections (call once no request is in flight)."""
        handles, self._handles = list(self._handles), weakref.WeakSet()
        self._local = threading.local()
        for curl in handles:
            curl.close()

    def request(self, method: str, url: str, *, connect_timeout_s: float, read_timeout_s: float,
                body: bytes | None = None, headers: Mapping[str, str] | None = None) -> HttpResponse:
        """Send `method url` with `body` (bytes, the caller sets its `Content-Type`) or none. Timeouts in seconds:
        `connect_timeout_s` to connect, `read_timeout_s` for the whole exchange (connecting, sending, reading the
        response: libcurl's total timeout). Raises: HttpError."""
        chunks: list[bytes] = []
        reader = _HeaderReader()
        curl = self._handle()
        curl.reset()  # options back to libcurl's defaults; connections and DNS cache stay
        curl.setopt(pycurl.URL, url)
        curl.setopt(pycurl.NOSIGNAL, 1)  # no SIGALRM for timeouts: safe in threads
        curl.setopt(pycurl.PROXY, "")  # never a proxy from http_proxy and friends
        curl.setopt(pycurl.MAXCONNECTS, self._max_connections)
        curl.setopt(pycurl.CONNECTTIMEOUT_MS, max(1, int(connect_timeout_s * 1000)))
        curl.setopt(pycurl.TIMEOUT_MS, max(1, int(read_timeout_s * 1000)))
        curl.setopt(pycurl.WRITEFUNCTION, chunks.append)
        curl.setopt(pycurl.HEADERFUNCTION, reader)
        lines = [f"{name}: {value}" for name, value in (headers or {}).items()]
        lines.append("Expect:")  # libcurl would wait for `100 Continue` before a big body
        if body is not None:
            curl.setopt(pycurl.POSTFIELDS, body)
        elif method == "POST":
            curl.setopt(pycurl.POSTFIELDSIZE, 0)
            curl.setopt(pycurl.POST, 1)
        if method not in ("GET", "POST") or (method == "GET" and body is not None):
            curl.setopt(pycurl.CUSTOMREQUEST, method)
        elif method == "GET":
            curl.setopt(pycurl.HTTPGET, 1)
        curl.setopt(pycurl.HTTPHEADER, lines)
        try:
            curl.perform()
        except pycurl.error as exc:
            code, message = exc.args if len(exc.args) == 2 else (-1, str(exc))
            raise HttpError(int(code), str(message)) from None
        status = int(curl.getinfo(pycurl.RESPONSE_CODE))
        return HttpResponse(status, Headers(reader.items), b"".join(chunks))


def form_body(data: Mapping[str, str] | None, files: Mapping[str, tuple[str, bytes]] | None
              ) -> tuple[bytes | None, str | None]:
    """(body, content type) for form fields `data` and files {field: (file name, bytes)}, as `requests`/httpx
    send them: multipart (RFC 7578, urllib3's encoder) when there are files, else URL-encoded; (None, None)
    for neither."""
    if files:
        return encode_multipart_formdata({**(data or {}), **files})
    if data is not None:
        return urlencode(data).encode(), "application/x-www-form-urlencoded"
    return None, None


_lock = threading.Lock()
_clients: dict[Hashable, HttpClient] = {}


def shared(key: Hashable, factory: Callable[[], HttpClient] = HttpClient) -> HttpClient:
    """This process's client for `key`, made by `factory()` on first use. Never close it: other users of the
    process share it."""
    client = _clients.get(key)
    if client is None:
        with _lock:
            client = _clients.get(key)
            if client is None:
                client = _clients[key] = factory()
    return client


def send(http: HttpClient, method: str, url: str, *, connect_timeout_s: float, read_timeout_s: float,
         json: Any = None, data: Mapping[str, str] | None = None,
         files: Mapping[str, tuple[str, bytes]] | None = None,
         headers: Mapping[str, str] | None = None) -> HttpResponse:
    """Send one request through `http` and read its response whole.

    Body: `json` (compact UTF-8, `Content-Type: application/json`), or form fields `data` (URL-encoded, or
    multipart with `files` {field: (file name, bytes)}, as `requests`/httpx send them), or none.
    Timeouts in seconds: `connect_timeout_s` to connect, `read_timeout_s` for the whole exchange.
    Raises: HttpError on transport failures (refused, timed out, connection closed mid-response).
    """
    all_headers = dict(headers) if headers else {}
    if json is not None:
        body: bytes | None = jsonlib.dumps(json, separators=(",", ":"), ensure_ascii=False).encode()
        all_headers.setdefault("Content-Type", "application/json")
    else:
        body, kind = form_body(data, files)
        if kind:
            all_headers.setdefault("Content-Type", kind)
    return http.request(method, url, connect_timeout_s=connect_timeout_s, read_timeout_s=read_timeout_s,
                        body=body, headers=all_headers)


def _forget_after_fork() -> None:
    """In a forked child: drop the parent's clients (their connections are the parent's sockets) and a lock
    another thread may have held at fork time."""
    global _lock, _clients
    _lock = threading.Lock()
    _clients = {}


os.register_at_fork(after_in_child=_forget_after_fork)
