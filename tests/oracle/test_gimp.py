"""Differential tests: our GIMP metrics (`services/runner/osworld/metrics/gimp/`) against OSWorld's
own (`desktop_env/evaluators/metrics/gimp.py`), on fixtures built for every task of
`test_nogdrive.json` that uses one (the task's rules and options taken from its JSON), plus edge cases.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from tests.oracle import image_fixtures as img
from tests.oracle.client import Oracle
from tests.oracle.differential import RAISES, Builder, Case, check_case
from tests.oracle.osworld_index import MetricUse, metric_uses

GIMP_METRICS = (
    "check_brightness_decrease_and_structure_sim", "check_config_status", "check_contrast_increase_and_structure_sim",
    "check_file_exists_and_structure_sim", "check_green_background", "check_image_file_size", "check_image_mirror",
    "check_image_size", "check_palette_and_structure_sim", "check_saturation_increase_and_structure_sim",
    "check_structure_sim", "check_structure_sim_resized", "check_textbox_on_leftside", "check_triangle_position",
    "compare_image_list",
)

GIMPRC_HEAD = """# GIMP gimprc
#
# This is your personal gimprc file.  Any variable defined in this file takes
# precedence over the value defined in the system-wide gimprc:
# /etc/gimp/2.0/gimprc
# Most values can be set within GIMP by changing some options in the
# Preferences dialog.

"""
SESSIONRC = """# GIMP sessionrc
#
# This file takes session-specific info (that is info, you want to keep
# between two GIMP sessions).  You are not supposed to edit it manually, but
# of course you can do.  The sessionrc will be entirely rewritten every time
# you quit GIMP.  If this file isn't found, defaults are used.

(session-info "toplevel"
    (factory-entry "image-window")
    (position 0 0)
    (size 1280 720)
    (open-on-exit)
    (aux-info
        (left-docks-width "80")
        (right-docks-width "298")
        (maximized "yes"))
    (gimp-image-window-dock
        (side left)
        (book
            (current-page 0)
            (dockable "gimp-tool-options"
                (tab-style automatic)
                (aux-info
                    (show-button-bar "true"))))))

(hide-docks {hide})
(single-window-mode yes)
(show-tabs yes)
(tabs-position 0)
(last-tip-shown 0)

# end of sessionrc
"""


def _gimprc(tmp: Path, name: str, settings: str) -> str:
    path = tmp / name
    path.write_text(GIMPRC_HEAD + settings + "\n# end of gimprc\n")
    return str(path)


def config_status(tmp: Path, use: MetricUse) -> list[Case]:
    """gimprc / sessionrc as GIMP 2.10 writes them on quit, with the task's setting and without."""
    rules = use.rules
    if rules["key"] == "hide-docks":
        right, wrong = tmp / "sessionrc", tmp / "sessionrc_wrong"
        right.write_text(SESSIONRC.format(hide="yes"))
        wrong.write_text(SESSIONRC.format(hide="no"))
        return [Case("docks hidden", str(right), rules), Case("docks shown", str(wrong), rules, 0.0)]
    others = '(default-image\n    (width 1920)\n    (height 1080))\n(show-tooltips yes)\n'
    setting = f"({rules['key']} {rules['value']})\n"
    defaults = {"layer-new-name": '(layer-new-name "Layer")\n', "undo-levels": "(undo-levels 5)\n",
                "theme": '(theme "Dark")\n'}
    return [
        Case("setting saved", _gimprc(tmp, "gimprc", others + setting), rules),
        Case("default kept", _gimprc(tmp, "gimprc_default", others + defaults[rules["key"]]), rules, 0.0),
        Case("only a comment", _gimprc(tmp, "gimprc_comment", "# " + setting), rules, 0.0),
        Case("no config written", None, rules, 0.0),
    ]


def brightness(tmp: Path, use: MetricUse) -> list[Case]:
    """Darker edit checked against the original. gimp/7a4deb26: result = edited (darker),
    expected = original. multi_apps/4c26e3f3 swaps them: result = the dim original, expected = the
    brightened export (option threshold 0.15)."""
    original = img.photo(seed=1)
    orig = img.save(original, tmp / "original.png")
    darker = img.save(img.scaled(original, 0.65), tmp / "darker.png")
    brighter = img.save(img.scaled(original, 1.3), tmp / "brighter.png")
    other = img.save(img.scaled(img.photo(seed=7), 0.65), tmp / "other_darker.png")
    if use.result["type"] == "vm_file":  # the agent's darker export is the result
        return [Case("darker", darker, orig), Case("brighter", brighter, orig, 0.0),
                Case("another picture", other, orig, 0.0), Case("not exported", None, orig, 0.0)]
    bright_other = img.save(img.scaled(img.stripes(), 1.3), tmp / "other_brighter.png")
    return [Case("brightened", orig, brighter), Case("darkened instead", orig, darker, 0.0),
            Case("another picture brightened", orig, bright_other, 0.0), Case("not exported", orig, None, 0.0)]


