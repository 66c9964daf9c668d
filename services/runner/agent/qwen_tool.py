"""Qwen2.5-VL / Qwen3-VL `computer_use` function calling: the tool's schema, the system message that
declares it, and the tool calls of a reply.

- Schema: the `computer_use` tool of Qwen's computer-use cookbook (Qwen2.5-VL `cookbooks/utils/
  agent_function_call.py`, a qwen-agent `BaseTool`; OSWorld ships the same text in `mm_agents/prompts.py`),
  as qwen-agent's `BaseTool.function` gives it: `{name, description, parameters}`.
- System message: qwen-agent's `NousFnCallPrompt.preprocess_fncall_messages` (PyPI `qwen-agent`,
  `qwen_agent/llm/fncall_prompts/nous_fncall_prompt.py`) on the system message `You are a helpful
  assistant.`: the tools template appended as a second text part.
- Tool calls: `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` blocks (a last one may lack its
  closing tag, as qwen-agent's `postprocess_fncall_messages` reads it).
Checked against qwen-agent itself in `tests/oracle/agents/test_qwen_computer_use.py`. Deviation: arguments
must be JSON; qwen-agent also reads JSON5 (single quotes, trailing commas) with `json5.loads`.
"""

from __future__ import annotations

import json
from typing import Any

from services.runner.agent.base import ParseError

SYSTEM_TEXT = "You are a helpful assistant."
ACTIONS = ("key", "type", "mouse_move", "left_click", "left_click_drag", "right_click", "middle_click",
           "double_click", "scroll", "wait", "terminate")
_DESCRIPTION = """Use a mouse and keyboard to interact with a computer, and take screenshots.
* This is an interface to a desktop GUI. You do not have access to a terminal or applications menu. You must \
click on desktop icons to start applications.
* Some applications may take time to start or process actions, so you may need to wait and take successive \
screenshots to see the results of your actions. E.g. if you click on Firefox and a window doesn't open, try wait \
and taking another screenshot.
* The screen's resolution is {width}x{height}.
* Whenever you intend to move the cursor to click on an element like an icon, you should consult a screenshot to \
determine the coordinates of the element before moving the cursor.
* If you tried clicking on a program or link but it failed to load, even after waiting, try adjusting your cursor \
position so that the tip of the cursor visually falls on the element that you want to click.
* Make sure to click any buttons, links, icons, etc with the cursor tip in the center of the element. Don't click \
boxes on their edges unless asked."""
_ACTION_DESCRIPTION = """The action to perform. The available actions are:
* `key`: Performs key down presses on the arguments passed in order, then performs key releases in reverse order.
* `type`: Type a string of text on the keyboard.
* `mouse_move`: Move the cursor to a specified (x, y) pixel coordinate on the screen.
* `left_click`: Click the left mouse button.
* `left_click_drag`: Click and drag the cursor to a specified (x, y) pixel coordinate on the screen.
* `right_click`: Click the right mouse button.
* `middle_click`: Click the middle mouse button.
* `double_click`: Double-click the left mouse button.
* `scroll`: Performs a scroll of the mouse scroll wheel.
* `wait`: Wait specified seconds for the change to happen.
* `terminate`: Terminate the current task and report its completion status."""
_COORDINATE = ("(x, y): The x (pixels from the left edge) and y (pixels from the top edge) coordinates to move the "
               "mouse to. Required only by `action=mouse_move`, `action=left_click_drag`, `action=left_click`, "
               "`action=right_click`, `action=double_click`.")
_PIXELS = ("The amount of scrolling to perform. Positive values scroll up, negative values scroll down. Required "
           "only by `action=scroll`.")
FN_CALL_TEMPLATE = """# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>
{tool_descs}
</tools>

For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:
<tool_call>
{{"name": <function-name>, "arguments": <args-json-object>}}
</tool_call>"""


def computer_use_function(width: int, height: int) -> dict[str, Any]:
    """The `computer_use` tool (`BaseTool.function`) for a screen the model sees as `width`x`height`."""
    return {
        "name": "computer_use",
        "description": _DESCRIPTION.format(width=width, height=height),
        "parameters": {
            "properties": {
                "action": {"description": _ACTION_DESCRIPTION, "enum": list(ACTIONS), "type": "string"},
                "keys": {"description": "Required only by `action=key`.", "type": "array"},
                "text": {"description": "Required only by `action=type`.", "type": "string"},
                "coordinate": {"description": _COORDINATE, "type": "array"},
                "pixels": {"description": _PIXELS, "type": "number"},
                "time": {"description": "The seconds to wait. Required only by `action=wait`.", "type": "number"},
                "status": {"description": "The status of the task. Required only by `action=terminate`.",
                           "type": "string", "enum": ["success", "failure"]},
            },
            "required": ["action"],
            "type": "object",
        },
    }


def system_message(function: dict[str, Any]) -> dict[str, Any]:
    """The OpenAI system message declaring `function` (NousFnCallPrompt's layout, two text parts)."""
    tools = json.dumps({"type": "function", "function": function}, ensure_ascii=False)
    return {"role": "system", "content": [{"type": "text", "text": SYSTEM_TEXT},
                                          {"type": "text", "text": "\n\n" + FN_CALL_TEMPLATE.format(tool_descs=tools)}]}


def tool_calls(text: str) -> tuple[str, list[dict[str, Any]]]:
    """(the text before the first tool call, stripped; each call as `{"name", "arguments"}`). Tool calls
    inside a `<think>...</think>` part are not read (as qwen-agent). Raises: ParseError when the reply
    has no tool call, or a call is not JSON with a name and an arguments object."""
    thinking, _, answer = text.rpartition("</think>")
    head, *blocks = answer.split("<tool_call>")
    head = thinking + _ + head
    calls = []
    for block in blocks:
        body = block.split("</tool_call>")[0].strip()
        if not body:
            continue
        try:
            call = json.loads(body)
        except json.JSONDecodeError as exc:
            raise ParseError(f"tool call is not JSON: {exc}") from None
        if not isinstance(call, dict) or not isinstance(call.get("name"), str) \
                or not isinstance(call.get("arguments"), dict):
            raise ParseError(f"tool call must be {{\"name\": ..., \"arguments\": {{...}}}}, got {body[:100]!r}")
        calls.append({"name": call["name"], "arguments": call["arguments"]})
    if not calls:
        raise ParseError("reply has no <tool_call>")
    return head.strip(), calls
