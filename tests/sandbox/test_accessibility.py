"""`GET /accessibility` on a real desktop: a GTK app's widget tree from AT-SPI in OSWorld's XML
format, and frame-only entries for windows without AT-SPI (xterm)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator

import pytest

from common.env_client import DesktopEnvClient
from common.polling import wait_until
from services.desktop_env.accessibility import NS
from services.desktop_env.launcher import LocalEnvLauncher


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DesktopEnvClient]:
    with LocalEnvLauncher(count=1, root_dir=tmp_path_factory.mktemp("a11y")) as launcher:
        client = DesktopEnvClient(launcher.urls[0])
        yield client
        client.close()


def _tree(env: DesktopEnvClient) -> ET.Element:
    return ET.fromstring(env.accessibility())


def test_gtk_app_widgets_come_from_at_spi(env: DesktopEnvClient) -> None:
    env.reset()
    env.upload_file("/home/user/Desktop/notes.txt", b"hello accessible world\n")
    env.launch(["mousepad", "/home/user/Desktop/notes.txt"])
    env.launch(["xterm", "-T", "Plain X terminal"])

    def mousepad_text() -> list[ET.Element]:  # a list: an element without children is falsy
        return [node for node in _tree(env).iterfind(".//application[@name='mousepad']//text")
                if (node.text or "").startswith("hello accessible world")]

    [text] = wait_until(mousepad_text, 30, "mousepad's text in the accessibility tree")
    assert text.get(f"{{{NS['st']}}}editable") == "true" and text.get(f"{{{NS['st']}}}showing") == "true"
    x, y = (int(v) for v in text.get(f"{{{NS['cp']}}}screencoord", "").strip("()").split(","))
    width, height = (int(v) for v in text.get(f"{{{NS['cp']}}}size", "").strip("()").split(","))
    assert 0 <= x < 1920 and 0 <= y < 1080 and width > 100 and height > 100

    tree = _tree(env)
    assert tree.tag == "desktop-frame"
    app = tree.find("application[@name='mousepad']")
    assert app is not None
    frame = app.find("frame")
    assert frame is not None and "notes.txt" in frame.get("name", "")
    buttons = app.findall(".//push-button")
    assert buttons and all(b.get(f"{{{NS['attr']}}}toolkit") == "gtk" for b in buttons)
    menu_names = [m.get("name", "").strip() for m in app.iterfind(".//menu")]
    assert "File" in menu_names and "Edit" in menu_names
    file_menu = next(m for m in app.iterfind(".//menu") if m.get("name") == "File")
    assert file_menu.get(f"{{{NS['act']}}}click_desc")  # action fields, as OSWorld's server emits them

    # xterm has no AT-SPI: its window still appears, as a frame of its WM class
    wait_until(lambda: _tree(env).find(".//frame[@name='Plain X terminal']") is not None, 20, "the xterm frame")
    env.reset()