def saturation(tmp: Path, use: MetricUse) -> list[Case]:
    original = img.photo(seed=2)
    orig = img.save(original, tmp / "woman_sitting_by_the_tree2.png")
    vivid = img.save(img.saturated(original, 1.4), tmp / "edited_colorful.png")
    dull = img.save(img.saturated(original, 0.6), tmp / "dull.png")
    other = img.save(img.saturated(img.photo(seed=9), 1.4), tmp / "other.png")
    return [Case("more vivid", vivid, orig), Case("less vivid", dull, orig, 0.0),
            Case("another picture", other, orig, 0.0), Case("not exported", None, orig, 0.0)]


def contrast(tmp: Path, use: MetricUse) -> list[Case]:
    original = img.photo(seed=3)
    orig = img.save(original, tmp / "berries.png")
    strong = img.save(img.contrasted(original, 1.5), tmp / "berries_contrast.png")
    weak = img.save(img.contrasted(original, 0.6), tmp / "weak.png")
    other = img.save(img.contrasted(img.photo(seed=11), 1.5), tmp / "other.png")
    return [Case("more contrast", strong, orig), Case("less contrast", weak, orig, 0.0),
            Case("another picture", other, orig, 0.0)]


def file_exists(tmp: Path, use: MetricUse) -> list[Case]:
    original = img.photo(seed=4, width=120, height=80)
    gold = img.save(original, tmp / "The_Lost_River_Of_Dreams.jpg", quality=92)
    export = img.save(original, tmp / "export.jpg", quality=85)
    other = img.save(img.photo(seed=12, width=120, height=80), tmp / "other.jpg")
    return [Case("exported", export, gold), Case("another picture", other, gold, 0.0),
            Case("not exported", None, gold, 0.0), Case("path without file", str(tmp / "missing.jpg"), gold, 0.0)]


def structure(tmp: Path, use: MetricUse) -> list[Case]:
    """Gold and result images as each task describes them."""
    task = use.task
    if task.endswith("2a729ded-3296-423d-aec4-7dd55ed5fbb3") or task.endswith("e8172110-ec08-421b-a6f5-842e6451911f"):
        picture = img.photo(seed=5)
        gold = img.save(img.cutout(picture), tmp / "gold.png")
        right = img.save(img.cutout(picture), tmp / "cutout.png", optimize=True)
        kept_background = img.save(picture, tmp / "with_background.png")
        smaller = img.save(img.cutout(picture).resize((90, 70)), tmp / "smaller.png")
        return [Case("background removed", right, gold), Case("background kept", kept_background, gold, 0.0),
                Case("other size", smaller, gold, 0.0), Case("not saved", None, gold, 0.0)]
    picture = img.photo(seed=6, width=90, height=60)
    if task.endswith("d68204bf-11c1-4b13-b48b-d303c73d4bf6"):  # three vertical strips reordered
        strips = [picture.crop((i * 30, 0, i * 30 + 30, 60)) for i in range(3)]
        gold_img, wrong_img = Image.new("RGB", (90, 60)), picture
        for slot, index in enumerate((2, 0, 1)):
            gold_img.paste(strips[index], (slot * 30, 0))
        gold = img.save(gold_img, tmp / "rearranged_gold.png")
        return [Case("rearranged", img.save(gold_img, tmp / "rearranged.png"), gold),
                Case("left as is", img.save(wrong_img, tmp / "same.png"), gold, 0.0)]
    # multi_apps/91190194: the top 20% cropped off
    gold_img = picture.crop((0, 12, 90, 60))
    gold = img.save(gold_img, tmp / "cropped_gold.png")
    return [Case("cropped", img.save(gold_img, tmp / "cropped.png"), gold),
            Case("not cropped", img.save(picture, tmp / "uncropped.png"), gold, 0.0),
            Case("bottom cropped", img.save(picture.crop((0, 0, 90, 48)), tmp / "bottom.png"), gold, 0.0)]


