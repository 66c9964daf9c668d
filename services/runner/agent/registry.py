"""The registry of built-in agents: name -> `Agent` class, and each agent's catalogue entry.

The catalogue (`describe()`) is what `cua-rollout agents` lists and what the producer validates runs
against, from `common/agent_catalogue.json` (written by `python -m services.runner.agent.catalogue`;
`tests/runner/agent/test_registry.py` keeps the file equal to this registry).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from services.runner.agent.base import Agent, AgentOptions
from services.runner.agent.external import ExternalAgent
from services.runner.agent.osworld_prompt import OSWorldPromptAgent
from services.runner.agent.qwen_computer_use import QwenComputerUseAgent
from services.runner.agent.ui_tars import UITarsAgent

AGENTS: dict[str, type[Agent]] = {cls.name: cls for cls in (UITarsAgent, OSWorldPromptAgent, QwenComputerUseAgent,
                                                             ExternalAgent)}

#: JSON-schema keywords of an option kept in the catalogue (a subset `common.agents` checks).
_OPTION_KEYS = ("type", "enum", "minimum", "maximum", "minLength", "maxLength", "default", "description")


class UnknownAgent(ValueError):
    """A run names an agent this runner does not have (the message lists the known ones)."""


def agent_class(name: str) -> type[Agent]:
    """The `Agent` class registered as `name`. Raises: UnknownAgent naming the known agents."""
    try:
        return AGENTS[name]
    except KeyError:
        raise UnknownAgent(f"unknown agent {name!r} (known: {', '.join(sorted(AGENTS))})") from None


def agent_options(name: str, values: dict[str, Any]) -> AgentOptions:
    """The validated options of agent `name` from a run's `agent_options`. Raises: UnknownAgent, or
    ValueError naming the bad option (unknown, wrong type or value, or an invalid combination)."""
    model = agent_class(name).options
    try:
        options = model.model_validate(values)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise ValueError(f"agent_options of {name!r}: {problems}") from None
    options.check_combinations()
    return options


def make_agent(name: str, values: dict[str, Any], instruction: str, screen: tuple[int, int],
               client_password: str) -> Agent:
    """A new episode of agent `name` with the run's option values. Raises: UnknownAgent, ValueError."""
    return agent_class(name)(instruction, screen, agent_options(name, values), client_password)


def _option_schema(model: type[AgentOptions]) -> dict[str, dict[str, Any]]:
    properties = model.model_json_schema().get("properties", {})
    return {name: {key: spec[key] for key in _OPTION_KEYS if key in spec} for name, spec in properties.items()}


def describe() -> list[dict[str, Any]]:
    """Every agent's catalogue entry: name, description, observation types, action spaces, options
    (JSON-schema subset: type, enum, minimum, maximum, minLength, maxLength, default, description)
    and the option combinations that are invalid."""
    return [{
        "name": cls.name,
        "description": cls.description,
        "observation_types": list(cls.observation_types),
        "action_spaces": list(cls.action_spaces),
        "options": _option_schema(cls.options),
        "invalid_combinations": [dict(c) for c in cls.options.invalid_combinations],
    } for cls in AGENTS.values()]
