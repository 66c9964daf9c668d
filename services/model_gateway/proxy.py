"""OpenAI-compatible routes of the gateway: `POST /v1/chat/completions`, `POST /v1/completions`, `GET /v1/models`,
and `POST /v1/tokenize` (vLLM's `POST /tokenize`: a chat's or a prompt's token ids by the replica's tokenizer and
chat template; the runner's token carrying, `services/runner/token_carry.py`, uses it).

Every route needs one of `GATEWAY_API_KEYS` or `GATEWAY_RUNNER_KEYS` as a bearer token when either is set (401
`{"error": "Unauthorized"}`, like vLLM's `--api-key`: `access.require_client`). Completions go through
`forwarding.forward_completion` (routing, retries, deadlines, the relay); `/v1/models` is the model list of a
healthy replica.
"""

from __future__ import annotations

import httpx
from fastapi import APIRouter, Depends, Request, Response

from services.model_gateway.access import require_client
from services.model_gateway.forwarding import forward_completion, json_error, served_version
from services.model_gateway.headers import encode_headers, relayed_response_headers
from services.model_gateway.state import GatewayState, get_state

router = APIRouter(prefix="/v1", dependencies=[Depends(require_client)])


@router.post("/chat/completions", response_model=None)
async def chat_completions(request: Request, state: GatewayState = Depends(get_state)) -> Response:
    """OpenAI chat completions, forwarded as raw bytes, the response relayed as it arrives (streaming or not)."""
    return await forward_completion(request, "/v1/chat/completions", state)


@router.post("/completions", response_model=None)
async def completions(request: Request, state: GatewayState = Depends(get_state)) -> Response:
    """OpenAI text completions, forwarded as raw bytes, the response relayed as it arrives (streaming or not)."""
    return await forward_completion(request, "/v1/completions", state)


@router.post("/tokenize", response_model=None)
async def tokenize(request: Request, state: GatewayState = Depends(get_state)) -> Response:
    """vLLM's `/tokenize` of a replica (sticky like completions: the episode's replica), relayed; a replica
    without it (the scripted policy) answers 404."""
    return await forward_completion(request, "/tokenize", state)


@router.get("/models", response_model=None)
async def models(state: GatewayState = Depends(get_state)) -> Response:
    """The model list of a healthy replica (fewest in-flight first); 503 when none responds."""
    tried: set[str] = set()
    last_error = "none routable"
    while (replica := state.router.least_loaded(tried)) is not None:
        tried.add(replica.id)
        try:
            upstream = await state.client.get(f"{replica.url}/v1/models", headers={"accept-encoding": "identity"})
        except httpx.HTTPError as exc:
            state.pool.record_failure(replica)
            last_error = f"replica {replica.id}: {exc!r}"
            continue
        if upstream.status_code >= 500:
            last_error = f"replica {replica.id} responded HTTP {upstream.status_code}"
            continue
        response = Response(upstream.content, status_code=upstream.status_code)  # decoded: its own length
        headers = relayed_response_headers(upstream.headers.multi_items(), replica.id,
                                           served_version(state, replica, upstream))
        response.raw_headers += encode_headers((n, v) for n, v in headers
                                               if n.lower() not in ("content-length", "content-encoding"))
        return response
    return json_error(state, 503, {"error": f"no healthy replica could serve the request ({last_error})"})
