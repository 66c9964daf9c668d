"""Scripts of the scripted policy (mock of a GPU model server): which reply to give at which step.

A script is a JSON file `{"instruction": str, "replies": [str, ...], "agent": str (optional), "model": str
(optional)}` (other keys, e.g. `expected`, are ignored). A request matches the scripts whose instruction
occurs in the text of its system and user messages; a script with a `model` matches only requests naming that
model (the request's `model` field: a run's `model`, so one policy can answer several runs differently, as
`cua-rollout audit` does) and is preferred over scripts without one; a script with an `agent` matches only
requests of that agent, recognised by a text each of the agent's requests carries (`AGENT_MARKERS`), and is
preferred over scripts without one; then the longest instruction wins. The reply index is the step the request
is at: the number of assistant messages in it, or, for agents that send only their last few replies (OSWorld's
prompt agent, Qwen's), where those replies stand in the script: just after the first place the request's
assistant messages occur in a row among the script's replies (a script whose replies repeat such a window is
ambiguous). Past a script's end and without a script, the response is the agent's "done" or "fail" in its own
format.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common.agents import known_agents

EXHAUSTED_REPLY = "Thought: script exhausted\nAction: finished(content='script exhausted')"
NO_SCRIPT_REPLY = "Thought: no script for this task\nAction: call_user()"
_QWEN_TERMINATE = '<tool_call>\n{{"name": "computer_use", "arguments": {{"action": "terminate", "status": "{}"}}}}' \
                  '\n</tool_call>'
#: Per agent: a text every request of it carries (tests/scripted_policy/test_server.py checks them against the
#: runner's agents), and its (script exhausted, no script) replies.
AGENT_MARKERS = {
    "ui_tars_1_5": "You are a GUI agent. You are given a task and your action history",
    "osworld_prompt": "You are asked to complete the following task: ",
    "qwen_vl_computer_use": '"name": "computer_use"',
    # Agent S3 (PyPI `gui-agents`, an external agent: examples/agent_s/): its worker's system prompt
    "agent_s": "You have access to both GUI and code agents.",
}
AGENT_REPLIES = {
    "ui_tars_1_5": (EXHAUSTED_REPLY, NO_SCRIPT_REPLY),
    "osworld_prompt": ("DONE", "FAIL"),
    "qwen_vl_computer_use": (_QWEN_TERMINATE.format("success"), _QWEN_TERMINATE.format("failure")),
    "agent_s": ("```python\nagent.done()\n```", "```python\nagent.fail()\n```"),
}


@dataclass(frozen=True)
class Script:
    """The replies for one task instruction, one per step; `agent` None serves any agent's requests,
    `model` None requests naming any model."""

    instruction: str
    replies: list[str]
    agent: str | None = None
    model: str | None = None


def load_scripts(directory: Path | None) -> list[Script]:
    """Every `*.json` script under `directory` (recursive); other keys (e.g. `expected`) are ignored.

    Raises: ValueError naming a file that is not a valid script (or names an unknown agent).
    """
    if directory is None:
        return []
    scripts = []
    for path in sorted(directory.rglob("*.json")):
        try:
            data = json.loads(path.read_text())
            instruction, replies, agent = data["instruction"], data["replies"], data.get("agent")
            model = data.get("model")
            if not isinstance(instruction, str) or not isinstance(replies, list) \
                    or not all(isinstance(r, str) for r in replies):
                raise TypeError("instruction must be a string and replies a list of strings")
            if model is not None and not isinstance(model, str):
                raise TypeError("model must be a string")
            if agent is not None and agent not in known_agents() and agent not in AGENT_MARKERS:
                known = sorted({*known_agents(), *AGENT_MARKERS})
                raise ValueError(f"unknown agent {agent!r} (known: {', '.join(known)})")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}: invalid script: {exc!r}") from exc
        scripts.append(Script(instruction=instruction, replies=replies, agent=agent, model=model))
    return scripts


def request_text(messages: list[dict[str, Any]]) -> str:
    """All text parts of the system and user messages, joined (content may be a string or a list of parts)."""
    texts = []
    for message in messages:
        if message.get("role") not in ("system", "user"):
            continue
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts += [p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"]
    return "\n".join(texts)


user_text = request_text  # the name before system messages counted


def _text_of(content: Any) -> str:
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return content if isinstance(content, str) else ""


def step_of(script: Script, messages: list[dict[str, Any]]) -> int:
    """The script step a request is at (see the module docstring)."""
    said = [_text_of(m.get("content")).strip() for m in messages if m.get("role") == "assistant"]
    replies = [r.strip() for r in script.replies]
    for start in range(len(replies) - len(said) + 1):
        if replies[start:start + len(said)] == said:
            return start + len(said)
    return len(said)


def agent_of(text: str) -> str | None:
    """The agent whose marker occurs in a request's text, or None."""
    return next((agent for agent, marker in AGENT_MARKERS.items() if marker in text), None)


def choose_reply(scripts: list[Script], messages: list[dict[str, Any]], model: str | None = None) -> str:
    """Reply of the script matching the request (see the module docstring; `model`: the request's), at
    the step given by the number of assistant messages so far."""
    text = request_text(messages)
    agent = agent_of(text)
    exhausted, no_script = AGENT_REPLIES.get(agent or "", AGENT_REPLIES["ui_tars_1_5"])
    matching = [s for s in scripts if s.instruction in text and s.agent in (None, agent) and s.model in (None, model)]
    if not matching:
        return no_script
    script = max(matching, key=lambda s: (s.model is not None, s.agent is not None, len(s.instruction)))
    step = step_of(script, messages)
    return script.replies[step] if step < len(script.replies) else exhausted
