"""Second half of `desktop-app-ready` (see `shims`): `python -m services.desktop_env.painted X Y W H`
exits 0 when that screen rectangle is drawn (more than 16 distinct colours: a window that is mapped
but not painted yet is one flat colour), 1 otherwise; 2 on a usage error. Reads `$DISPLAY`."""

from __future__ import annotations

import sys

import mss
from PIL import Image

from common.pixels import MIN_COLOURS, is_drawn

__all__ = ["MIN_COLOURS", "drawn", "main"]


def drawn(x: int, y: int, width: int, height: int) -> bool:
    """True when the rectangle (screen pixels) shows more than `MIN_COLOURS` colours."""
    with mss.mss() as grabber:
        shot = grabber.grab({"left": x, "top": y, "width": width, "height": height})
    return is_drawn(Image.frombytes("RGB", shot.size, shot.rgb))


def main() -> None:
    """Exit status as in the module doc."""
    try:
        x, y, width, height = (int(v) for v in sys.argv[1:5])
    except ValueError:
        print("usage: python -m services.desktop_env.painted X Y WIDTH HEIGHT", file=sys.stderr)
        sys.exit(2)
    if len(sys.argv) != 5 or width <= 0 or height <= 0:
        print("usage: python -m services.desktop_env.painted X Y WIDTH HEIGHT", file=sys.stderr)
        sys.exit(2)
    sys.exit(0 if drawn(max(x, 0), max(y, 0), width, height) else 1)


if __name__ == "__main__":
    main()
