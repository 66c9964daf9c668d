"""UI-TARS-1.5 agent (`ui_tars_1_5`): builds the chat messages of each step and parses the replies.

Prompt: `prompt.py` (the UI-TARS repository's COMPUTER_USE prompt); grammar and pyautogui code:
`parser.py`; coordinates: absolute pixels of the smart-resized screenshot (`smart_resize.py`, factor 28).

Ends of an episode as OSWorld's UI-TARS agents (`mm_agents/uitars15_v1.py`, `uitars_agent.py` of PyPI
`desktop-env`) end it: a reply none of whose samples parses is `DONE` (theirs: `Parsing action error` /
`client error` -> `["DONE"]`), never `FAIL`. At `max_steps` OSWorld's harness turns the last step into
`FAIL` (`Default to FAIL if exceed max steps`), which pays an infeasible task for stalling; here only with
the option `fail_at_max_steps` (leaderboard parity, docs/scoring.md).
"""

from __future__ import annotations

import io
from typing import Any, ClassVar

from PIL import Image
from pydantic import Field

from common.events import ParsedAction
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
    keeps 5); `language`: the language of the model's `Thought` part; `fail_at_max_steps`: the last step
    (`max_steps`) runs `FAIL` instead of the reply's actions unless the reply ends the episode or waits, as
    OSWorld's UI-TARS harness does (off by default: it pays infeasible tasks for running out of steps)."""

    history_images: int = Field(default=5, ge=1, le=50, description="screenshots sent with each request")
    language: str = Field(default="English", min_length=1, max_length=40,
                          description="the language of the model's Thought part")
    fail_at_max_steps: bool = Field(
        default=False, description="OSWorld's UI-TARS harness: the last step (max_steps) becomes FAIL (leaderboard "
                                   "parity; pays infeasible tasks for running out of steps)")


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

    def record(self, response_text: str, parsed: bool = True) -> None:
        """Remember the model's reply to the latest screenshot."""
        self.replies.append(response_text)

    def parse(self, text: str) -> ParsedResponse:
        """Parse a reply with coordinates mapped from the resized image to the screen. Raises: ParseError."""
        return parse_response(text, screen=self.screen, resized=self.resized)

    def unparseable(self, text: str, error: str) -> ParsedResponse:
        """`DONE`, as OSWorld's UI-TARS agents answer a reply they cannot parse (`["DONE"]`): the episode ends
        and is scored (0 on an infeasible task), its status `parse_error`."""
        return ParsedResponse(thought="", actions=[ParsedAction(action_type="DONE", inputs={"unparseable": error})],
                              terminal="DONE")

    def last_step(self, parsed: ParsedResponse) -> ParsedResponse:
        """With `fail_at_max_steps`: `FAIL` in place of the reply's actions (they are not run), unless the reply
        ends the episode or waits (OSWorld's `UITARSAgent.predict` returns those before its max-steps check,
        where `max_trajectory_length` is the run's `max_steps`). Without it: `parsed`."""
        settings = self.settings
        assert isinstance(settings, UITarsOptions)
        if not settings.fail_at_max_steps or parsed.terminal is not None \
                or any(a.action_type == "WAIT" for a in parsed.actions):
            return parsed
        return ParsedResponse(thought=parsed.thought, terminal="FAIL",
                              actions=[ParsedAction(action_type="FAIL", inputs={"max_steps": True})])

    def final_messages(self) -> list[dict[str, Any]]:
        """The whole conversation, every screenshot referenced by file name (`image_0000.png`, ...)."""
        return self._messages(inline=False, first_image=0)
