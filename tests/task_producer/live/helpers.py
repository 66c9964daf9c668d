"""Stream entries and screenshots as the runner publishes them (`common.events.encode_event`), for the
dashboard's tests."""

from __future__ import annotations

import io

from PIL import Image

from common.blob_keys import blob_key
from common.events import EpisodeEvent, ParsedAction, StepEvent, StepTimings, encode_event
from common.status import RolloutStatus


def screenshot(width: int = 1920, height: int = 1080, shade: int = 40) -> bytes:
    """A grey PNG of the given size (pixels)."""
    out = io.BytesIO()
    Image.new("RGB", (width, height), (shade, shade, shade)).save(out, format="PNG")
    return out.getvalue()


def step_entry(run_id: str, task_id: str, index: int, step: int, png: bytes, *, inline: bool = False,
               x: int = 200, y: int = 150, policy_version: str = "v3") -> dict[bytes, bytes]:
    """The stream fields of one step that clicked at (x, y), its screenshot by blob key (or inline)."""
    event = StepEvent(run_id=run_id, task_id=task_id, rollout_index=index, rollout_id=f"{run_id}:{task_id}:{index}",
                      step=step, thought=f"I click step {step}", policy_version=policy_version,
                      actions=[ParsedAction(action_type="click", inputs={"x": x, "y": y}, code="pyautogui.click()")],
                      timings=StepTimings(step_ms=1234.0, model_ms=800.0))
    if inline:
        return encode_event(event, png=png)
    return encode_event(event, png_key=blob_key(png))


def episode_entry(run_id: str, task_id: str, index: int, phase: str,
                  status: RolloutStatus = RolloutStatus.RUNNING, reward: float | None = None) -> dict[bytes, bytes]:
    """The stream fields of an episode's start or end event."""
    return encode_event(EpisodeEvent(run_id=run_id, task_id=task_id, rollout_index=index,
                                     rollout_id=f"{run_id}:{task_id}:{index}", phase=phase,  # type: ignore[arg-type]
                                     status=status, reward=reward))
