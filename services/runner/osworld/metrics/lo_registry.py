"""LibreOffice's user settings file `registrymodifications.xcu`, shared by the metrics that read it
(docs `find_default_font`, slides `check_presenter_console_disable`, `check_auto_saving_time`).

The file (`~/.config/libreoffice/4/user/registrymodifications.xcu`, fetched by the tasks with a
`vm_file` getter) is a list of `<item oor:path="/org.openoffice.Office.X/...">` elements, each with
`<prop oor:name="Name"><value>text</value></prop>` children. Each OSWorld metric reads it with its
own ElementTree queries (direct children or any descendants, first or last match); `props` offers
both so every metric can keep its own rule.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

OOR = "http://openoffice.org/2001/registry"
"""Namespace of the `oor:path` / `oor:name` attributes."""


def parse(path: Any) -> ET.Element:
    """Root element of the file at `path`.

    Raises: as `xml.etree.ElementTree.parse` (`ParseError`, `OSError`, `TypeError` for a non-path).
    """
    return ET.parse(path).getroot()


def props(root: ET.Element, item_path: str, prop_name: str, *, nested: bool) -> list[ET.Element]:
    """`<prop oor:name=prop_name>` elements of the `<item oor:path=item_path>` elements under `root`,
    in document order: any descendant prop of an item when `nested`, else its direct children."""
    found: list[ET.Element] = []
    for item in root.iter("item"):
        if item is root or item.get(f"{{{OOR}}}path") != item_path:
            continue  # ElementTree's `.//item` (OSWorld's query) never matches the root itself
        candidates = item.iter("prop") if nested else item.findall("prop")
        found.extend(prop for prop in candidates if prop.get(f"{{{OOR}}}name") == prop_name)
    return found
