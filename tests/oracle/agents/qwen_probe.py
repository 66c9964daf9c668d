"""Runs in the agent oracle process: qwen-agent's function-calling prompt (`NousFnCallPrompt`) on our
`computer_use` tool, the tool calls it reads from a reply, and its tool-schema checks."""

from __future__ import annotations

import json
from typing import Any


def system_texts(function: dict[str, Any]) -> list[str]:
    """The text parts of the system message qwen-agent builds for `function` under `You are a helpful
    assistant.` (as Qwen's computer-use cookbook calls it)."""
    from qwen_agent.llm.fncall_prompts.nous_fncall_prompt import NousFnCallPrompt
    from qwen_agent.llm.schema import ContentItem, Message

    messages = NousFnCallPrompt().preprocess_fncall_messages(
        messages=[Message(role="system", content=[ContentItem(text="You are a helpful assistant.")])],
        functions=[function], lang=None)
    return [item.text for item in messages[0].content]


def tool_calls(text: str) -> list[dict[str, Any]]:
    """The function calls qwen-agent reads from an assistant reply: `[{"name", "arguments"}]` (arguments
    as qwen-agent serialised them, parsed back)."""
    from qwen_agent.llm.fncall_prompts.nous_fncall_prompt import NousFnCallPrompt
    from qwen_agent.llm.schema import ContentItem, Message

    reply = Message(role="assistant", content=[ContentItem(text=text)])
    messages = NousFnCallPrompt().postprocess_fncall_messages([reply])
    calls = []
    for message in messages:
        if message.function_call:
            try:
                arguments = json.loads(message.function_call.arguments)
            except ValueError:
                arguments = message.function_call.arguments
            calls.append({"name": message.function_call.name, "arguments": arguments})
    return calls


def check_arguments(function: dict[str, Any], arguments: dict[str, Any]) -> bool:
    """Whether `function` is a valid tool schema (qwen-agent's `is_tool_schema`) and `arguments` satisfy
    its parameters (`BaseTool._verify_json_format_args`: jsonschema)."""
    import jsonschema
    from qwen_agent.tools.base import is_tool_schema

    if not is_tool_schema(function):
        return False
    jsonschema.validate(instance=arguments, schema=function["parameters"])
    return True
