"""The catalogue of the runner's agents (`agent_catalogue.json` beside this module): names, observation types,
action spaces and options, and the check of a run's `agent` and `agent_options` against it.

The file is written from the runner's registry (`python -m services.runner.agent.catalogue`; a test keeps the
two equal), so the producer and the CLI validate runs without importing the runner. Option specs use a
subset of JSON Schema: `type` (`integer`, `number`, `string`, `boolean`), `enum`, `minimum`, `maximum`,
`minLength`, `maxLength`, `default`, `description`; `invalid_combinations` lists option values that cannot
go together.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path
from typing import Any

CATALOGUE = Path(__file__).with_name("agent_catalogue.json")
_TYPES: dict[str, tuple[type, ...]] = {"integer": (int,), "number": (int, float), "string": (str,), "boolean": (bool,)}


@functools.cache
def agent_catalogue() -> dict[str, dict[str, Any]]:
    """Agent name -> its catalogue entry (`name`, `description`, `observation_types`, `action_spaces`,
    `options`, `invalid_combinations`), in registry order. Raises: OSError, ValueError when the file is
    missing or malformed."""
    entries = json.loads(CATALOGUE.read_text())["agents"]
    return {entry["name"]: entry for entry in entries}


def known_agents() -> list[str]:
    """The agents' names, in registry order."""
    return list(agent_catalogue())


def _check_value(agent: str, name: str, spec: dict[str, Any], value: Any) -> None:
    kind = spec.get("type", "string")
    if isinstance(value, bool) != (kind == "boolean") or not isinstance(value, _TYPES[kind]):
        article = "an" if kind == "integer" else "a"
        raise ValueError(f"agent_options.{name} of {agent!r} must be {article} {kind}, got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"agent_options.{name} of {agent!r} must be finite, got {value!r}")
    if "enum" in spec and value not in spec["enum"]:
        raise ValueError(f"agent_options.{name} of {agent!r} must be one of {', '.join(map(str, spec['enum']))}; "
                         f"got {value!r}")
    if "minimum" in spec and value < spec["minimum"] or "maximum" in spec and value > spec["maximum"]:
        raise ValueError(f"agent_options.{name} of {agent!r} must be within [{spec.get('minimum', '-inf')}, "
                         f"{spec.get('maximum', 'inf')}], got {value!r}")
    if isinstance(value, str) and not spec.get("minLength", 0) <= len(value) <= spec.get("maxLength", math.inf):
        raise ValueError(f"agent_options.{name} of {agent!r} must have {spec.get('minLength', 0)} to "
                         f"{spec.get('maxLength', 'any')} characters, got {len(value)}")


def check_agent_name(agent: str) -> str:
    """`agent` when the catalogue has it. Raises: ValueError naming the known agents."""
    if agent not in agent_catalogue():
        raise ValueError(f"unknown agent {agent!r} (known: {', '.join(agent_catalogue())}; `cua-rollout agents`)")
    return agent


def check_agent(agent: str, options: dict[str, Any]) -> dict[str, Any]:
    """The run's agent options, checked against the catalogue and completed with the defaults.

    Raises: ValueError naming the problem: an unknown agent (with the known ones), an unknown option
    (with the agent's options), a value of the wrong type or out of range, or an invalid combination.
    """
    catalogue = agent_catalogue()
    check_agent_name(agent)
    specs: dict[str, dict[str, Any]] = catalogue[agent]["options"]
    unknown = sorted(set(options) - set(specs))
    if unknown:
        raise ValueError(f"agent {agent!r} has no option {', '.join(map(repr, unknown))} "
                         f"(its options: {', '.join(specs) or 'none'})")
    for name, value in options.items():
        _check_value(agent, name, specs[name], value)
    values = {name: options.get(name, spec.get("default")) for name, spec in specs.items()}
    for combination in catalogue[agent].get("invalid_combinations", []):
        if all(values.get(key) == value for key, value in combination.items()):
            described = ", ".join(f"{key}={value!r}" for key, value in combination.items())
            raise ValueError(f"agent {agent!r}: options {described} cannot be used together")
    return values
