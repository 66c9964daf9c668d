"""UI-TARS agent messages: prompt, history of at most 5 screenshots, final messages by file name."""

from __future__ import annotations

import base64
import io
import json

from PIL import Image

from services.runner.agent.base import Observation
from services.runner.agent.ui_tars import UITarsAgent, UITarsOptions


def png(size: tuple[int, int] = (1920, 1080), color: int = 0) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, (color, color, color)).save(buffer, "PNG")
    return buffer.getvalue()


def images_in(messages: list[dict]) -> list[str]:
    return [part["image_url"]["url"] for m in messages if isinstance(m["content"], list)
            for part in m["content"] if part["type"] == "image_url"]


def test_prompt_carries_instruction_and_action_space() -> None:
    agent = UITarsAgent("Rename the folder", screen=(1920, 1080))
    text = agent.build_messages(Observation(png()))[0]["content"][0]["text"]
    assert "Rename the folder" in text and "call_user()" in text and "hotkey(key='ctrl c')" in text
    assert "{instruction}" not in text and "Use English in `Thought` part." in text


def test_history_keeps_at_most_five_screenshots_but_all_replies() -> None:
    agent = UITarsAgent("task", screen=(1920, 1080))
    for step in range(8):
        messages = agent.build_messages(Observation(png(color=step)))
        agent.record(f"Thought: step {step}\nAction: wait()")
    assert len(images_in(messages)) == 5
    assert all(url.startswith("data:image/png;base64,") for url in images_in(messages))
    # the last five screenshots, oldest first, each the PNG it was given
    sent = [base64.b64decode(url.split(",", 1)[1]) for url in images_in(messages)]
    assert sent == [png(color=step) for step in range(3, 8)]
    replies = [m["content"] for m in messages if m["role"] == "assistant"]
    assert len(replies) == 7 and replies[0].startswith("Thought: step 0")
    assert messages[-1]["role"] == "user"  # the current screenshot comes last


def test_final_messages_reference_images_by_file_name() -> None:
    agent = UITarsAgent("task", screen=(1920, 1080))
    for _ in range(7):
        agent.build_messages(Observation(png()))
        agent.record("Action: wait()")
    final = agent.final_messages()
    assert images_in(final) == [f"image_{i:04d}.png" for i in range(7)]
    assert "base64" not in json.dumps(final)


def test_screen_size_follows_the_screenshot() -> None:
    agent = UITarsAgent("task", screen=(1920, 1080))
    agent.build_messages(Observation(png((1280, 720))))
    assert agent.screen == (1280, 720)
    assert agent.parse("Action: click(start_box='(0,0)')").actions[0].inputs == {"x": 0, "y": 0}


def test_an_unparseable_reply_ends_as_done_never_fail() -> None:
    agent = UITarsAgent("Set Python4 as default", (1920, 1080))
    ended = agent.unparseable("random tokens", "reply has no 'Action:'")
    assert ended.terminal == "DONE"
    assert [(a.action_type, a.inputs, a.code) for a in ended.actions] == \
        [("DONE", {"unparseable": "reply has no 'Action:'"}, "")]


def test_the_last_step_becomes_fail_only_with_fail_at_max_steps() -> None:
    click = "Thought: again\nAction: click(start_box='(10,20)')"
    plain = UITarsAgent("Keep clicking", (1920, 1080))
    parsed = plain.parse(click)
    assert plain.last_step(parsed) is parsed  # default: the reply's own actions, then `truncated`
    parity = UITarsAgent("Keep clicking", (1920, 1080), UITarsOptions(fail_at_max_steps=True))
    forced = parity.last_step(parity.parse(click))
    assert forced.terminal == "FAIL" and [a.action_type for a in forced.actions] == ["FAIL"]  # the click is not run
    for reply in ("Thought: wait\nAction: wait()", "Thought: done\nAction: finished(content='')",
                  "Thought: no\nAction: call_user()"):  # OSWorld returns these before its max-steps check
        ending = parity.parse(reply)
        assert parity.last_step(ending) is ending, reply
