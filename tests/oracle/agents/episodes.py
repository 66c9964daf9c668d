"""Our agents played over per-step replies the way the step loop plays them (`services/runner/steps.py`):
each reply sampled `samples` times (a scripted policy answers a re-sample with the same reply), the agent's
`unparseable(...)` when none parses, its `last_step(...)` at `max_steps`, the episode over at DONE / FAIL.
Actions in the terms OSWorld's agents return them: `WAIT` / `DONE` / `FAIL`, else `code`."""

from __future__ import annotations

from services.runner.agent.base import Agent, Observation, ParsedResponse, ParseError

SPECIAL = ("WAIT", "DONE", "FAIL")


def kinds(actions: list[str]) -> list[str]:
    """OSWorld's actions of one step with every code string as `code`."""
    return [a if a in SPECIAL else "code" for a in actions]


def play(agent: Agent, screenshot: bytes, replies: list[str], max_steps: int, samples: int = 3) -> list[list[str]]:
    """Each step's actions (`kinds` terms) until the episode ends or `max_steps` steps ran."""
    steps: list[list[str]] = []
    for step, reply in enumerate(replies[:max_steps]):
        agent.build_messages(Observation(screenshot))
        parsed: ParsedResponse | None = None
        error = ""
        for _ in range(samples):
            try:
                parsed = agent.parse(reply)
                break
            except ParseError as exc:
                error = str(exc)
        readable = parsed is not None
        if parsed is None:
            parsed = agent.unparseable(reply, error)
        if step == max_steps - 1:
            parsed = agent.last_step(parsed)
        agent.record(reply, parsed=readable)
        steps.append([a.action_type if a.action_type in SPECIAL else "code" for a in parsed.actions])
        if parsed.terminal is not None:
            break
    return steps
