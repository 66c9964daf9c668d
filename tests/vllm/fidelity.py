"""Token-fidelity checks of stored steps against the real tokenizer and a real vLLM server (issue 32, point 3).

A step record (`step_NNNN.json`, `cua.step.v1`) carries `prompt_token_ids`, `token_ids` (the response) and
`logprobs`. Checked here:
- `token_ids` decode (the real tokenizer, specials skipped as vLLM's text) to the recorded `response`;
- `logprobs` has one value per response token, and each is the logprob vLLM gives that token after the
  recorded prompt and the response tokens before it (teacher-forced re-scoring: `/v1/completions` with the ids
  as the prompt and `prompt_logprobs`), which holds only for the ids vLLM sampled, aligned to their logprobs;
- `prompt_token_ids` are the real chat template of the request's messages, where each earlier assistant turn is
  the ids that were sampled for it (`carried_prompt`): with token carrying (`services/runner/token_carry.py`) the
  runner sends exactly that; without it, the re-encoded text, which `retokenised_turns` counts.
"""

from __future__ import annotations

import math
from typing import Any

import httpx

#: Logprobs are computed in bf16 on CPU, in batches of different shapes (prefix cache, concurrent requests).
LOGPROB_TOLERANCE = 0.08


def request_messages(final_messages: list[dict[str, Any]], step: int) -> list[dict[str, Any]]:
    """The chat messages of `step`'s request for OSWorld's prompt agent with its whole history sent (a system
    message, then a user and an assistant message per earlier step, then the step's user message)."""
    return final_messages[:2 + 2 * step]


def extends(prompt: list[int], before: list[int]) -> bool:
    """Whether `prompt` starts with `before` (a previous prompt followed by its response)."""
    return prompt[:len(before)] == before


def extension_breaks(steps: list[dict[str, Any]]) -> list[int]:
    """The steps (after the first) whose prompt does not start with the previous step's prompt and response."""
    ordered = sorted(steps, key=lambda s: s["step"])
    return [cur["step"] for prev, cur in zip(ordered, ordered[1:], strict=False)
            if not extends(cur["prompt_token_ids"], prev["prompt_token_ids"] + prev["token_ids"])]


def rescored_logprobs(url: str, model: str, prompt: list[int], response: list[int]) -> list[float]:
    """The logprob of each `response` token after `prompt` and the response tokens before it, from vLLM
    (`/v1/completions`, `prompt_logprobs=0`, one generated token that is ignored)."""
    body = {"model": model, "prompt": prompt + response, "max_tokens": 1, "prompt_logprobs": 0, "temperature": 0}
    payload = httpx.post(url + "/v1/completions", json=body, timeout=120).json()
    entries = payload["choices"][0]["prompt_logprobs"][len(prompt):]
    return [float(entry[str(token)]["logprob"]) for entry, token in zip(entries, response, strict=True)]


def logprob_mismatches(recorded: list[float], rescored: list[float]) -> list[tuple[int, float, float]]:
    """(position, recorded, rescored) where the two differ by more than `LOGPROB_TOLERANCE`."""
    return [(i, a, b) for i, (a, b) in enumerate(zip(recorded, rescored, strict=True))
            if not (math.isfinite(a) and abs(a - b) <= LOGPROB_TOLERANCE)]


def response_spans(steps: list[dict[str, Any]], eos: int) -> list[tuple[int, int]]:
    """Where each step's sampled reply sits in the next prompts (token carrying): from the end of its prompt, its
    ids without a final end-of-turn token `eos` (the template writes that one after the reply's text too)."""
    spans = []
    for step in steps:
        ids = step["token_ids"]
        start = len(step["prompt_token_ids"])
        spans.append((start, start + len(ids) - (1 if ids and ids[-1] == eos else 0)))
    return spans


def retemplated(prompt: list[int], spans: list[tuple[int, int]], texts: list[list[int]]) -> list[int]:
    """`prompt` with each span of carried sampled ids replaced by the ids of the reply's text as the template
    writes it (`texts`, the real tokenizer's encoding): for a carried prompt, the chat template's ids of the
    request's messages."""
    ids = list(prompt)
    for (start, end), text in sorted(zip(spans, texts, strict=True), reverse=True):
        ids[start:end] = text
    return ids
