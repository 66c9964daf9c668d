"""Runs in the agent oracle process: OSWorld's UI-TARS and Qwen agents (`mm_agents` of PyPI `desktop-env`)
played over scripted replies, the way `lib_run_single.run_single_example` drives them, to compare how they
end an episode: a reply they cannot parse, and the last step (`max_steps`).

The model calls are answered from the script: UI-TARS' OpenAI client is replaced before `UITARSAgent` makes
it (every try of its re-sampling loop takes the next reply), the Qwen agents' `call_llm` is replaced.
desktop-env 1.0.2 does not ship `mm_agents/utils/qwen_vl_utils.py`, which the Qwen agents import for
`smart_resize`: PyPI `qwen-vl-utils`' own `smart_resize` (the code OSWorld copied) stands in for it, with the
`factor` default of 28 of OSWorld's copy (qwen-vl-utils 0.0.14 makes it a required argument).
"""

from __future__ import annotations

import base64
import os
import sys
import tempfile
import types
from types import SimpleNamespace
from typing import Any

#: OSWorld's `run_multienv_uitars15_v1.py` runtime configuration (`infer_mode` qwen25vl_normal).
UITARS_RUNTIME = {"infer_mode": "qwen25vl_normal", "prompt_style": "qwen25vl_normal", "input_swap": True,
                  "language": "English", "history_n": 5, "max_pixels": 16384 * 28 * 28, "min_pixels": 100 * 28 * 28,
                  "callusr_tolerance": 3, "temperature": 0.0, "top_k": -1, "top_p": 0.9, "max_tokens": 1000}
TERMINAL = ("DONE", "FAIL")


def _scripted_client(replies: list[str]) -> Any:
    def create(**_: Any) -> Any:
        return SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content=replies.pop(0)))])

    return SimpleNamespace(chat=SimpleNamespace(completions=SimpleNamespace(create=create)))


def _play(agent: Any, screenshot: str, max_steps: int) -> list[Any]:
    """`lib_run_single`'s loop: predict until an action ends the episode or `max_steps` steps ran; each
    step's actions (pyautogui code strings, `WAIT`/`DONE`/`FAIL`)."""
    obs = {"screenshot": base64.b64decode(screenshot)}
    steps: list[Any] = []
    for _ in range(max_steps):
        _, actions = agent.predict("Please set the default Python version to Python4 on my Ubuntu system.", obs)
        steps.append(list(actions))
        if any(a in TERMINAL for a in actions):
            break
    return steps


def uitars_episode(screenshot: str, replies: list[str], max_steps: int) -> dict[str, Any]:
    """OSWorld's `UITARSAgent` (`mm_agents/uitars15_v1.py`, `max_trajectory_length` = `max_steps` as its run
    script sets it) over `replies`: `{"steps": [actions per step], "unused": replies left}`."""
    from mm_agents import uitars15_v1

    os.environ.setdefault("DOUBAO_API_URL", "http://127.0.0.1:9/v1")
    os.environ.setdefault("DOUBAO_API_KEY", "unused")
    queue = list(replies)
    made = uitars15_v1.OpenAI
    uitars15_v1.OpenAI = lambda **_: _scripted_client(queue)  # type: ignore[assignment]
    try:
        agent = uitars15_v1.UITARSAgent(model="ui-tars-1.5-7b", runtime_conf=dict(UITARS_RUNTIME),
                                        max_trajectory_length=max_steps, model_type="qwen25vl")
    finally:
        uitars15_v1.OpenAI = made
    return {"steps": _play(agent, screenshot, max_steps), "unused": len(queue)}


def qwen_episode(version: str, screenshot: str, replies: list[str], max_steps: int) -> dict[str, Any]:
    """OSWorld's `Qwen25VLAgent` (`version` "2.5") or `Qwen3VLAgent` ("3") over `replies`, one call each:
    `{"steps": [actions per step], "unused": replies left}`."""
    import qwen_vl_utils

    shim = types.ModuleType("mm_agents.utils.qwen_vl_utils")
    shim.smart_resize = lambda height, width, factor=28, min_pixels=None, max_pixels=None: \
        qwen_vl_utils.smart_resize(height, width, factor, min_pixels, max_pixels)  # type: ignore[attr-defined]
    package = types.ModuleType("mm_agents.utils")
    package.qwen_vl_utils = shim  # type: ignore[attr-defined]
    sys.modules.setdefault("mm_agents.utils", package)
    sys.modules.setdefault("mm_agents.utils.qwen_vl_utils", shim)
    os.chdir(tempfile.mkdtemp(prefix="qwen-agent-"))  # Qwen3VLAgent writes ./draft/message_cache
    if version == "2.5":
        from mm_agents.qwen25vl_agent import Qwen25VLAgent as Agent
    else:
        from mm_agents.qwen3vl_agent import Qwen3VLAgent as Agent
    queue = list(replies)
    agent = Agent()
    agent.reset()
    agent.call_llm = lambda payload, model: queue.pop(0)
    return {"steps": _play(agent, screenshot, max_steps), "unused": len(queue)}
