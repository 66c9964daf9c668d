"""What the trajectory viewer draws: per step, the screenshot with markers at the action's real
screen coordinates (pixels, as the runner executed them), the typed text and keys, the thought and the
parsed action in one line each, the generated code (folded in the page), timings, token counts and the
mean logprob of the reply; and the trajectory's manifest, reward and evaluation inputs."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from common.objectstore import ObjectStore


class Marker(BaseModel):
    """A shape drawn on a screenshot: `kind` click/double/right/hover/scroll (a point at x, y) or
    drag (a line from x, y to x2, y2); coordinates in screen pixels; `label` is the verb."""

    kind: str
    x: int
    y: int
    x2: int | None = None
    y2: int | None = None
    label: str


class StepView(BaseModel):
    """One step of the viewer. `action_line`: the parsed actions in one line (`click(x=200, y=150)`);
    `code`: their generated pyautogui code; `timings` in ms (`common.events.StepTimings`); token counts of
    the reply; `mean_logprob`: the mean of its tokens' logprobs (nats per token, None when not recorded)."""

    step: int
    image: str | None
    thought: str
    response: str
    actions: list[dict[str, Any]]
    markers: list[Marker]
    texts: list[str]
    timings: dict[str, Any]
    policy_version: str | None
    action_line: str = ""
    code: str = ""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    mean_logprob: float | None = None


_POINT_KINDS = {"click": "click", "left_double": "double", "right_single": "right", "hover": "hover",
                "scroll": "scroll"}


def markers_of(actions: list[dict[str, Any]]) -> list[Marker]:
    """Markers of a step's parsed actions (`ParsedAction.inputs` carry screen pixels)."""
    out = []
    for action in actions:
        verb, inputs = action.get("action_type", ""), action.get("inputs") or {}
        if verb == "drag" and {"x1", "y1", "x2", "y2"} <= inputs.keys():
            out.append(Marker(kind="drag", x=int(inputs["x1"]), y=int(inputs["y1"]), x2=int(inputs["x2"]),
                              y2=int(inputs["y2"]), label=verb))
        elif verb in _POINT_KINDS and {"x", "y"} <= inputs.keys():
            out.append(Marker(kind=_POINT_KINDS[verb], x=int(inputs["x"]), y=int(inputs["y"]), label=verb))
    return out


def texts_of(actions: list[dict[str, Any]]) -> list[str]:
    """What a step typed or pressed, one line per action (`type: ...`, `hotkey: ctrl+s`)."""
    out = []
    for action in actions:
        verb, inputs = action.get("action_type", ""), action.get("inputs") or {}
        if "content" in inputs and verb != "DONE":
            out.append(f"{verb}: {inputs['content']}")
        elif "keys" in inputs:
            out.append(f"{verb}: {'+'.join(inputs['keys'])}")
        elif verb in ("DONE", "FAIL", "WAIT"):
            out.append(verb)
    return out


def action_line(actions: list[dict[str, Any]]) -> str:
    """A step's parsed actions in one line: `verb(name=value, ...)` joined by `; ` (values cut at 40
    characters)."""
    calls = []
    for action in actions:
        parts = []
        for name, value in (action.get("inputs") or {}).items():
            text = repr(value) if isinstance(value, str) else str(value)
            parts.append(f"{name}={text if len(text) <= 40 else text[:39] + '…'}")
        calls.append(f"{action.get('action_type', '?')}({', '.join(parts)})")
    return "; ".join(calls)


def step_view(trajectory: str, data: dict[str, Any], images: set[str]) -> StepView:
    """The viewer's step of a stored `step_NNNN.json` record (`data`); `images`: the trajectory's stored
    `image_` keys."""
    index = int(data["step"])
    image = f"{trajectory}/image_{index:04d}.png"
    actions = data.get("actions", [])
    usage = data.get("usage") or {}
    logprobs = [float(v) for v in data.get("logprobs") or [] if v is not None]
    return StepView(step=index, image=image if image in images else None, thought=data.get("thought", ""),
                    response=data.get("response", ""), actions=actions, markers=markers_of(actions),
                    texts=texts_of(actions), timings=data.get("timings", {}),
                    policy_version=data.get("policy_version"), action_line=action_line(actions),
                    code="\n".join(a.get("code", "") for a in actions if a.get("code")),
                    prompt_tokens=usage.get("prompt_tokens"), completion_tokens=usage.get("completion_tokens"),
                    mean_logprob=sum(logprobs) / len(logprobs) if logprobs else None)


def load_steps(store: ObjectStore, trajectory: str, names: list[str]) -> list[StepView]:
    """The viewer's steps of a stored trajectory, from its `step_NNNN.json` files named in `names`."""
    images = set(store.list(f"{trajectory}/image_"))
    return [step_view(trajectory, json.loads(store.get(f"{trajectory}/{name}")), images) for name in names]


def stored_step_names(store: ObjectStore, trajectory: str) -> list[str]:
    """Names of the `step_NNNN.json` files stored so far (a running rollout's, before its manifest)."""
    return [key.rsplit("/", 1)[1] for key in store.list(f"{trajectory}/step_") if key.endswith(".json")]
