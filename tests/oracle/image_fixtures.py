"""Synthetic images for the differential tests of the image metrics (GIMP, VLC snapshots): a
"photo" with texture (so SSIM means something), edits of it as GIMP would make them, shapes.

All deterministic (seeded); sizes in pixels; `save` writes any of them to a file.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from PIL import Image, ImageDraw, ImageEnhance, ImageOps

Pixels = NDArray[np.uint8]


def photo(width: int = 96, height: int = 72, seed: int = 0, noise: float = 6) -> Image.Image:
    """An RGB "photo": smooth colour waves, a few filled shapes and mild noise (std `noise`)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    phase = rng.uniform(0, 6, size=3)
    channels = [
        120 + 70 * np.sin(x / 9 + phase[0]) + 20 * np.cos(y / 5),
        110 + 60 * np.cos(y / 7 + phase[1]) + 25 * np.sin(x / 13),
        130 + 50 * np.sin((x + y) / 11 + phase[2]),
    ]
    pixels = np.stack(channels, axis=2) + rng.normal(0, noise, size=(height, width, 3))
    image = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(image)
    for _ in range(4):
        x0, y0 = int(rng.integers(0, width - 20)), int(rng.integers(0, height - 20))
        colour = tuple(int(c) for c in rng.integers(20, 235, size=3))
        draw.ellipse((x0, y0, x0 + int(rng.integers(8, 20)), y0 + int(rng.integers(8, 20))), fill=colour)
    return image


def graphic(width: int = 96, height: int = 72) -> Image.Image:
    """An RGB clip-art "computer": a vertical gradient (under 100 colours) and flat shapes."""
    rows = np.linspace(200, 120, height).astype(np.uint8)
    pixels = np.stack([np.repeat(rows[:, None], width, axis=1)] * 3, axis=2)
    pixels[:, :, 2] = 230
    image = Image.fromarray(pixels)
    draw = ImageDraw.Draw(image)
    draw.rectangle((width // 5, height // 8, width * 4 // 5, height * 5 // 8), fill=(40, 40, 48))  # monitor
    draw.rectangle((width // 5 + 4, height // 8 + 4, width * 4 // 5 - 4, height * 5 // 8 - 4), fill=(70, 140, 220))
    draw.rectangle((width // 6, height * 3 // 4, width * 5 // 6, height * 7 // 8), fill=(210, 210, 200))  # keyboard
    draw.ellipse((width * 5 // 6 + 2, height * 3 // 4, width - 2, height * 7 // 8), fill=(90, 90, 90))  # mouse
    return image


def scaled(image: Image.Image, factor: float) -> Image.Image:
    """Every channel multiplied by `factor` (clipped): darker below 1, brighter above."""
    pixels = np.asarray(image, dtype=np.float64) * factor
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).convert(image.mode)


def saturated(image: Image.Image, factor: float) -> Image.Image:
    """Saturation (HSV S band) multiplied by `factor`, hue and value unchanged."""
    h, s, v = image.convert("HSV").split()
    s = s.point(lambda level: min(255, int(level * factor)))
    return Image.merge("HSV", (h, s, v)).convert("RGB")


def contrasted(image: Image.Image, factor: float) -> Image.Image:
    """Pillow's contrast enhancement (GIMP's Brightness-Contrast moves pixels the same way)."""
    return ImageEnhance.Contrast(image).enhance(factor)


def stripes(width: int = 96, height: int = 72, period: int = 8) -> Image.Image:
    """RGB black and white horizontal stripes (a picture unlike `photo`)."""
    rows = (np.arange(height) // (period // 2)) % 2 * 255
    return Image.fromarray(np.repeat(np.repeat(rows[:, None], width, axis=1)[:, :, None], 3, axis=2).astype(np.uint8))


def mirrored(image: Image.Image) -> Image.Image:
    return ImageOps.mirror(image)


def cutout(image: Image.Image) -> Image.Image:
    """RGBA: an ellipse of `image` (the "subject") kept, everything else fully transparent."""
    mask = Image.new("L", image.size, 0)
    ImageDraw.Draw(mask).ellipse((image.width // 5, image.height // 6, image.width * 4 // 5, image.height * 5 // 6),
                                 fill=255)
    rgba = image.convert("RGBA")
    rgba.putalpha(mask)
    clear = Image.new("RGBA", image.size, (0, 0, 0, 0))
    return Image.composite(rgba, clear, mask)


def save(image: Image.Image, path: Path, **params: object) -> str:
    """Write `image` to `path` (format from the suffix); returns the path as str."""
    image.save(path, **params)  # type: ignore[arg-type]
    return str(path)
