"""The session's two vLLM servers serve the tiny model with the token fields the runner reads, and the
prompt ids vLLM reports are the real tokenizer's chat template of the messages."""

from __future__ import annotations

import httpx

from common.vllm_protocol import ChatCompletionResponse, read_tokens
from tests.vllm_fixtures import VLLMReplicas, tokenizer_oracle


def test_both_replicas_answer_with_token_ids_and_logprobs(vllm_replicas: VLLMReplicas) -> None:
    messages = [{"role": "system", "content": [{"type": "text", "text": "sys"}]}, {"role": "user", "content": "hi"}]
    answers = []
    for url in vllm_replicas.urls:
        body = {"model": vllm_replicas.model, "messages": messages, "max_tokens": 6, "logprobs": True,
                "return_token_ids": True, "temperature": 1.0}
        payload = httpx.post(url + "/v1/chat/completions", json=body, timeout=120).json()
        ChatCompletionResponse.model_validate(payload)
        answers.append(read_tokens(payload, payload["choices"][0]))
    oracle = tokenizer_oracle(vllm_replicas.model_dir, chats=[messages])
    for ids, logprobs, prompt_ids in answers:
        assert ids and logprobs and len(ids) == len(logprobs)
        assert prompt_ids == oracle["chats"][0]
