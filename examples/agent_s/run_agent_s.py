"""Run Agent S3 (PyPI `gui-agents`, unmodified) on one OSWorld task, as OSWorld's run scripts drive an agent:
screenshot from the env's OSWorld HTTP server, `agent.predict(instruction, obs)`, each returned action executed
through the server's `/execute` (`python -c` with OSWorld's `PythonController` prefix), until `DONE`/`FAIL` or
the step budget. Started by the runner as an `external` agent (services/runner/external.py), which sets:
`OSWORLD_SERVER_URL`, `OPENAI_BASE_URL` (a gateway session), `OPENAI_API_KEY`, `CUA_MODEL`, `CUA_INSTRUCTION`,
`CUA_MAX_STEPS`, `CUA_SCREEN_WIDTH`, `CUA_SCREEN_HEIGHT`, `CUA_RESULT_FILE` (the verdict is written there).

Both of Agent S's models (its worker, and the grounding model its `agent.click(...)` actions ask for
coordinates) go to the session's base URL with the run's model name (`engine_type: openai`).
Install: `pip install --no-deps gui-agents==0.3.2 && pip install anthropic backoff pytesseract` (its other
hard dependencies, PaddleOCR among them, are not imported by the S3 agent).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import httpx
from gui_agents.s3.agents.agent_s import AgentS3
from gui_agents.s3.agents.grounding import OSWorldACI

#: OSWorld's `PythonController.pkgs_prefix` (desktop_env/controllers/python.py).
PKGS_PREFIX = "import pyautogui; import time; pyautogui.FAILSAFE = False; {command}"


def main() -> int:
    """Run the task to its end; 0 when the agent finished (DONE or FAIL), 1 when its step budget ran out."""
    server = os.environ["OSWORLD_SERVER_URL"].rstrip("/")
    width, height = int(os.environ["CUA_SCREEN_WIDTH"]), int(os.environ["CUA_SCREEN_HEIGHT"])
    engine = {"engine_type": "openai", "model": os.environ["CUA_MODEL"], "base_url": os.environ["OPENAI_BASE_URL"],
              "api_key": os.environ["OPENAI_API_KEY"]}
    grounding = OSWorldACI(env=None, platform="linux", engine_params_for_generation=engine,
                           engine_params_for_grounding={**engine, "grounding_width": width,
                                                        "grounding_height": height},
                           width=width, height=height)
    agent = AgentS3(engine, grounding, platform="linux")
    agent.reset()
    instruction = os.environ["CUA_INSTRUCTION"]
    verdict = Path(os.environ["CUA_RESULT_FILE"])
    with httpx.Client(base_url=server, timeout=120.0) as env:
        for _ in range(int(os.environ["CUA_MAX_STEPS"])):
            screenshot = env.get("/screenshot").raise_for_status().content
            _, actions = agent.predict(instruction=instruction, observation={"screenshot": screenshot})
            for action in actions:
                if action in ("DONE", "FAIL"):
                    verdict.write_text(action)
                    return 0
                if action == "WAIT":
                    time.sleep(1.0)
                    continue
                env.post("/execute", json={"command": ["python", "-c", PKGS_PREFIX.format(command=action)],
                                           "shell": False}).raise_for_status()
            time.sleep(1.0)  # OSWorld's run scripts let the screen settle between steps
    print("step budget spent", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
