"""Screenshots of one X display, in-process (Pillow's XCB grab: ~20 ms for 1920x1080).

Used by `GET /screenshot` (PNG with the mouse cursor drawn, as OSWorld's server does) and as the
replacement of pyautogui's `screenshot()` in the processes that run agent actions (pyautogui would
otherwise shell out to `scrot` / `gnome-screenshot`).
"""

from __future__ import annotations

import io

from PIL import Image, ImageDraw, ImageGrab

from services.desktop_env import x11

# A classic arrow pointer, hotspot at (0, 0), in pixels.
_ARROW = [(0, 0), (0, 17), (4, 13), (7, 20), (10, 19), (7, 12), (12, 12)]


def grab(display: str, region: tuple[int, int, int, int] | None = None) -> Image.Image:
    """RGB image of `display`; `region` is `(left, top, width, height)` in pixels (pyautogui's form)."""
    bbox = None
    if region is not None:
        left, top, width, height = (int(v) for v in region)
        bbox = (left, top, left + width, top + height)
    image = ImageGrab.grab(bbox=bbox, xdisplay=display)
    return image if image.mode == "RGB" else image.convert("RGB")


def draw_cursor(image: Image.Image, x: int, y: int) -> None:
    """Draw an arrow pointer with its tip at `(x, y)` onto `image` (Xvfb has no visible cursor)."""
    ImageDraw.Draw(image).polygon([(x + dx, y + dy) for dx, dy in _ARROW], fill="white", outline="black")


PNG_COMPRESS_LEVEL = 3


def encode_png(image: Image.Image) -> bytes:
    """PNG bytes of `image` at `PNG_COMPRESS_LEVEL` (3: about 2x faster than Pillow's default 6 for
    nearly the same size on desktop images; screenshots are taken every step)."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=PNG_COMPRESS_LEVEL)
    return buffer.getvalue()


def screenshot_png(display: str) -> bytes:
    """PNG bytes of the whole screen with the cursor drawn (OSWorld `GET /screenshot`)."""
    image = grab(display)
    draw_cursor(image, *x11.cursor_position(display))
    return encode_png(image)
