"""Impress settings and UI state (OSWorld `desktop_env/evaluators/metrics/slides.py`): the
presenter console and auto-save interval in LibreOffice's `registrymodifications.xcu` (fetched by
the tasks with a `vm_file` getter of `~/.config/libreoffice/4/user/registrymodifications.xcu`), and
the slide panel in the accessibility tree (an `accessibility_tree` getter).
"""

from __future__ import annotations

import logging
import xml.etree.ElementTree as ET
from typing import Any

from services.runner.osworld.crash import crashes_as_eval_error
from services.runner.osworld.metrics import lo_registry
from services.runner.osworld.metrics.base import given

logger = logging.getLogger(__name__)


def check_presenter_console_disable(config_file_path: Any) -> float:
    """OSWorld `check_presenter_console_disable`: the first `EnablePresenterScreen` prop of item
    `/org.openoffice.Office.Impress/Misc/Start` has the value "false" (any case). Any failure
    (missing file, no such setting, no value) scores 0.0, as in OSWorld."""
    try:
        root = lo_registry.parse(config_file_path)
        for prop in lo_registry.props(root, "/org.openoffice.Office.Impress/Misc/Start", "EnablePresenterScreen",
                                      nested=False):
            # No <value> or no text: caught below, as in OSWorld.
            value = given(given(prop.find("value"), "<value>").text, "<value> text")
            return 1.0 if value.lower() == "false" else 0.0
        return 0.0
    except Exception as exc:  # OSWorld: `except Exception` -> logged, 0
        logger.info("check_presenter_console_disable: %s", exc)
        return 0.0


@crashes_as_eval_error("check_auto_saving_time")
def check_auto_saving_time(pptx_file: Any, rules: Any) -> float:
    """OSWorld `check_auto_saving_time`: LibreOffice's auto-save interval (item
    `/org.openoffice.Office.Common/Save/Document`, prop `AutoSaveTimeIntervall`, in minutes; the last
    such item counts) equals `rules["minutes"]`. Scores 0.0 when the setting is absent.

    Deliberate difference: for a settings file that is missing or not XML, OSWorld's function
    returns None (logged), which scores 0 as any non-number; this one returns 0.0.
    Raises: EvalError without `minutes`, for a prop without `<value>` or with a non-integer value,
    and for a path that is not a string (OSWorld raises on all of these).
    """
    minutes = rules["minutes"]
    try:
        root = lo_registry.parse(pptx_file)
    except (ET.ParseError, FileNotFoundError) as exc:
        logger.info("check_auto_saving_time: %s", exc)
        return 0.0
    interval = None
    for item in root.iter("item"):
        if item is root or item.get(f"{{{lo_registry.OOR}}}path") != "/org.openoffice.Office.Common/Save/Document":
            continue
        for prop in item.iter("prop"):
            if prop.get(f"{{{lo_registry.OOR}}}name") == "AutoSaveTimeIntervall":
                interval = given(prop.find(".//value"), "<value>").text  # None: OSWorld's AttributeError
                break
    if interval is None:
        return 0.0
    return 1.0 if int(interval) == minutes else 0.0


@crashes_as_eval_error("check_left_panel")
def check_left_panel(accessibility_tree: Any) -> float:
    """OSWorld `check_left_panel`: the accessibility tree XML has a `<document-frame name="Slides
    View">` (Impress's slide panel is open). Raises: EvalError when the tree is not XML."""
    root = ET.fromstring(accessibility_tree)
    for frame in root.iter("document-frame"):
        if frame.attrib.get("name") == "Slides View":
            return 1.0
    return 0.0
