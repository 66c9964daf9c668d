"""Whether a part of a screenshot is drawn: a window that is mapped but not painted yet is one flat
colour (black, white or its background), a drawn one shows text, icons and borders in many colours."""

from __future__ import annotations

from PIL import Image

#: More distinct colours than this: drawn.
MIN_COLOURS = 16

Box = tuple[int, int, int, int]


def is_drawn(image: Image.Image, box: Box | None = None) -> bool:
    """True when `image` (or its `box`: left, top, right, bottom in pixels, clipped to the image) shows
    more than `MIN_COLOURS` colours; False for an empty box."""
    if box is not None:
        left, top, right, bottom = box
        box = (max(left, 0), max(top, 0), min(right, image.width), min(bottom, image.height))
        if box[2] <= box[0] or box[3] <= box[1]:
            return False
        image = image.crop(box)
    return image.getcolors(maxcolors=MIN_COLOURS) is None  # None: more colours than `maxcolors`