def _layer_on_canvas(layer: Image.Image, canvas: tuple[int, int]) -> Image.Image:
    out = Image.new("RGBA", canvas, (0, 0, 0, 0))
    out.paste(layer.convert("RGBA"), (10, 6))
    return out


def image_size(tmp: Path, use: MetricUse) -> list[Case]:
    rules = use.rules
    if rules.get("ignore_transparent"):  # gimp/d16c99dc: the dog layer resized to height 512
        dog = img.photo(seed=8, width=96, height=72)
        right = img.save(_layer_on_canvas(dog.resize((683, 512)), (720, 540)), tmp / "resized.png")
        wrong = img.save(_layer_on_canvas(dog.resize((533, 400)), (720, 540)), tmp / "resized_400.png")
        return [Case("layer 683x512 on a larger canvas", right, rules),
                Case("layer 533x400", wrong, rules, 0.0), Case("not exported", None, rules, 0.0)]
    character = img.photo(seed=10, width=64, height=64)
    return [Case("128x128", img.save(character.resize((128, 128)), tmp / "resized.png"), rules),
            Case("128x96", img.save(character.resize((128, 96)), tmp / "resized_wrong.png"), rules, 0.0),
            Case("100x100 on a 128x128 canvas with a transparent colour key", _colour_keyed(character, tmp), rules,
                 0.0)]


def _colour_keyed(picture: Image.Image, tmp: Path) -> str:
    """RGB PNG with a `transparency` colour key (black): the content is 100x100 of 128x128."""
    canvas = Image.new("RGB", (128, 128), (0, 0, 0))
    canvas.paste(picture.resize((100, 100)), (14, 14))
    return img.save(canvas, tmp / "keyed.png", transparency=(0, 0, 0))


def structure_resized(tmp: Path, use: MetricUse) -> list[Case]:
    dog = img.photo(seed=8, width=96, height=72)
    gold = img.save(dog, tmp / "dog_with_background.png")
    right = img.save(_layer_on_canvas(dog.resize((683, 512)), (720, 540)), tmp / "resized.png")
    other = img.save(_layer_on_canvas(img.photo(seed=13).resize((683, 512)), (720, 540)), tmp / "other.png")
    plain = img.save(dog.resize((683, 512)), tmp / "plain.png")
    clear = img.save(Image.new("RGBA", (700, 512), (0, 0, 0, 0)), tmp / "clear.png")
    return [Case("layer resized", right, gold), Case("another picture", other, gold, 0.0),
            Case("no transparency", plain, gold), Case("fully transparent", clear, gold, 0.0)]


def palette(tmp: Path, use: MetricUse) -> list[Case]:
    computer = img.graphic()
    gold = img.save(computer, tmp / "computer.png")
    indexed = img.save(computer.quantize(256), tmp / "palette_computer.png")
    rgb = img.save(computer, tmp / "rgb_computer.png")
    other = img.save(img.photo(seed=15).quantize(256), tmp / "other.png")  # palette-based, another picture
    empty = tmp / "empty.png"
    empty.write_bytes(b"")
    truncated = tmp / "truncated.png"
    truncated.write_bytes(Path(indexed).read_bytes()[:200])
    return [Case("palette-based", indexed, gold), Case("still RGB", rgb, gold, 0.0),
            Case("another picture", other, gold, 0.0), Case("empty file", str(empty), gold, 0.0),
            Case("truncated file", str(truncated), gold, 0.0), Case("not exported", None, gold, 0.0)]


def _text_box(left: int, size: tuple[int, int] = (160, 100)) -> Image.Image:
    image = Image.new("RGB", size, (225, 230, 215))
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 60, size[0] - 1, size[1] - 1), fill=(190, 200, 170))  # light image layer
    draw.text((left, 20), "Hello GIMP", fill=(0, 0, 0))
    return image


def textbox(tmp: Path, use: MetricUse) -> list[Case]:
    return [Case("moved to the left", img.save(_text_box(2), tmp / "left.png"), has_expected=False),
            Case("still in the middle", img.save(_text_box(60), tmp / "middle.png"), want=0.0, has_expected=False),
            Case("no text", img.save(Image.new("RGB", (80, 60), "white"), tmp / "blank.png"), want=0.0,
                 has_expected=False),
            Case("not exported", None, want=0.0, has_expected=False)]


