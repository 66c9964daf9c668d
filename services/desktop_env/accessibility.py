"""The accessibility tree (OSWorld `GET /accessibility`) in OSWorld's XML format.

Applications that speak AT-SPI (GTK, Qt, LibreOffice, Chromium, Firefox/Thunderbird; the session
turns accessibility on for them) come from the AT-SPI registry with their whole widget tree, dumped
by `atspi_dump.py` under Debian's Python (where pyatspi lives) in a subprocess. Windows of programs
without AT-SPI (xterm, plain X11 apps), or every window when AT-SPI is unavailable, appear as an
`application` per WM class with one `frame` per window (title, active state, position, size).

Format: OSWorld's VM server (`desktop_env/server/main.py`, `get_accessibility_tree` and
`_create_atspi_node`): root `desktop-frame`, Ubuntu attribute namespaces (`NS`).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path

from services.desktop_env.atspi_ns import NS
from services.desktop_env.x11 import WindowInfo

log = logging.getLogger(__name__)

NS_STATE, NS_COMPONENT = NS["st"], NS["cp"]
for _prefix, _uri in NS.items():
    ET.register_namespace(_prefix, _uri)

SYSTEM_PYTHON = "/usr/bin/python3"  # Debian's interpreter, which has python3-pyatspi
DUMPER = Path(__file__).with_name("atspi_dump.py")
DUMP_TIMEOUT_S = 30.0


def atspi_applications(env: Mapping[str, str], timeout_s: float = DUMP_TIMEOUT_S) -> tuple[list[ET.Element], set[int]]:
    """The AT-SPI applications of the desktop whose environment is `env` (its DISPLAY and session
    bus), as XML elements, and their process ids. ([], empty set) when AT-SPI is unavailable, the
    dump fails or takes longer than `timeout_s` seconds (logged with the dumper's stderr)."""
    if not os.access(SYSTEM_PYTHON, os.X_OK) or "DBUS_SESSION_BUS_ADDRESS" not in env:
        return [], set()
    try:
        result = subprocess.run([SYSTEM_PYTHON, str(DUMPER)], env=dict(env), capture_output=True,
                                timeout=timeout_s, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        log.warning("AT-SPI dump took longer than %.0f s; window frames only", timeout_s)
        return [], set()
    if result.returncode != 0:
        log.warning("AT-SPI dump failed (%d): %s", result.returncode, result.stderr.decode(errors="replace")[-800:])
        return [], set()
    dump = json.loads(result.stdout)
    return [ET.fromstring(text) for text in dump["applications"]], {int(p) for p in dump["pids"]}


def _frame(window: WindowInfo) -> dict[str, str]:
    attrs = {
        "name": window.title,
        f"{{{NS_STATE}}}showing": "true",
        f"{{{NS_STATE}}}visible": "true",
        f"{{{NS_COMPONENT}}}screencoord": f"({window.x}, {window.y})",
        f"{{{NS_COMPONENT}}}size": f"({window.width}, {window.height})",
    }
    if window.active:
        attrs[f"{{{NS_STATE}}}active"] = "true"
    return attrs


def tree_xml(windows: list[WindowInfo], env: Mapping[str, str] | None = None) -> str:
    """`<desktop-frame>` XML text: the AT-SPI applications of the desktop of `env` (skipped when
    None), then a frame-only `application` per WM class for `windows` whose process has no AT-SPI
    application."""
    root = ET.Element("desktop-frame")
    applications, pids = atspi_applications(env) if env is not None else ([], set())
    root.extend(applications)
    apps: dict[str, ET.Element] = {}
    for window in windows:
        if window.pid is not None and window.pid in pids:
            continue
        app_name = window.wm_class.split(".")[0] or "unknown"
        if app_name not in apps:
            apps[app_name] = ET.SubElement(root, "application", {"name": app_name})
        ET.SubElement(apps[app_name], "frame", _frame(window))
    return ET.tostring(root, encoding="unicode")
