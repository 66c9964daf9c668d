"""UI-TARS-1.5 agent (`ui_tars_1_5`): builds the chat messages of each step and parses the replies.

Prompt: `prompt.py` (the UI-TARS repository's COMPUTER_USE prompt); grammar and pyautogui code:
`parser.py`; coordinates: absolute pixels of the smart-resized screenshot (`smart_resize.py`, factor 28).
"""

from __future__ import annotations

import io
from typing import Any, ClassVar

from PIL import Image
from pydantic import Field

from services.runner.agent.base import (
    Agent,
    AgentOptions,
    Observation,
    ParsedResponse,
    image_file_name,
    png_data_url,
)
from services.runner.agent.parser import parse_response
from services.runner.agent.prompt import render_prompt
from services.runner.agent.smart_resize import smart_resize

__all__ = ["UITarsAgent", "UITarsOptions", "image_file_name"]


class UITarsOptions(AgentOptions):
    """`history_images`: screenshots sent per request (the newest ones; UI-TARS' reference agent
    keeps 5); `language`: the language of the model's `Thought` part."""

    history_images: int = Field(default=5, ge=1, le=50, description="screenshots sent with each request")
    language: str = Field(default="English", min_length=1, max_length=40,
                          description="the language of the model's Thought part")


class UITarsAgent(Agent):
    """History of one episode: screenshots and replies, at most `history_images` images per request.

    As in the UI-TARS reference agent, older screenshots are dropped while their assistant replies
    stay in the conversation as text. Only the screenshots still sent are kept, each as its base64
    data URL, encoded once (not once per request it is sent in).
    """

    name: ClassVar[str] = "ui_tars_1_5"
    description: ClassVar[str] = ("UI-TARS-1.5 (ByteDance): `Thought:`/`Action:` replies with click(start_box=...), "
                                  "type(content=...), hotkey(key=...), ... in smart-resized pixels")
    observation_types: ClassVar[tuple[str, ...]] = ("screenshot",)
    action_spaces: ClassVar[tuple[str, ...]] = ("ui_tars",)
    options: ClassVar[type[AgentOptions]] = UITarsOptions

    def __init__(self, instruction: str, screen: tuple[int, int], options: AgentOptions | None = None,
                 client_password: str = "password") -> None:
        super().__init__(instruction, screen, options, client_password)
        settings = self.settings
        assert isinstance(settings, UITarsOptions)
        self.history_images = settings.history_images
        self.prompt = render_prompt(instruction, settings.language)
        self.screenshot_count = 0
        self._image_urls: dict[int, str] = {}  # step -> data URL, the last `history_images` screenshots
        self.replies: list[str] = []

    @property
    def resized(self) -> tuple[int, int]:
        """(width, height) of the smart-resized image the model sees."""
        h, w = smart_resize(self.screen[1], self.screen[0])
        return w, h

    def _image_part(self, step: int, inline: bool) -> dict[str, Any]:
        url = self._image_urls[step] if inline else image_file_name(step)
        return {"type": "image_url", "image_url": {"url": url}}

    def _messages(self, inline: bool, first_image: int) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": self.prompt}]}]
        for step in range(self.screenshot_count):
            if step >= first_image:
                messages.append({"role": "user", "content": [self._image_part(step, inline)]})
            if step < len(self.replies):
                messages.append({"role": "assistant", "content": self.replies[step]})
        return messages

    def build_messages(self, observation: Observation) -> list[dict[str, Any]]:
        """Add this step's screenshot and return the request messages (images as base64 data URLs)."""
        screenshot_png = observation.screenshot
        with Image.open(io.BytesIO(screenshot_png)) as image:
            if image.size != self.screen:
                self.screen = (int(image.size[0]), int(image.size[1]))
        step = self.screenshot_count
        self._image_urls[step] = png_data_url(screenshot_png)
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