def mirror(tmp: Path, use: MetricUse) -> list[Case]:
    berry = img.photo(seed=16)
    gold = img.save(berry, tmp / "berry.png")
    return [Case("mirrored", img.save(img.mirrored(berry), tmp / "berry_mirror.png"), gold),
            Case("unchanged", img.save(berry, tmp / "same.png"), gold, 0.0),
            Case("flipped vertically", img.save(berry.transpose(Image.Transpose.FLIP_TOP_BOTTOM), tmp / "v.png"),
                 gold, 0.0)]


def _object_on(background: tuple[int, int, int], size: tuple[int, int]) -> Image.Image:
    image = Image.new("RGB", size, background)
    ImageDraw.Draw(image).ellipse((size[0] // 4, size[1] // 4, size[0] * 3 // 4, size[1] * 3 // 4), fill=(0, 0, 0))
    return image


def green_background(tmp: Path, use: MetricUse) -> list[Case]:
    gold = img.save(_object_on((255, 255, 255), (48, 48)), tmp / "white_background_with_object.png")
    return [Case("green background", img.save(_object_on((40, 200, 60), (48, 48)), tmp / "green.png"), gold),
            Case("background left white", img.save(_object_on((255, 255, 255), (48, 48)), tmp / "white.png"),
                 gold, 0.0),
            Case("blue background", img.save(_object_on((30, 60, 220), (48, 48)), tmp / "blue.png"), gold, 0.0),
            Case("not exported", None, gold, 0.0)]


def _triangle(centre: tuple[int, int], size: tuple[int, int] = (120, 100), mark: bool = True) -> Image.Image:
    image = Image.new("RGB", size, (250, 250, 250))
    draw = ImageDraw.Draw(image)
    cx, cy = centre
    draw.polygon([(cx, cy - 12), (cx - 14, cy + 10), (cx + 14, cy + 10)], fill=(255, 221, 0))
    if mark:  # a small dark mark in a corner (fewer pixels than the triangle)
        draw.rectangle((2, 2, 6, 5), fill=(30, 30, 30))
    return image


def triangle(tmp: Path, use: MetricUse) -> list[Case]:
    return [Case("centred", img.save(_triangle((60, 50)), tmp / "centre.png"), has_expected=False),
            Case("left in the corner", img.save(_triangle((24, 20)), tmp / "corner.png"), want=0.0,
                 has_expected=False),
            Case("not exported", None, want=0.0, has_expected=False)]


def file_size(tmp: Path, use: MetricUse) -> list[Case]:
    rules = use.rules
    bird = img.photo(seed=17, width=400, height=300)
    small = img.save(bird, tmp / "compressed.jpeg", quality=60)
    noise = Image.fromarray(np.random.default_rng(0).integers(0, 256, (700, 700, 3), dtype=np.uint8))
    big = img.save(noise, tmp / "big.jpeg", quality=100)
    return [Case("under 600 KB", small, rules), Case("too large", big, rules, 0.0),
            Case("not saved", None, rules, 0.0)]


def image_list(tmp: Path, use: MetricUse) -> list[Case]:
    """vm_file / cloud_file with `multi` and no `gives` hand over the first file only (OSWorld)."""
    photo = img.photo(seed=18, width=80, height=60)
    gold = img.save(photo, tmp / "DSC00657_gold.jpg", quality=90)
    copy = tmp / "DSC00657.jpg"
    copy.write_bytes(Path(gold).read_bytes())
    other = img.save(img.photo(seed=19, width=80, height=60), tmp / "other.jpg", quality=90)
    return [Case("the presenter photo", str(copy), gold), Case("another photo", other, gold, 0.0),
            Case("missing in presenter/", None, gold, 0.0)]


BUILDERS: dict[str, Builder] = {
    "check_config_status": config_status,
    "check_brightness_decrease_and_structure_sim": brightness,
    "check_saturation_increase_and_structure_sim": saturation,
    "check_contrast_increase_and_structure_sim": contrast,
    "check_file_exists_and_structure_sim": file_exists,
    "check_structure_sim": structure,
    "check_image_size": image_size,
    "check_structure_sim_resized": structure_resized,
    "check_palette_and_structure_sim": palette,
    "check_textbox_on_leftside": textbox,
    "check_image_mirror": mirror,
    "check_green_background": green_background,
    "check_triangle_position": triangle,
    "check_image_file_size": file_size,
    "compare_image_list": image_list,
}

USES = [(metric, use) for metric in GIMP_METRICS for use in metric_uses(metric)]


def test_every_gimp_metric_use_has_fixtures() -> None:
    assert set(BUILDERS) == set(GIMP_METRICS)
    assert {metric for metric, _ in USES} == set(GIMP_METRICS)


@pytest.mark.parametrize(("metric", "use"), USES, ids=[f"{m}:{u.id}" for m, u in USES])
def test_task_fixtures(oracle: Oracle, tmp_path: Path, metric: str, use: MetricUse) -> None:
    for case in BUILDERS[metric](tmp_path, use):
        check_case(oracle, "gimp", metric, case, use.options)


def _corrupt(tmp: Path) -> str:
    path = tmp / "corrupt.png"
    path.write_bytes(b"\x89PNG\r\n\x1a\nnot really a png")
    return str(path)


EDGE_PAIR_METRICS = ("check_brightness_decrease_and_structure_sim", "check_saturation_increase_and_structure_sim",
                     "check_contrast_increase_and_structure_sim", "check_file_exists_and_structure_sim",
                     "check_structure_sim", "check_structure_sim_resized", "check_palette_and_structure_sim",
                     "check_image_mirror", "check_green_background", "compare_image_list")


@pytest.mark.parametrize("metric", EDGE_PAIR_METRICS)
def test_unreadable_and_missing_images(oracle: Oracle, tmp_path: Path, metric: str) -> None:
    """A file Pillow cannot read: OSWorld crashes (ours: EvalError) or scores 0, metric by metric."""
    good = img.save(img.photo(), tmp_path / "good.png")
    soft = metric in ("check_structure_sim", "check_palette_and_structure_sim")
    want: float | str = 0.0 if soft else RAISES
    check_case(oracle, "gimp", metric, Case("corrupt result", _corrupt(tmp_path), good, want))
    check_case(oracle, "gimp", metric, Case("both None", None, None, 0.0))


def test_edge_cases(oracle: Oracle, tmp_path: Path) -> None:
    black = img.save(Image.new("RGB", (32, 32)), tmp_path / "black.png")
    photo = img.save(img.photo(), tmp_path / "photo.png")
    tiny = img.save(img.photo().resize((6, 6)), tmp_path / "tiny.png")
    gray = img.save(img.photo().convert("L"), tmp_path / "gray.png")
    cases = {
        "check_brightness_decrease_and_structure_sim": [Case("all-black image", black, photo, RAISES)],
        "check_structure_sim": [Case("smaller than the SSIM window", tiny, tiny, 0.0),
                                Case("grayscale vs itself", gray, gray, 1.0)],
        "check_triangle_position": [Case("one colour", black, has_expected=False, want=RAISES),
                                    Case("grayscale", gray, has_expected=False, want=RAISES),
                                    Case("two colours, shape off-centre (OSWorld measures the background)",
                                         img.save(_triangle((24, 20), mark=False), tmp_path / "two.png"),
                                         has_expected=False, want=1.0)],
        "check_image_size": [Case("rule is not an object", photo, "128", RAISES)],
        "check_image_file_size": [Case("rule without max_size", photo, {}, RAISES),
                                  Case("file gone", str(tmp_path / "gone.jpg"), {"max_size": 10}, RAISES)],
        "check_config_status": [
            Case("rule without key", _gimprc(tmp_path, "a", "(theme \"Light\")\n"), {"value": "x"}, RAISES),
            Case("blank line of spaces", _gimprc(tmp_path, "b", "  \n(theme \"Light\")\n"),
                 {"key": "theme", "value": '"Light"'}, RAISES),
            Case("two-word key", _gimprc(tmp_path, "c", "(default-grid\n    (xspacing 10.0))\n(style solid)\n"),
                 {"key": ["style", "solid"], "value": "solid"}, 1.0)],
        "compare_image_list": [Case("lists, second differs", [photo, photo], [photo, black], 0.0),
                               Case("lists, all equal", [photo, gray], [photo, gray], 1.0),
                               Case("mode converted", gray, photo, 0.0)],
        "check_green_background": [
            Case("wide image, green: OSWorld's walk goes out of range",
                 img.save(_object_on((40, 200, 60), (64, 48)), tmp_path / "wide_green.png"),
                 img.save(_object_on((255, 255, 255), (64, 48)), tmp_path / "wide_gold.png"), RAISES),
            Case("tall image, white: stops at the first pixel",
                 img.save(_object_on((255, 255, 255), (48, 64)), tmp_path / "tall_white.png"),
                 img.save(_object_on((255, 255, 255), (48, 64)), tmp_path / "tall_gold.png"), 0.0),
            Case("grayscale result", gray, photo, RAISES)],
    }
    for metric, metric_cases in cases.items():
        for case in metric_cases:
            check_case(oracle, "gimp", metric, case)
