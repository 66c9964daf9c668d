"""`external`: a black-box agent, any program, run by the runner beside the episode instead of the step loop
(services/runner/external.py). It drives the env through the env pod's OSWorld HTTP server itself and calls
the model through a gateway session (services/model_gateway/sessions.py) with an unmodified OpenAI client;
every call of the session and every action the env executed become the trajectory's `cua.step.v1` records.

The run names the program by `agent_options.command`: a name the runner maps to a command line
(`RUNNER_EXTERNAL_AGENTS`, JSON `{"name": "command line"}`): a run cannot make runners execute arbitrary
commands. `timeout_s` bounds the program's run (then it is stopped and the episode is `truncated`).
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from services.runner.agent.base import Agent, AgentOptions, Observation, ParsedResponse


class ExternalOptions(AgentOptions):
    """`command`: the runner's name of the program (`RUNNER_EXTERNAL_AGENTS`); `timeout_s`: at most this many
    seconds of it (s)."""

    command: str = Field(default="", min_length=1, max_length=100,
                         description="name of the program in the runner's RUNNER_EXTERNAL_AGENTS")
    timeout_s: int = Field(default=600, ge=1, le=86400, description="seconds the program may run")


class ExternalAgent(Agent):
    """Catalogue entry of external agents. They run outside the step loop: the step loop's methods raise."""

    name: ClassVar[str] = "external"
    description: ClassVar[str] = ("any program (e.g. Agent S from PyPI) started by the runner with the env's OSWorld "
                                  "server URL and a gateway session's OpenAI base URL; its calls and the env's "
                                  "executed actions are recorded")
    observation_types: ClassVar[tuple[str, ...]] = ("osworld_server",)
    action_spaces: ClassVar[tuple[str, ...]] = ("osworld_execute",)
    options: ClassVar[type[AgentOptions]] = ExternalOptions

    def _outside(self) -> NotImplementedError:
        return NotImplementedError("an external agent runs as its own program, not in the step loop")

    def build_messages(self, observation: Observation) -> list[dict[str, Any]]:
        """Not used (raises NotImplementedError): the program builds its own requests."""
        raise self._outside()

    def record(self, response_text: str, parsed: bool = True) -> None:
        """Not used (raises NotImplementedError)."""
        raise self._outside()

    def parse(self, text: str) -> ParsedResponse:
        """Not used (raises NotImplementedError): the program parses its own replies."""
        raise self._outside()

    def final_messages(self) -> list[dict[str, Any]]:
        """Not used (raises NotImplementedError): the session's records hold the messages."""
        raise self._outside()
