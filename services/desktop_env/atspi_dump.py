"""Dump the desktop's AT-SPI accessibility tree in OSWorld's XML format; runs under Debian's
`/usr/bin/python3` (pyatspi is a Debian package, not in the server's venv), stdlib + pyatspi only.

Usage: `/usr/bin/python3 atspi_dump.py` with the desktop's DISPLAY and DBUS_SESSION_BUS_ADDRESS.
Prints one JSON object: `{"applications": [<application XML>, ...], "pids": [<pid of each>, ...]}`.

Node format as OSWorld's VM server (`desktop_env/server/main.py`, `_create_atspi_node`): the tag is
the role name with spaces as `-`; attribute `name`; one `st:<state>="true"` per state; `attr:<k>`
per object attribute; `cp:screencoord="(x, y)"` and `cp:size="(w, h)"` for visible+showing nodes;
the text interface's text as element text (U+FFFC/U+FFFD removed); `image`, `selection` = "true";
`val:value/min/max/step`; `act:<action>_desc` / `_kb`. Depth <= 50, <= 1024 children per node; a
LibreOffice Calc sheet contributes only its showing cells.
"""

from __future__ import annotations

import json
import re
import sys
import xml.etree.ElementTree as ET
from typing import Any

import pyatspi
from atspi_ns import NS  # the sibling module: this script runs by path, its folder is on sys.path

MAX_DEPTH = 50
MAX_WIDTH = 1024
MAX_SHEET_SCAN = 500  # rows / columns scanned for the first showing cell of a Calc sheet
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_TAG_INVALID = re.compile(r"[^A-Za-z0-9_.-]")


def _clean(text: str) -> str:
    return _XML_INVALID.sub("", text)


def _state_names(node: Any) -> list[str]:
    names = []
    for state in node.getState().get_states():
        raw = pyatspi.StateType._enum_lookup.get(int(state), "") if hasattr(pyatspi.StateType, "_enum_lookup") \
            else str(state)
        name = raw.split("_", 1)[1].lower() if "_" in raw else raw.lower()
        if name:
            names.append(name)
    return names


def _attributes(node: Any) -> dict[str, str]:
    attrib: dict[str, str] = {"name": _clean(node.name or "")}
    states = _state_names(node)
    for state in states:
        attrib[f"{{{NS['st']}}}{state}"] = "true"
    try:
        for key, value in (node.get_attributes() or {}).items():
            if key:
                attrib[f"{{{NS['attr']}}}{_TAG_INVALID.sub('-', key)}"] = _clean(str(value))
    except Exception:  # an app that answers attributes badly keeps its other fields
        pass
    if "visible" in states and "showing" in states:
        try:
            x, y, width, height = node.queryComponent().getExtents(pyatspi.XY_SCREEN)
            attrib[f"{{{NS['cp']}}}screencoord"] = str((x, y))
            attrib[f"{{{NS['cp']}}}size"] = str((width, height))
        except NotImplementedError:
            pass
    for interface, key in (("queryImage", "image"), ("querySelection", "selection")):
        try:
            getattr(node, interface)()
            attrib[key] = "true"
        except NotImplementedError:
            pass
    _value_fields(node, attrib)
    _action_fields(node, attrib)
    return attrib


def _value_fields(node: Any, attrib: dict[str, str]) -> None:
    try:
        value = node.queryValue()
    except NotImplementedError:
        return
    for key, read in (("value", lambda: value.currentValue), ("min", lambda: value.minimumValue),
                      ("max", lambda: value.maximumValue), ("step", lambda: value.minimumIncrement)):
        try:
            attrib[f"{{{NS['val']}}}{key}"] = str(read())
        except Exception:
            pass


def _action_fields(node: Any, attrib: dict[str, str]) -> None:
    try:
        action = node.queryAction()
    except NotImplementedError:
        return
    for i in range(action.nActions):
        name = _TAG_INVALID.sub("-", action.getName(i).replace(" ", "-"))
        attrib[f"{{{NS['act']}}}{name}_desc"] = _clean(action.getDescription(i) or "")
        attrib[f"{{{NS['act']}}}{name}_kb"] = _clean(action.getKeyBinding(i) or "")


def _text(node: Any) -> str:
    try:
        text_iface = node.queryText()
    except NotImplementedError:
        return ""
    return _clean(text_iface.getText(0, text_iface.characterCount).replace("\ufffc", "").replace("\ufffd", ""))


def _role(node: Any) -> str:
    role = (node.getRoleName() or "").strip() or "unknown"
    tag = _TAG_INVALID.sub("-", role.replace(" ", "-"))
    return tag if tag[0].isalpha() else f"tag{tag}"


def _showing(node: Any) -> bool:
    return bool(node.getState().contains(pyatspi.STATE_SHOWING))


def _sheet_cells(table: Any) -> list[Any]:
    """The showing cells of a Calc sheet (millions of cells: scan rows/columns from the first showing
    one, as OSWorld does)."""
    try:
        grid = table.queryTable()
        rows, columns = grid.nRows, grid.nColumns
    except NotImplementedError:
        return []
    cells = []
    first_column = None
    for row in range(min(rows, 1 << 20)):
        found_in_row = False
        for column in range(first_column or 0, min(columns, (first_column or 0) + MAX_WIDTH)):
            cell = grid.getAccessibleAt(row, column)
            if cell is not None and _showing(cell):
                first_column = column if first_column is None else first_column
                cells.append(cell)
                found_in_row = True
            elif found_in_row or (first_column is None and column >= MAX_SHEET_SCAN):
                break
        if (first_column is not None and not found_in_row) or (first_column is None and row >= MAX_SHEET_SCAN):
            break
    return cells


def node_xml(node: Any, depth: int = 0, in_sheet: bool = False) -> ET.Element:
    """The element of `node` and its subtree (see module doc)."""
    element = ET.Element(_role(node), _attributes(node))
    text = _text(node)
    if text:
        element.text = text
    if depth >= MAX_DEPTH:
        return element
    role = (node.getRoleName() or "").strip()
    in_sheet = in_sheet or role == "document spreadsheet"
    try:
        children = _sheet_cells(node) if in_sheet and role == "table" else \
            [node.getChildAtIndex(i) for i in range(min(node.childCount, MAX_WIDTH))]
        for child in children:
            if child is not None:
                element.append(node_xml(child, depth + 1, in_sheet))
    except Exception as exc:  # a child that vanished mid-walk: keep what we have
        print(f"atspi_dump: children of {role} {node.name!r}: {exc}", file=sys.stderr)
    return element


def main() -> None:
    """Print the JSON described in the module doc."""
    for prefix, uri in NS.items():
        ET.register_namespace(prefix, uri)
    pyatspi.setTimeout(2000, 10000)
    desktop = pyatspi.Registry.getDesktop(0)
    applications, pids = [], []
    for app in desktop:
        if app is None:
            continue
        try:
            element = node_xml(app, 1)
            pid = app.get_process_id()
        except Exception as exc:  # an app that died or hangs is left out
            print(f"atspi_dump: application {getattr(app, 'name', '?')!r}: {exc}", file=sys.stderr)
            continue
        applications.append(ET.tostring(element, encoding="unicode"))
        pids.append(pid)
    json.dump({"applications": applications, "pids": pids}, sys.stdout)


if __name__ == "__main__":
    main()
