"""Token carrying's prompt building (`services/runner/token_carry.py`) over a ChatML template whose "tokenizer"
is one id per character (specials one id each): a real template rendering, small enough to read the ids.
Its use against real vLLM replicas is in tests/vllm/test_rollouts.py."""

from __future__ import annotations

from typing import Any

from services.runner.token_carry import TokenCarry, has_image

IM_START, IM_END = 1, 2


def render(messages: list[dict[str, Any]], opened: bool) -> list[int]:
    """ChatML: `<|im_start|>role\\ncontent<|im_end|>\\n` per message, then `<|im_start|>assistant\\n`; `opened`
    leaves the last message without its end (vLLM's `continue_final_message`)."""
    ids: list[int] = []
    for i, message in enumerate(messages):
        ids += [IM_START] + [ord(c) for c in f"{message['role']}\n{message['content']}"]
        if not (opened and i == len(messages) - 1):
            ids += [IM_END, ord("\n")]
    return ids if opened else ids + [IM_START] + [ord(c) for c in "assistant\n"]


def conversation(*turns: str) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "S"}]
    for i, text in enumerate(turns):
        messages.append({"role": "user" if i % 2 == 0 else "assistant", "content": text})
    return messages


def test_the_next_prompt_is_the_previous_prompt_the_sampled_ids_and_the_template_tail() -> None:
    carry = TokenCarry(render)
    first = conversation("u0")
    prompt0 = render(first, False)
    assert carry.prompt_ids(first) is None  # nothing to carry yet: chat messages
    sampled = [900, 901, IM_END]  # a non-canonical split of the text "ab", ended on the end-of-turn token
    carry.commit(first, prompt0, sampled, carried=False)
    second = conversation("u0", "ab", "u1")
    prompt1 = carry.prompt_ids(second)
    assert prompt1 == prompt0 + sampled + [ord("\n"), IM_START, *map(ord, "user\nu1"), IM_END, ord("\n"), IM_START,
                                           *map(ord, "assistant\n")]
    carry.commit(second, prompt1, [903], carried=True)  # cut at max_tokens: no end-of-turn sampled
    third = conversation("u0", "ab", "u1", "c", "u2")
    prompt2 = carry.prompt_ids(third)
    assert prompt2 is not None and prompt2[:len(prompt1) + 2] == prompt1 + [903, IM_END]


def test_a_rewritten_or_cut_history_or_an_image_goes_as_chat() -> None:
    carry = TokenCarry(render)
    first = conversation("u0")
    carry.commit(first, render(first, False), [5, IM_END], carried=False)
    assert carry.prompt_ids([first[0], {"role": "user", "content": "other"}]) is None  # history rewritten
    assert carry.prompt_ids(first + [{"role": "user", "content": "no reply between"}]) is None
    image = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:"}}]}
    assert has_image([image]) and carry.prompt_ids(conversation("u0", "x") + [image]) is None
    carry.commit(first, None, None, carried=False)  # a reply without ids stops the carry
    assert carry.prompt_ids(conversation("u0", "x", "u1")) is None
