"""What the trajectory viewer draws: per step, the screenshot with markers at the action's real
screen coordinates (pixels, as the runner executed them), the typed text and keys, thought and
timings; and the trajectory's manifest, reward and evaluation inputs."""

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
    """One step of the viewer."""

    step: int
    image: str | None
    thought: str
    response: str
    actions: list[dict[str, Any]]
    markers: list[Marker]
    texts: list[str]
    timings: dict[str, Any]
    policy_version: str | None


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


def load_steps(store: ObjectStore, trajectory: str, names: list[str]) -> list[StepView]:
    """The viewer's steps of a stored trajectory, from its `step_NNNN.json` files named in `names`."""
    files = set(store.list(f"{trajectory}/image_"))
    steps = []
    for name in names:
        data = json.loads(store.get(f"{trajectory}/{name}"))
        index = int(data["step"])
        image = f"{trajectory}/image_{index:04d}.png"
        steps.append(StepView(step=index, image=image if image in files else None, thought=data.get("thought", ""),
                              response=data.get("response", ""), actions=data.get("actions", []),
                              markers=markers_of(data.get("actions", [])), texts=texts_of(data.get("actions", [])),
                              timings=data.get("timings", {}), policy_version=data.get("policy_version")))
    return steps
