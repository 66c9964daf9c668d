"""The runner's model client (`services/runner/model_client.py`) through the gateway over scripted-policy replicas
(mocks of vLLM GPU servers), real HTTP on loopback: version headers, vLLM token fields, streaming."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from services.model_gateway.server import create_app as create_gateway
from tests.model_gateway.helpers import CHAT, plain_chat, policies, settings_for, write_long_script
from tests.servers import serve_app


@pytest.fixture()
def scripts_dir(tmp_path: Path) -> Path:
    return write_long_script(tmp_path)


def test_runner_client_sends_versions_and_reads_vllm_token_fields(scripts_dir: Path) -> None:
    from common.vllm_protocol import ChatCompletionStreamResponse
    from services.runner.model_client import ModelClient, ModelError, read_tokens, version_headers

    assert version_headers(None, None) == {} and version_headers("v4", None) == {"X-Policy-Version": "v4"}
    assert version_headers("v4", 2) == {"X-Min-Policy-Version": "v2"}
    # Older vLLM without token_ids: ids come from `token_id:<id>` tokens (return_tokens_as_token_ids).
    choice = {"logprobs": {"content": [{"token": "token_id:7", "logprob": -0.5}, {"token": "token_id:9",
                                                                                 "logprob": -0.1}]}}
    assert read_tokens({}, choice) == ([7, 9], [-0.5, -0.1], None)
    with policies(scripts_dir, 2) as urls, serve_app(create_gateway(settings_for(urls))) as gw:
        client = ModelClient(gw, timeout_s=20, connect_timeout_s=5)
        try:
            messages = [{"role": "user", "content": [{"type": "text", "text": "Rename the folder"},
                                                     {"type": "image_url", "image_url": {"url": "data:,"}}]}]
            reply = client.complete(messages, "policy", {"logprobs": True}, "run:t:0", "v0", 1)
            assert reply.text == "R0" and reply.model_version == "v0"
            assert reply.token_ids == list(b"R0") and reply.logprobs is not None and len(reply.logprobs) == 2
            assert reply.prompt_token_ids is not None and len(reply.prompt_token_ids) == reply.prompt_tokens >= 1000
            with pytest.raises(ModelError, match="409"):
                client.complete(messages, "policy", {"logprobs": True}, "run:t:1", "v5", None)
        finally:
            client.close()
        # Streaming through the gateway: the chunks arrive as the replica sent them, token fields included.
        body = {**plain_chat(), "stream": True, "logprobs": True, "return_token_ids": True}
        with httpx.stream("POST", f"{gw}{CHAT}", json=body, timeout=10) as response:
            lines = [line for line in response.iter_lines() if line.startswith("data: {")]
        chunks = [ChatCompletionStreamResponse.model_validate_json(line[6:]) for line in lines]
        assert [i for c in chunks for i in (c.choices[0].token_ids or [])] == list(b"R0")
        assert chunks[0].prompt_token_ids
