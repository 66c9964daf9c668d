"""First half of `desktop-app-ready APP` (see `shims`): when an application whose AT-SPI name contains
APP (case-insensitive, e.g. `soffice`, `mousepad`) has a focused widget, print that widget's screen
extents `x y width height` and exit 0; else exit 1 (now, not waiting). The second half
(`painted`) then checks that those pixels are drawn. A setup helper for tasks (`execute` with
`until`), not part of OSWorld's protocol: a window exists, and even has focus, well before a slow
app (LibreOffice's first start on a busy machine) has drawn its document, and keys sent before that
can land in the wrong place.

Runs under Debian's `/usr/bin/python3` (pyatspi), stdlib + pyatspi only. The walk is bounded (depth
30, 200 children per node) so a spreadsheet's million cells are never listed.
"""

from __future__ import annotations

import sys
from typing import Any

import pyatspi

MAX_DEPTH = 30
MAX_CHILDREN = 200


def focused(node: Any, depth: int = 0) -> Any:
    """The first node at or below `node` (within the bounds) in the focused state, or None."""
    if node is None:
        return None
    if node.getState().contains(pyatspi.STATE_FOCUSED):
        return node
    if depth >= MAX_DEPTH:
        return None
    for i in range(min(node.childCount, MAX_CHILDREN)):
        found = focused(node.getChildAtIndex(i), depth + 1)
        if found is not None:
            return found
    return None


def main() -> None:
    """Exit status as in the module doc; 2 on a usage error."""
    if len(sys.argv) != 2:
        print("usage: desktop-app-ready APP", file=sys.stderr)
        sys.exit(2)
    wanted = sys.argv[1].lower()
    pyatspi.setTimeout(1000, 5000)
    for app in pyatspi.Registry.getDesktop(0):
        try:
            if app is None or wanted not in (app.name or "").lower():
                continue
            node = focused(app)
            if node is not None and node.getState().contains(pyatspi.STATE_SHOWING):
                x, y, width, height = node.queryComponent().getExtents(pyatspi.XY_SCREEN)
                if width > 0 and height > 0:
                    print(x, y, width, height)
                    sys.exit(0)
        except Exception:  # an app busy or exiting right now: not ready
            continue
    sys.exit(1)


if __name__ == "__main__":
    main()
