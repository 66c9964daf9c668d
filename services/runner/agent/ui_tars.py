"""UI-TARS-1.5 agent state: builds the chat messages of each step and parses the replies."""

from __future__ import annotations

import base64
import io
from typing import Any

from PIL import Image

from services.runner.agent.parser import ParsedResponse, parse_response
from services.runner.agent.prompt import render_prompt
from services.runner.agent.smart_resize import smart_resize


def image_file_name(step: int) -> str:
    """Stored screenshot name of a step: `image_{step:04d}.png` (DART layout)."""
    return f"image_{step:04d}.png"


class UITarsAgent:
    """History of one episode: screenshots and replies, at most `history_images` images per request.

    As in the UI-TARS reference agent, older screenshots are dropped while their assistant replies
    stay in the conversation as text. `screen` is (width, height) in pixels. Only the screenshots still sent are
    kept, each as its base64 data URL, encoded once (not once per request it is sent in).
    """

    def __init__(self, instruction: str, screen: tuple[int, int], history_images: int = 5,
                 language: str = "English") -> None:
        self.instruction = instruction
        self.screen = screen
        self.history_images = history_images
        self.prompt = render_prompt(instruction, language)
        self.screenshot_count = 0
        self._image_urls: dict[int, str] = {}  # step -> data URL, the last `history_images` screenshots
        self.replies: list[str] = []

    @property
    def resized(self) -> tuple[int, int]:
        """(width, height) of the smart-resized image the model sees."""
        h, w = smart_resize(self.screen[1], self.screen[0])
        return w, h

    def _image_part(self, step: int, inline: bool) -> dict[str, Any]:
        if inline:
            url = self._image_urls[step]
        else:
            url = image_file_name(step)
        return {"type": "image_url", "image_url": {"url": url}}

    def _messages(self, inline: bool, first_image: int) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": self.prompt}]}]
        for step in range(self.screenshot_count):
            if step >= first_image:
                messages.append({"role": "user", "content": [self._image_part(step, inline)]})
            if step < len(self.replies):
                messages.append({"role": "assistant", "content": self.replies[step]})
        return messages

    def build_messages(self, screenshot_png: bytes) -> list[dict[str, Any]]:
        """Add this step's screenshot and return the request messages (images as base64 data URLs)."""
        with Image.open(io.BytesIO(screenshot_png)) as image:
            if image.size != self.screen:
                self.screen = (int(image.size[0]), int(image.size[1]))
        step = self.screenshot_count
        self._image_urls[step] = "data:image/png;base64," + base64.b64encode(screenshot_png).decode()
        self._image_urls.pop(step - self.history_images, None)  # no longer sent
        self.screenshot_count = step + 1
        return self._messages(inline=True, first_image=max(0, self.screenshot_count - self.history_images))

    def record(self, response_text: str) -> None:
        """Remember the model's reply to the latest screenshot."""
        self.replies.append(response_text)

    def parse(self, text: str) -> ParsedResponse:
        """Parse a reply with coordinates mapped from the resized image to the screen. Raises: ParseError."""
        return parse_response(text, screen=self.screen, resized=self.resized)

    def final_messages(self) -> list[dict[str, Any]]:
        """The whole conversation, every screenshot referenced by file name (`image_0000.png`, ...)."""
        return self._messages(inline=False, first_image=0)
