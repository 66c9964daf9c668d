"""The agent interface of the step loop (SPEC section 4, "Agents are pluggable").

An agent turns observations into model requests and replies into actions. The step loop
(`services/runner/steps.py`) knows only this interface: each step it gives the agent an `Observation`
of the kinds the agent asked for (`needs_accessibility_tree`), sends `build_messages(...)` to the
gateway, and runs what `parse(reply)` returns: actions with pyautogui code, `WAIT`, or the end of the
episode (`DONE` / `FAIL`). A reply that `parse` rejects (`ParseError`) is re-sampled; when every
sample is rejected, the step runs what `unparseable(...)` returns: what OSWorld's own agent of that
kind does with a reply it cannot read (no action and the episode goes on, by default; UI-TARS ends it
as `DONE`). It is never the model's `FAIL`: infeasible credit is only for a `FAIL` the model wrote
(docs/scoring.md). At the rollout's last step (`max_steps`) the step runs `last_step(parsed)`.

Each agent is one module in this package, registered in `registry.py`, with a pydantic model of its
options (run field `agent_options`); the producer validates runs against `common/agent_catalogue.json`,
written from the registry.
"""

from __future__ import annotations

import base64
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from common.events import ParsedAction

#: Observation types an agent can ask for (OSWorld's `observation_type` names).
OBSERVATION_TYPES = ("screenshot", "a11y_tree", "screenshot_a11y_tree", "som")


class ParseError(ValueError):
    """The reply cannot be turned into actions; the message says what is wrong."""


@dataclass
class ParsedResponse:
    """A parsed reply: the thought, the actions (with code), and DONE/FAIL when the episode ends."""

    thought: str
    actions: list[ParsedAction] = field(default_factory=list)
    terminal: Literal["DONE", "FAIL"] | None = None


def terminal_of(actions: list[ParsedAction]) -> Literal["DONE", "FAIL"] | None:
    """`DONE` or `FAIL` when one of `actions` ends the episode (the last such one wins), else None."""
    terminal: Literal["DONE", "FAIL"] | None = None
    for action in actions:
        if action.action_type == "DONE":
            terminal = "DONE"
        elif action.action_type == "FAIL":
            terminal = "FAIL"
    return terminal


@dataclass(frozen=True)
class Observation:
    """What the env shows at one step: the screenshot (PNG bytes; always taken, the step record keeps
    it) and, for agents that ask for it, the accessibility tree (OSWorld's AT-SPI XML, `GET
    /accessibility`)."""

    screenshot: bytes
    accessibility_tree: str | None = None


def png_data_url(png: bytes) -> str:
    """`data:image/png;base64,...` of PNG bytes (how images go into an OpenAI chat request)."""
    return "data:image/png;base64," + base64.b64encode(png).decode()


def image_file_name(step: int) -> str:
    """Stored screenshot name of a step: `image_{step:04d}.png` (DART layout)."""
    return f"image_{step:04d}.png"


class AgentOptions(BaseModel):
    """Options of an agent (run field `agent_options`); agents without options use this empty model.

    Subclasses declare fields with defaults; `Literal` fields become enums in the catalogue, `ge`/`le`
    bounds its minimum and maximum. `invalid_combinations` lists option values that cannot go
    together (each a dict of option -> value), checked by `check_combinations`.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    invalid_combinations: ClassVar[tuple[dict[str, Any], ...]] = ()

    def check_combinations(self) -> None:
        """Raises: ValueError naming the options when they form one of `invalid_combinations`."""
        for combination in self.invalid_combinations:
            if all(getattr(self, key) == value for key, value in combination.items()):
                described = ", ".join(f"{key}={value!r}" for key, value in combination.items())
                raise ValueError(f"agent options {described} cannot be used together")


class Agent(ABC):
    """One episode of an agent: its conversation history, request building and reply parsing.

    Class attributes describe the agent for `cua-rollout agents` and the catalogue: `name` (the run's
    `agent`), `description`, `observation_types` it can use, `action_spaces` it answers in, `options`
    (its `AgentOptions` model; an instance's own values are `settings`, the model's defaults when
    None). `screen` is (width, height) in pixels; `client_password` is the env user's password
    (OSWorld's prompts tell the model).
    """

    name: ClassVar[str]
    description: ClassVar[str]
    observation_types: ClassVar[tuple[str, ...]]
    action_spaces: ClassVar[tuple[str, ...]]
    options: ClassVar[type[AgentOptions]] = AgentOptions

    def __init__(self, instruction: str, screen: tuple[int, int], options: AgentOptions | None = None,
                 client_password: str = "password") -> None:
        self.instruction = instruction
        self.screen = screen
        self.client_password = client_password
        self.settings = options if options is not None else self.options()

    @property
    def needs_accessibility_tree(self) -> bool:
        """Whether each step's `Observation` must carry the accessibility tree."""
        return False

    @abstractmethod
    def build_messages(self, observation: Observation) -> list[dict[str, Any]]:
        """Add this step's observation to the history and return the chat request's messages."""

    @abstractmethod
    def record(self, response_text: str, parsed: bool = True) -> None:
        """Remember the model's reply to the latest observation; `parsed` False for a reply none of whose
        samples parsed (the step ran `unparseable(...)`)."""

    @abstractmethod
    def parse(self, text: str) -> ParsedResponse:
        """The actions of a reply, coordinates in screen pixels. Raises: ParseError, and nothing else."""

    def unparseable(self, text: str, error: str) -> ParsedResponse:
        """What this step runs when no sample of the reply parsed (`text`: the last one, `error`: why it
        was rejected). Default, as OSWorld's `PromptAgent` and Qwen agents (`mm_agents/agent.py`,
        `qwen25vl_agent.py`, `qwen3vl_agent.py`) do: no action this step, and the episode goes on.
        Never the model's `FAIL` (an infeasible task would pay for output nobody could read)."""
        return ParsedResponse(thought="", actions=[])

    def last_step(self, parsed: ParsedResponse) -> ParsedResponse:
        """What the rollout's last step (`max_steps`) runs instead of `parsed`. Default: `parsed` itself (the
        rollout then ends `truncated` unless the reply ended it; OSWorld's harness evaluates then too)."""
        return parsed

    @abstractmethod
    def final_messages(self) -> list[dict[str, Any]]:
        """The whole conversation, every image referenced by file name (`image_0000.png`, ...)."""
