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

Scripts that wait on the screen: a reply may be `{"reply": str, "after_change": true, "when_drawn": [left, top,
right, bottom]}` (either condition or both). `after_change`: given only once the screen changed (`screens.changed`:
more than a pointer, caret or clock) since the screenshot the script's previous reply acted on; `when_drawn`: only
once that box of the newest screenshot (pixels) is drawn (`common.pixels.is_drawn`). Until then the answer is the
script's `hold` reply (default `HOLD_REPLY`, UI-TARS' `wait()`; a script of another agent names its own), which is
no step of the script, at most `MAX_HOLDS` times in a row (and for `after_change` while that screenshot is still
in the request). A blind script's next key then waits for the menu or page it needs on a slow machine, instead of
a fixed number of `wait()`s.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common.agents import known_agents
from common.pixels import Box
from services.scripted_policy import screens

EXHAUSTED_REPLY = "Thought: script exhausted\nAction: finished(content='script exhausted')"
NO_SCRIPT_REPLY = "Thought: no script for this task\nAction: call_user()"
#: The default `hold` reply of scripts that wait on the screen (UI-TARS' format: three 1 s waits, at the runner's
#: default `RUNNER_WAIT_ACTION_S`).
HOLD_REPLY = ("Thought: The screen does not show what I need yet; I wait for it.\n"
              "Action: wait()\n\nwait()\n\nwait()")
#: Holds in a row at most: UI-TARS sends its newest 5 screenshots, so an `after_change` reply's screenshot is gone
#: after 4 anyway.
MAX_HOLDS = 4
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
class WaitCondition:
    """When a script's reply may be given (module docstring): once the screen changed since the previous reply's
    action (`after_change`) and/or once `when_drawn` (left, top, right, bottom pixels) is drawn."""

    after_change: bool = False
    when_drawn: Box | None = None


@dataclass(frozen=True)
class Script:
    """The replies for one task instruction, one per step; `agent` None serves any agent's requests,
    `model` None requests naming any model; `conditions`: reply index -> when that reply may be given, `hold` the
    reply until then (see the module docstring)."""

    instruction: str
    replies: list[str]
    agent: str | None = None
    model: str | None = None
    conditions: Mapping[int, WaitCondition] = field(default_factory=dict)
    hold: str = HOLD_REPLY


def load_scripts(directory: Path | None) -> list[Script]:
    """Every `*.json` script under `directory` (recursive); other keys (e.g. `expected`) are ignored.

    Raises: ValueError naming a file that is not a valid script (or names an unknown agent).
    """
    if directory is None:
        return []
    scripts = []
    for path in sorted(directory.rglob("*.json")):
        try:
            scripts.append(_parse_script(json.loads(path.read_text())))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}: invalid script: {exc!r}") from exc
    return scripts


def _parse_script(data: dict[str, Any]) -> Script:
    instruction, entries, agent = data["instruction"], data["replies"], data.get("agent")
    model, hold = data.get("model"), data.get("hold", HOLD_REPLY)
    if not isinstance(instruction, str) or not isinstance(entries, list):
        raise TypeError("instruction must be a string and replies a list")
    if model is not None and not isinstance(model, str):
        raise TypeError("model must be a string")
    if agent is not None and agent not in known_agents() and agent not in AGENT_MARKERS:
        known = sorted({*known_agents(), *AGENT_MARKERS})
        raise ValueError(f"unknown agent {agent!r} (known: {', '.join(known)})")
    replies, conditions = [], {}
    for index, entry in enumerate(entries):
        if isinstance(entry, str):
            replies.append(entry)
            continue
        if not isinstance(entry, dict) or not isinstance(entry.get("reply"), str) \
                or not set(entry) <= {"reply", "after_change", "when_drawn"}:
            raise TypeError(f"reply {index} must be a string or {{\"reply\": str, \"after_change\": bool, "
                            "\"when_drawn\": [left, top, right, bottom]}")
        replies.append(entry["reply"])
        condition = WaitCondition(after_change=_after_change(index, entry.get("after_change", False)),
                                  when_drawn=_box(index, entry.get("when_drawn")))
        if condition != WaitCondition():
            conditions[index] = condition
    if conditions and not isinstance(hold, str):
        raise TypeError("hold must be a string")
    if conditions and "hold" not in data and agent not in (None, "ui_tars_1_5"):
        raise ValueError(f"replies that wait on the screen need a hold reply in agent {agent!r}'s format")
    if hold in replies:
        raise ValueError("the hold reply must differ from every reply (it is not counted as a step)")
    return Script(instruction=instruction, replies=replies, agent=agent, model=model, conditions=conditions, hold=hold)


