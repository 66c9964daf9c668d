"""OSWorld's prompt agent (`osworld_prompt`): any OpenAI-compatible VLM (or LLM, with `a11y_tree`) driven
by OSWorld's baseline prompts, answering `pyautogui` code or `computer_13` JSON actions.

Our implementation of `PromptAgent.predict` (OSWorld `mm_agents/agent.py`): a system message (the prompt of
the observation type and action space, `osworld_prompts.py`, then `You are asked to complete the following
task: ...`), the last `max_trajectory_length` observations each followed by the model's reply (or `No valid
action` for an empty one), then the current observation: the screenshot, the linearised and
trimmed accessibility tree (`a11y.py`), both, or the set-of-marks screenshot with its table. Checked
against `PromptAgent` itself, message by message, in `tests/oracle/agents/test_osworld_prompt.py`.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from services.runner.agent import a11y
from services.runner.agent.base import (
    Agent,
    AgentOptions,
    Observation,
    ParsedResponse,
    image_file_name,
    png_data_url,
    terminal_of,
)
from services.runner.agent.osworld_actions import computer_13_actions, fenced_blocks, pyautogui_actions
from services.runner.agent.osworld_prompts import system_prompt

QUESTION = "What's the next step that you will do to help with the task?"
NO_VALID_ACTION = "No valid action"


class OSWorldPromptOptions(AgentOptions):
    """OSWorld's `PromptAgent` settings: `action_space` (`pyautogui` code or `computer_13` JSON
    actions), `observation_type`, `max_trajectory_length` (earlier steps sent with each request) and
    `a11y_tree_max_tokens` (GPT-4 tokens of the linearised tree kept)."""

    action_space: Literal["pyautogui", "computer_13"] = Field(
        default="pyautogui", description="pyautogui code blocks, or computer_13 JSON actions")
    observation_type: Literal["screenshot", "a11y_tree", "screenshot_a11y_tree", "som"] = Field(
        default="screenshot", description="what the model is shown each step")
    max_trajectory_length: int = Field(default=3, ge=0, le=50, description="earlier steps sent with each request")
    a11y_tree_max_tokens: int = Field(default=10000, ge=1, le=1_000_000,
                                      description="GPT-4 tokens of the accessibility tree kept")

    invalid_combinations: ClassVar[tuple[dict[str, Any], ...]] = (
        {"action_space": "computer_13", "observation_type": "som"},)


class OSWorldPromptAgent(Agent):
    """One episode of OSWorld's prompt agent (see the module docstring)."""

    name: ClassVar[str] = "osworld_prompt"
    description: ClassVar[str] = ("OSWorld's baseline prompt agent for any OpenAI-compatible model: "
                                  "pyautogui code or computer_13 JSON actions, WAIT/DONE/FAIL")
    observation_types: ClassVar[tuple[str, ...]] = ("screenshot", "a11y_tree", "screenshot_a11y_tree", "som")
    action_spaces: ClassVar[tuple[str, ...]] = ("pyautogui", "computer_13")
    options: ClassVar[type[AgentOptions]] = OSWorldPromptOptions

    def __init__(self, instruction: str, screen: tuple[int, int], options: AgentOptions | None = None,
                 client_password: str = "password") -> None:
        super().__init__(instruction, screen, options, client_password)
        settings = self.settings
        assert isinstance(settings, OSWorldPromptOptions)
        self.config = settings
        self.system = system_prompt(settings.observation_type, settings.action_space, client_password) \
            + f"\nYou are asked to complete the following task: {instruction}"
        # per step: (image data URL or None, linearised tree or None); only the last ones are sent
        self.observations: list[tuple[str | None, str | None]] = []
        self.replies: list[str] = []
        self._boxes: list[list[int]] | None = None  # set-of-marks boxes of the current step

    @property
    def needs_accessibility_tree(self) -> bool:
        """Every observation type but `screenshot` shows the tree (`som` draws from it)."""
        return self.config.observation_type != "screenshot"

    def _user_text(self, tree: str | None, current: bool) -> str:
        kind = self.config.observation_type
        if kind == "screenshot":
            return f"Given the screenshot as below. {QUESTION}"
        if kind == "a11y_tree":
            return f"Given the info from accessibility tree as below:\n{tree}\n{QUESTION}"
        if kind == "screenshot_a11y_tree":
            return f"Given the screenshot and info from accessibility tree as below:\n{tree}\n{QUESTION}"
        if current:  # som: the table is shown only with the current screenshot
            return f"Given the tagged screenshot and info from accessibility tree as below:\n{tree}\n{QUESTION}"
        return f"Given the tagged screenshot as below. {QUESTION}"

    def _user(self, image: str | None, tree: str | None, current: bool) -> dict[str, Any]:
        content: list[dict[str, Any]] = [{"type": "text", "text": self._user_text(tree, current)}]
        if image is not None:
            content.append({"type": "image_url", "image_url": {"url": image, "detail": "high"}})
        return {"role": "user", "content": content}

    def _assistant(self, step: int) -> dict[str, Any]:
        reply = self.replies[step]
        return {"role": "assistant",
                "content": [{"type": "text", "text": reply.strip() if reply else NO_VALID_ACTION}]}

    def build_messages(self, observation: Observation) -> list[dict[str, Any]]:
        """Add this step's observation and return the request messages (images as base64 data URLs).
        Raises: ValueError when the accessibility tree the observation type needs is missing or not XML."""
        kind = self.config.observation_type
        tree_xml = observation.accessibility_tree
        if kind != "screenshot" and tree_xml is None:
            raise ValueError(f"observation type {kind!r} needs the accessibility tree")
        image: str | None = None
        tree: str | None = None
        self._boxes = None
        if kind == "som":
            assert tree_xml is not None
            marks = a11y.tag_screenshot(observation.screenshot, tree_xml)
            image, tree, self._boxes = png_data_url(marks.png), marks.table, marks.boxes
        else:
            if kind in ("screenshot", "screenshot_a11y_tree"):
                image = png_data_url(observation.screenshot)
            if kind != "screenshot":
                assert tree_xml is not None
                tree = a11y.linearize(tree_xml)
        if tree:
            tree = a11y.trim(tree, self.config.a11y_tree_max_tokens)
        messages = [{"role": "system", "content": [{"type": "text", "text": self.system}]}]
        window = self.config.max_trajectory_length
        first = max(0, len(self.observations) - window) if window else len(self.observations)
        for step in range(first, len(self.observations)):
            old_image, old_tree = self.observations[step]
            messages += [self._user(old_image, old_tree, current=False), self._assistant(step)]
        for step in range(len(self.observations) - window):  # no longer sent: drop the images
            if self.observations[step][0] is not None:
                self.observations[step] = (None, self.observations[step][1])
        self.observations.append((image, tree))
        messages.append(self._user(image, tree, current=True))
        return messages

    def record(self, response_text: str, parsed: bool = True) -> None:
        """Remember the reply to the latest observation (an empty one shows as `No valid action`). A reply
        that did not parse is kept as OSWorld's `PromptAgent` keeps it: as written (`pyautogui`: its
        parser finds no code and raises nothing), or empty, shown as `No valid action`, for a `computer_13`
        reply with no fenced block that is not JSON either (where `parse_actions_from_string` raises)."""
        if not parsed and self.config.action_space == "computer_13" and not fenced_blocks(response_text):
            response_text = ""
        self.replies.append(response_text)

    def parse(self, text: str) -> ParsedResponse:
        """The reply's actions (`osworld_actions.py`). Raises: ParseError."""
        if self.config.action_space == "computer_13":
            actions = computer_13_actions(text)
        else:
            actions = pyautogui_actions(text, self._boxes if self.config.observation_type == "som" else None)
        return ParsedResponse(thought=text.strip(), actions=actions, terminal=terminal_of(actions))

    def final_messages(self) -> list[dict[str, Any]]:
        """The whole conversation (every step, not only the last `max_trajectory_length`), screenshots by
        file name (`image_0000.png`: the raw screenshot, also for `som`)."""
        messages: list[dict[str, Any]] = [{"role": "system", "content": [{"type": "text", "text": self.system}]}]
        for step, (_, tree) in enumerate(self.observations):
            image = image_file_name(step) if self.config.observation_type != "a11y_tree" else None
            messages.append(self._user(image, tree, current=self.config.observation_type != "som"))
            if step < len(self.replies):
                messages.append(self._assistant(step))
        return messages
