"""Deterministic fake tokens of the scripted policy (mock of a GPU model server), in vLLM's formats.

- Completion token ids: the UTF-8 bytes of the reply. Logprobs: in (-1, 0], a function of the position, the
  byte and the served model version, so a step's logprobs identify the version that produced it
  (`expected_logprobs`): tests check every stored step against its recorded version.
- Prompt token ids: one id per 4 characters of text (`CHARS_PER_TOKEN`) and `IMAGE_TOKENS` copies of
  `IMAGE_TOKEN_ID` per image part; `len(prompt_token_ids) == usage.prompt_tokens`. An assistant message's text
  is the UTF-8 bytes of the text, as its completion gave them: a history re-sent unchanged then has the
  previous call's prompt and response ids as the prefix of its prompt ids, as with a real chat template and
  tokenizer (what a session's multi-turn export relies on, services/cli/export_session.py).
- Shapes: `common.vllm_protocol` (vLLM's `ChatCompletionLogProbs`), including `top_logprobs` alternatives and
  `return_tokens_as_token_ids` token strings.
"""

from __future__ import annotations

import hashlib
from typing import Any

from common.vllm_protocol import TOKEN_ID_PREFIX, ChatCompletionLogProb, ChatCompletionLogProbsContent

IMAGE_TOKENS = 1000  # prompt tokens of one screenshot
IMAGE_TOKEN_ID = 151655  # Qwen2-VL's image pad token id, for realism
CHARS_PER_TOKEN = 4


def version_salt(version: str) -> int:
    """0..99, a stable function of the version string."""
    return int.from_bytes(hashlib.blake2b(version.encode(), digest_size=2).digest(), "big") % 100


def completion_tokens(text: str, version: str) -> tuple[list[int], list[float]]:
    """Token ids (UTF-8 bytes of `text`) and one logprob in (-1, 0] per id, salted by `version`."""
    ids = list(text.encode())
    salt = version_salt(version)
    return ids, [-((i * 37 + b + salt) % 100) / 100.0 for i, b in enumerate(ids)]


def expected_logprobs(text: str, version: str) -> list[float]:
    """The logprobs the scripted policy gives `text` at `version` (for checks of stored steps)."""
    return completion_tokens(text, version)[1]


def _text_ids(text: str) -> list[int]:
    data = text.encode()
    return [sum(data[i:i + CHARS_PER_TOKEN]) % 50000 for i in range(0, len(data) - CHARS_PER_TOKEN + 1,
                                                                    CHARS_PER_TOKEN)]


def _parts(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(kind, text) per content part: kind `text`, `image` or `reply` (text of an assistant message)."""
    out = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        text_kind = "reply" if isinstance(message, dict) and message.get("role") == "assistant" else "text"
        if isinstance(content, str):
            out.append((text_kind, content))
        elif isinstance(content, list):
            for part in content:
                if isinstance(part, dict):
                    image = part.get("type") == "image_url"
                    out.append(("image", "") if image else (text_kind, str(part.get("text", ""))))
    return out


def _part_count(kind: str, text: str) -> int:
    if kind == "image":
        return IMAGE_TOKENS
    return len(text.encode()) if kind == "reply" else len(text.encode()) // CHARS_PER_TOKEN


def prompt_token_count(messages: list[dict[str, Any]]) -> int:
    """`usage.prompt_tokens`: text length / 4 per part (an assistant part: its length in bytes) plus
    `IMAGE_TOKENS` per image part."""
    return sum(_part_count(kind, text) for kind, text in _parts(messages))


def prompt_token_ids(messages: list[dict[str, Any]]) -> list[int]:
    """Fake prompt token ids, `prompt_token_count(messages)` of them."""
    ids: list[int] = []
    for kind, text in _parts(messages):
        if kind == "image":
            ids += [IMAGE_TOKEN_ID] * IMAGE_TOKENS
        else:
            ids += list(text.encode()) if kind == "reply" else _text_ids(text)
    return ids


def _token_text(token_id: int, as_ids: bool) -> str:
    if as_ids:
        return f"{TOKEN_ID_PREFIX}{token_id}"
    return chr(token_id) if token_id < 128 else f"<0x{token_id:02X}>"


def logprobs_content(ids: list[int], logprobs: list[float], top: int, as_ids: bool
                     ) -> list[ChatCompletionLogProbsContent]:
    """vLLM's `logprobs.content`: per token the sampled one and `top` alternatives (the sampled token
    first, then lower-probability ones), token strings as text or `token_id:<id>`."""
    out = []
    for token_id, logprob in zip(ids, logprobs, strict=True):
        alternatives = [(token_id, logprob)] + [((token_id + k) % 256, logprob - k) for k in range(1, top)]
        out.append(ChatCompletionLogProbsContent(
            token=_token_text(token_id, as_ids), logprob=logprob, bytes=[token_id] if token_id < 256 else None,
            top_logprobs=[ChatCompletionLogProb(token=_token_text(t, as_ids), logprob=lp, bytes=[t])
                          for t, lp in alternatives[:top]]))
    return out
