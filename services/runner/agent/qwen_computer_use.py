"""Qwen2.5-VL / Qwen3-VL computer use (`qwen_vl_computer_use`): the `computer_use` tool call format.

Request (OSWorld's `mm_agents/qwen25vl_agent.py` layout, Qwen's tool text from `qwen_tool.py`): the system
message declaring `computer_use`; the first user turn carries the screenshot and `Please generate the next
move according to the UI screenshot, instruction and previous actions. Instruction: ... Previous actions:
...`; the last `history_n` screenshots are sent, each followed by the model's reply, and older steps are
summarised as `Step N: <the reply's Action: line>` in that text.

Coordinates (`coordinates` option): `absolute` (Qwen2.5-VL) are pixels of the screenshot as the model sees
it, smart-resized with factor 28 (`qwen-vl-utils` `smart_resize`, min 4 and max 16384 tokens); `relative`
(Qwen3-VL) are on a 0-1000 grid of the screen (the model's grounding convention; OSWorld's Qwen3VLAgent
divides by 999, at most 2 px apart on a 1920-pixel screen).

Actions: `key` (hotkey/press), `type`, `mouse_move`, `left_click`, `left_click_drag`, `right_click`,
`middle_click`, `double_click`, `triple_click`, `scroll`, `hscroll`, `wait` (WAIT), `terminate` (status
`success` DONE, `failure` FAIL), `answer` (DONE with the answer). Deviations from OSWorld's Qwen agents,
which misbehave there: `terminate` with `failure` is FAIL (they answer DONE, so an infeasible task cannot
score); `type` goes through `parser.type_code` (they build `typewrite('<text>')`, a syntax error for text
with a quote); a reply without a valid tool call raises ParseError and is re-sampled (they do not re-sample).
A reply none of whose samples parsed is, as in OSWorld's Qwen agents, no action: the step does nothing and
the episode goes on (`Agent.unparseable`; never a `FAIL`).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, Literal

from pydantic import Field

from common.events import ParsedAction
from services.runner.agent.base import (
    Agent,
    AgentOptions,
    Observation,
    ParsedResponse,
    ParseError,
    image_file_name,
    png_data_url,
    terminal_of,
)
from services.runner.agent.parser import normalize_keys, type_code
from services.runner.agent.qwen_tool import computer_use_function, system_message, tool_calls
from services.runner.agent.smart_resize import smart_resize, to_screen

#: qwen-vl-utils' bounds of an image's tokens (`IMAGE_MIN_TOKEN_NUM`, `IMAGE_MAX_TOKEN_NUM`), a token being
#: factor x factor pixels.
MIN_TOKENS, MAX_TOKENS = 4, 16384
RELATIVE_GRID = 1000
INSTRUCTION_PROMPT = ("\nPlease generate the next move according to the UI screenshot, instruction and previous "
                      "actions.\n\nInstruction: {instruction}\n\nPrevious actions:\n{previous}")


class QwenOptions(AgentOptions):
    """`coordinates`: `absolute` pixels of the smart-resized screenshot (Qwen2.5-VL) or `relative` on a
    0-1000 grid (Qwen3-VL); `history_n`: screenshots (with their replies) sent per request."""

    coordinates: Literal["absolute", "relative"] = Field(
        default="absolute", description="absolute: Qwen2.5-VL resized pixels; relative: Qwen3-VL 0-1000 grid")
    history_n: int = Field(default=4, ge=0, le=50, description="earlier screenshots sent with each request")


def qwen_resized(screen: tuple[int, int], factor: int = 28) -> tuple[int, int]:
    """(width, height) of the screenshot as Qwen-VL sees it (qwen-vl-utils `smart_resize` bounds)."""
    h, w = smart_resize(screen[1], screen[0], factor=factor, min_pixels=MIN_TOKENS * factor * factor,
                        max_pixels=MAX_TOKENS * factor * factor)
    return w, h


class QwenComputerUseAgent(Agent):
    """One episode of a Qwen-VL model answering `computer_use` tool calls (see the module docstring)."""

    name: ClassVar[str] = "qwen_vl_computer_use"
    description: ClassVar[str] = ("Qwen2.5-VL / Qwen3-VL `computer_use` tool calls (<tool_call>{...}</tool_call>), "
                                  "absolute resized or relative 0-1000 coordinates")
    observation_types: ClassVar[tuple[str, ...]] = ("screenshot",)
    action_spaces: ClassVar[tuple[str, ...]] = ("computer_use",)
    options: ClassVar[type[AgentOptions]] = QwenOptions

    def __init__(self, instruction: str, screen: tuple[int, int], options: AgentOptions | None = None,
                 client_password: str = "password") -> None:
        super().__init__(instruction, screen, options, client_password)
        settings = self.settings
        assert isinstance(settings, QwenOptions)
        self.config = settings
        self.images: dict[int, str] = {}  # step -> data URL, only those still sent
        self.replies: list[str] = []
        self.steps = 0

    @property
    def model_screen(self) -> tuple[int, int]:
        """(width, height) of the coordinate space the model answers in."""
        if self.config.coordinates == "relative":
            return RELATIVE_GRID, RELATIVE_GRID
        return qwen_resized(self.screen)

    def _instruction_text(self) -> str:
        first = max(0, self.steps - 1 - self.config.history_n)  # steps whose screenshots are no longer sent
        previous = [f"Step {i + 1}: {summary(self.replies[i])}" for i in range(min(first, len(self.replies)))]
        return INSTRUCTION_PROMPT.format(instruction=self.instruction, previous="\n".join(previous) or "None")

    def _messages(self, image_of: Any) -> list[dict[str, Any]]:
        messages = [system_message(computer_use_function(*self.model_screen))]
        current = self.steps - 1
        first = max(0, current - min(self.config.history_n, len(self.replies)))
        for step in range(first, current + 1):
            content: list[dict[str, Any]] = [{"type": "image_url", "image_url": {"url": image_of(step)}}]
            if step == first:
                content.append({"type": "text", "text": self._instruction_text()})
            messages.append({"role": "user", "content": content})
            if step < current:
                messages.append({"role": "assistant", "content": [{"type": "text", "text": self.replies[step]}]})
        return messages

    def build_messages(self, observation: Observation) -> list[dict[str, Any]]:
        """Add this step's screenshot and return the request messages (images as base64 data URLs)."""
        self.images[self.steps] = png_data_url(observation.screenshot)
        self.images.pop(self.steps - self.config.history_n - 1, None)
        self.steps += 1
        return self._messages(lambda step: self.images[step])

    def record(self, response_text: str, parsed: bool = True) -> None:
        """Remember the model's reply to the latest screenshot (an unparseable one too, as OSWorld's Qwen
        agents keep every response in their history)."""
        self.replies.append(response_text)

    def _point(self, arguments: dict[str, Any], key: str = "coordinate") -> tuple[int, int]:
        value = arguments.get(key)
        if not isinstance(value, list | tuple) or len(value) != 2 or not all(
                isinstance(v, int | float) and not isinstance(v, bool) and (isinstance(v, int) or math.isfinite(v))
                for v in value):
            raise ParseError(f"{key} must be [x, y] numbers, got {value!r:.80}")
        return to_screen(value[0], value[1], self.model_screen, self.screen)

    def _action(self, arguments: dict[str, Any]) -> ParsedAction:  # noqa: C901 (one branch per action)
        action = arguments.get("action")
        head = "import pyautogui\n"
        if action in ("left_click", "right_click", "middle_click", "double_click", "triple_click", "mouse_move"):
            func = {"left_click": "click", "right_click": "rightClick", "middle_click": "middleClick",
                    "double_click": "doubleClick", "triple_click": "tripleClick", "mouse_move": "moveTo"}[action]
            if "coordinate" not in arguments and action != "mouse_move":
                return ParsedAction(action_type=action, code=f"{head}pyautogui.{func}()")
            x, y = self._point(arguments)
            return ParsedAction(action_type=action, inputs={"x": x, "y": y}, code=f"{head}pyautogui.{func}({x}, {y})")
        if action == "left_click_drag":
            x, y = self._point(arguments)
            return ParsedAction(action_type=action, inputs={"x2": x, "y2": y},
                                code=f"{head}pyautogui.dragTo({x}, {y}, duration=0.5, button='left')")
        if action == "key":
            keys = arguments.get("keys")
            if not isinstance(keys, list) or not keys or not all(isinstance(k, str) for k in keys):
                raise ParseError(f"key needs a list of key names, got {keys!r:.80}")
            names = [n for k in keys for n in normalize_keys(k)]
            call = f"hotkey({', '.join(map(repr, names))})" if len(names) > 1 else f"press({names[0]!r})"
            return ParsedAction(action_type=action, inputs={"keys": names}, code=f"{head}pyautogui.{call}")
        if action == "type":
            if not isinstance(arguments.get("text"), str):
                raise ParseError("type needs a string 'text'")
            return ParsedAction(action_type=action, inputs={"content": arguments["text"]},
                                code=type_code(arguments["text"]))
        if action in ("scroll", "hscroll"):
            pixels = arguments.get("pixels")
            if isinstance(pixels, bool) or not isinstance(pixels, int | float) or not math.isfinite(pixels):
                raise ParseError(f"{action} needs a number 'pixels', got {pixels!r:.80}")
            inputs: dict[str, Any] = {"pixels": int(pixels)}
            if "coordinate" in arguments:
                x, y = self._point(arguments)
                head += f"pyautogui.moveTo({x}, {y})\n"
                inputs.update(x=x, y=y)
            return ParsedAction(action_type=action, inputs=inputs, code=f"{head}pyautogui.{action}({int(pixels)})")
        if action == "wait":
            return ParsedAction(action_type="WAIT")
        if action == "terminate":
            status = arguments.get("status", "success")
            if status not in ("success", "failure"):
                raise ParseError(f"terminate status must be success or failure, got {status!r:.80}")
            return ParsedAction(action_type="DONE" if status == "success" else "FAIL", inputs={"status": status})
        if action == "answer":
            return ParsedAction(action_type="DONE", inputs={"content": str(arguments.get("text", ""))})
        raise ParseError(f"unknown computer_use action {action!r:.80}")

    def parse(self, text: str) -> ParsedResponse:
        """The reply's `computer_use` calls as actions, coordinates in screen pixels. Raises: ParseError."""
        thought, calls = tool_calls(text)
        actions = []
        for call in calls:
            if call["name"] != "computer_use":
                raise ParseError(f"unknown tool {call['name']!r:.80} (only computer_use)")
            actions.append(self._action(call["arguments"]))
        return ParsedResponse(thought=thought, actions=actions, terminal=terminal_of(actions))

    def final_messages(self) -> list[dict[str, Any]]:
        """The whole conversation, every screenshot by file name (`image_0000.png`, ...)."""
        messages = [system_message(computer_use_function(*self.model_screen))]
        for step in range(self.steps):
            content: list[dict[str, Any]] = [{"type": "image_url", "image_url": {"url": image_file_name(step)}}]
            if step == 0:
                content.append({"type": "text", "text": INSTRUCTION_PROMPT.format(
                    instruction=self.instruction, previous="None")})
            messages.append({"role": "user", "content": content})
            if step < len(self.replies):
                messages.append({"role": "assistant", "content": [{"type": "text", "text": self.replies[step]}]})
        return messages


def summary(reply: str) -> str:
    """A reply's `Action:` line (its low-level instruction), else its first line (for `Previous actions`)."""
    for line in reply.splitlines():
        if line.strip().lower().startswith("action:"):
            return line.strip()[len("action:"):].strip()
    return reply.strip().splitlines()[0] if reply.strip() else ""