def _after_change(index: int, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"reply {index}: after_change must be true or false")
    if value and index == 0:
        raise ValueError("reply 0 cannot wait for a change: no reply acted before it")
    return value


def _box(index: int, value: Any) -> Box | None:
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != 4 or not all(type(v) is int and v >= 0 for v in value) \
            or value[0] >= value[2] or value[1] >= value[3]:
        raise ValueError(f"reply {index}: when_drawn must be [left, top, right, bottom], pixels with left < right "
                         f"and top < bottom, got {value!r}")
    return (value[0], value[1], value[2], value[3])


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
    """The script step a request is at (see the module docstring); `hold` replies are no step."""
    said = [text for text in _said(messages) if text != script.hold.strip()]
    replies = [r.strip() for r in script.replies]
    for start in range(len(replies) - len(said) + 1):
        if replies[start:start + len(said)] == said:
            return start + len(said)
    return len(said)


def _said(messages: list[dict[str, Any]]) -> list[str]:
    return [_text_of(m.get("content")).strip() for m in messages if m.get("role") == "assistant"]


def holds(script: Script, step: int, messages: list[dict[str, Any]]) -> bool:
    """True when the script's reply `step` waits on the screen (`Script.conditions`) and the request's newest
    screenshot does not show what it waits for yet, fewer than `MAX_HOLDS` holds ago."""
    condition = script.conditions.get(step)
    if condition is None:  # most requests: nothing to read
        return False
    hold, said, newest = script.hold.strip(), _said(messages), screens.newest(messages)
    if newest is None or _trailing(said, hold) >= MAX_HOLDS:
        return False
    if condition.when_drawn is not None and not screens.drawn(newest, condition.when_drawn):
        return True
    if condition.after_change:
        acted = [i for i, text in enumerate(said) if text != hold]
        before = screens.acted_on(messages, acted[-1]) if acted else None
        return before is not None and not screens.changed(before, newest)
    return False


def _trailing(said: list[str], hold: str) -> int:
    """How many of the last replies in a row are `hold`."""
    count = 0
    for text in reversed(said):
        if text != hold:
            break
        count += 1
    return count


def agent_of(text: str) -> str | None:
    """The agent whose marker occurs in a request's text, or None."""
    return next((agent for agent, marker in AGENT_MARKERS.items() if marker in text), None)


def choose_reply(scripts: list[Script], messages: list[dict[str, Any]], model: str | None = None) -> str:
    """Reply of the script matching the request (see the module docstring; `model`: the request's), at
    the step given by the number of assistant messages so far (holds not counted), or its `hold` reply while
    that step waits on the screen (`holds`)."""
    text = request_text(messages)
    agent = agent_of(text)
    exhausted, no_script = AGENT_REPLIES.get(agent or "", AGENT_REPLIES["ui_tars_1_5"])
    matching = [s for s in scripts if s.instruction in text and s.agent in (None, agent) and s.model in (None, model)]
    if not matching:
        return no_script
    script = max(matching, key=lambda s: (s.model is not None, s.agent is not None, len(s.instruction)))
    step = step_of(script, messages)
    if holds(script, step, messages):
        return script.hold
    return script.replies[step] if step < len(script.replies) else exhausted
