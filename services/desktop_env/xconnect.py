"""Cheap python-xlib connections for the processes the zygote forks (one per agent action).

Opening a `Xlib.display.Display` costs 10-30 ms of CPU: python-xlib parses the whole connection
setup reply (every visual of every depth, ~10 KB on a 24-bit Xvfb) and asks the server about each
of its ~15 extensions, one round trip each. Both answers are the same for every client of one X
server, except the resource-id base and mask that the setup reply assigns to each connection. So
`install()`, called once in the zygote before its first connection, makes python-xlib:

- reuse the parsed setup reply when a new reply is byte-identical apart from those two fields
  (the new connection gets its own id base and mask, and its own copies of the screen records);
- remember `list_extensions()` and `query_extension(name)` answers per display name.

A new connection then costs the socket handshake and the keymap request (~1-2 ms). Any other
reply (another server, a resized screen) is parsed in full, as python-xlib always does.

Relies on python-xlib 0.33's protocol internals (`Display.parse_connection_setup`,
`ConnectionSetupRequest._reply` / `_success_reply`, `sent_requests`, `data_recv`); the pin in
pyproject.toml keeps that version line, and the zygote tests exercise it on every run.
"""

from __future__ import annotations

from typing import Any

import Xlib.display
from Xlib.protocol import rq

#: python-xlib's display module, typed Any: its private `_BaseDisplay` is subclassed and replaced at run time.
_xlib_display: Any = Xlib.display

_ID_FIELDS = slice(4, 12)  # resource_id_base, resource_id_mask in the setup success reply (X11 protocol)
_setup_cache: dict[str, tuple[bytes, dict[str, Any]]] = {}
_extension_cache: dict[tuple[str, str], Any] = {}
_installed: list[bool] = []


class _CachedSetupDisplay(_xlib_display._BaseDisplay):
    """python-xlib's base display, with the connection setup reply parsed once per X server."""

    def parse_connection_setup(self) -> bool:
        request = self.sent_requests[0]
        received: bytes = self.data_recv  # type: ignore[has-type]
        if not request._data:
            if len(received) < 8:
                return False
            request._data, _ = request._reply.parse_binary(received[:8], self, rawdict=True)
            received = self.data_recv = received[8:]
        length = request._data["additional_length"] * 4
        if len(received) < length:
            return False
        raw = bytes(received[:length])
        if request._data["status"] != 1:
            request._data["reason"] = raw[:request._data["reason_length"]]
        else:
            request._data.update(self._parsed_setup(request, raw))
        del self.sent_requests[0]
        self.data_recv = received[length:]
        return True

    def _parsed_setup(self, request: Any, raw: bytes) -> dict[str, Any]:
        key = raw[:_ID_FIELDS.start] + raw[_ID_FIELDS.stop:]
        cached = _setup_cache.get(self.display_name)
        if cached is not None and cached[0] == key:
            parsed = dict(cached[1])
        else:
            parsed, _ = request._success_reply.parse_binary(raw, self, rawdict=True)
            _setup_cache[self.display_name] = (key, dict(parsed))
        # Own screen records: Display.__init__ rebinds their root window and colormap to this connection.
        parsed["roots"] = [rq.DictWrapper(dict(screen._data)) for screen in parsed["roots"]]
        parsed["resource_id_base"] = int.from_bytes(raw[4:8], "little" if self.big_endian == 0 else "big")
        parsed["resource_id_mask"] = int.from_bytes(raw[8:12], "little" if self.big_endian == 0 else "big")
        return parsed


def install() -> None:
    """Patch python-xlib in this process (see module doc). Idempotent."""
    if _installed:
        return
    display_class: Any = Xlib.display.Display  # Any: two of its methods are replaced below
    list_extensions, query_extension = display_class.list_extensions, display_class.query_extension

    def cached_list_extensions(self: Xlib.display.Display) -> Any:
        key = (self.get_display_name(), "")
        if key not in _extension_cache:
            _extension_cache[key] = list_extensions(self)
        return _extension_cache[key]

    def cached_query_extension(self: Xlib.display.Display, name: str) -> Any:
        key = (self.get_display_name(), name)
        if key not in _extension_cache:
            _extension_cache[key] = query_extension(self, name)
        return _extension_cache[key]

    _xlib_display._BaseDisplay = _CachedSetupDisplay
    display_class.list_extensions = cached_list_extensions
    display_class.query_extension = cached_query_extension
    _installed.append(True)
