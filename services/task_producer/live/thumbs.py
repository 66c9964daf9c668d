"""Thumbnails of the wall's screenshots: a PNG (from the store by its blob key, or the bytes that rode in the
stream entry) scaled to `WIDTH` pixels wide with the step's action drawn on it (a ring at a click, a line for a
drag, at the action's screen pixels scaled like the image) and encoded as JPEG (Pillow), kept in a small LRU
cache so that any number of browsers showing the same step cost one store read and one encode."""

from __future__ import annotations

import io
import threading
from collections import OrderedDict
from collections.abc import Callable

from PIL import Image, ImageDraw

from services.task_producer.ui.trajectory_view import Marker

#: Width of a thumbnail (pixels); the height keeps the screenshot's aspect ratio.
WIDTH = 480
#: Thumbnails kept (about 20-40 KB each).
CACHE_SIZE = 256
#: The markers' colour (RGB), as the trajectory viewer's.
MARKER_RGB = (255, 23, 68)


def draw_markers(image: Image.Image, markers: list[Marker], scale: float) -> None:
    """Draw `markers` (screen pixels) on `image`, a screenshot scaled by `scale`: a ring of radius 9 pixels
    at each point, a line with a ring at its start for a drag."""
    draw = ImageDraw.Draw(image)
    for marker in markers:
        x, y = marker.x * scale, marker.y * scale
        if marker.kind == "drag" and marker.x2 is not None and marker.y2 is not None:
            draw.line([(x, y), (marker.x2 * scale, marker.y2 * scale)], fill=MARKER_RGB, width=3)
        draw.ellipse([x - 9, y - 9, x + 9, y + 9], outline=MARKER_RGB, width=3)


def thumbnail(png: bytes, markers: list[Marker] | None = None, width: int = WIDTH) -> bytes:
    """`png` scaled to `width` pixels wide (never enlarged) with `markers` drawn on it, as JPEG bytes
    (quality 75). Raises: ValueError when `png` is not an image Pillow can read."""
    try:
        with Image.open(io.BytesIO(png)) as image:
            image = image.convert("RGB")
            scale = 1.0
            if image.width > width:
                scale = width / image.width
                image = image.resize((width, max(1, round(image.height * scale))), Image.Resampling.BILINEAR)
            draw_markers(image, markers or [], scale)
            out = io.BytesIO()
            image.save(out, format="JPEG", quality=75)
            return out.getvalue()
    except OSError as exc:
        raise ValueError(f"screenshot is not a readable image: {exc}") from exc


class ThumbnailCache:
    """(shot id, markers) -> thumbnail, computed once from `load_png(shot id)` (raises KeyError when gone)."""

    def __init__(self, size: int = CACHE_SIZE) -> None:
        self.size = size
        self._cache: OrderedDict[str, bytes] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, shot: str, markers: list[Marker], load_png: Callable[[str], bytes]) -> bytes:
        """The thumbnail of `shot` with `markers`. Raises: KeyError (no such screenshot), ValueError (not an
        image)."""
        key = shot + "|" + ";".join(m.model_dump_json() for m in markers)
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        data = thumbnail(load_png(shot), markers)
        with self._lock:
            self._cache[key] = data
            while len(self._cache) > self.size:
                self._cache.popitem(last=False)
        return data
