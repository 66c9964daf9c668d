"""Weight-reload endpoints of the scripted policy (mock of a GPU model server), shaped like vLLM's.

vLLM's runtime LoRA API: `POST /v1/load_lora_adapter {"lora_name", "lora_path"}` (400 when already loaded),
`POST /v1/unload_lora_adapter {"lora_name"}` (404 when not loaded). vLLM's sleep mode (dev endpoints):
`POST /sleep?level=N`, `POST /wake_up[?tags=...]`, `GET /is_sleeping`, `POST /collective_rpc {"method":
"reload_weights", "kwargs": {"weights_path"}}`. Plus `POST /admin/reload {"model_version"}` (direct switch).

The served version after a load is the last path component of the path (`/ckpt/v3` -> `v3`). Every load
takes `POLICY_RELOAD_MS`; a version listed in `POLICY_RELOAD_FAIL_VERSIONS` fails with HTTP 500. While
asleep, completions respond with 503.
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel

from common.vllm_protocol import ErrorResponse
from services.scripted_policy.state import PolicyState, get_state, openai_error

router = APIRouter()
ERRORS: dict[int | str, dict[str, object]] = {
    400: {"model": ErrorResponse, "description": "bad request"},
    404: {"model": ErrorResponse, "description": "no such adapter"},
    500: {"model": ErrorResponse, "description": "injected load failure"},
}
TEXT_RESPONSE: dict[str, object] = {"content": {"text/plain": {}}, "description": "done (vLLM's text response)"}


class LoadLoRA(BaseModel):
    """vLLM's `LoadLoRAAdapterRequest`."""

    lora_name: str
    lora_path: str


class UnloadLoRA(BaseModel):
    """vLLM's `UnloadLoRAAdapterRequest`."""

    lora_name: str
    lora_int_id: int | None = None


class VersionSwitch(BaseModel):
    """`POST /admin/reload` body."""

    model_version: str


class VersionView(BaseModel):
    """Answer of `POST /admin/reload`."""

    model_version: str


class RpcResults(BaseModel):
    """Answer of `POST /collective_rpc`: one result per worker (vLLM's `{"results": [...]}`)."""

    results: list[None]


class SleepView(BaseModel):
    """`GET /is_sleeping`."""

    is_sleeping: bool


def version_of_path(path: str) -> str:
    """`/ckpt/v3/` -> `v3`."""
    return path.rstrip("/").rsplit("/", 1)[-1]


async def load(state: PolicyState, path: str) -> JSONResponse | None:
    """Simulated load time (`reload_ms`); a 500 response for a version in `reload_fail_versions`, else serve
    the version of `path` from now on."""
    await asyncio.sleep(state.settings.reload_ms / 1000.0)
    version = version_of_path(path)
    if version in state.failing_versions:
        return openai_error(f"injected reload failure for version {version!r} (scripted policy)", 500)
    state.model.version = version
    state.model.reloads += 1
    return None


@router.post("/v1/load_lora_adapter", response_model=None, responses={**ERRORS, 200: TEXT_RESPONSE})
async def load_lora(body: LoadLoRA, state: PolicyState = Depends(get_state)) -> Response:
    """Load an adapter; 400 when the name is loaded already (vLLM's behaviour)."""
    if body.lora_name in state.model.adapters:
        return openai_error(f"The lora adapter '{body.lora_name}' has already been loaded.", 400)
    failure = await load(state, body.lora_path)
    if failure is not None:
        return failure
    state.model.adapters[body.lora_name] = body.lora_path
    return Response(f"Success: LoRA adapter '{body.lora_name}' added successfully.", media_type="text/plain")


@router.post("/v1/unload_lora_adapter", response_model=None, responses={**ERRORS, 200: TEXT_RESPONSE})
async def unload_lora(body: UnloadLoRA, state: PolicyState = Depends(get_state)) -> Response:
    """Unload an adapter; 404 when it is not loaded."""
    if state.model.adapters.pop(body.lora_name, None) is None:
        return openai_error(f"The lora adapter '{body.lora_name}' cannot be found.", 404)
    return Response(f"Success: LoRA adapter '{body.lora_name}' removed successfully.", media_type="text/plain")


@router.post("/sleep", response_model=None)
def sleep(level: int = 1, state: PolicyState = Depends(get_state)) -> Response:
    """Put the engine to sleep (completions respond with 503 until woken)."""
    state.model.sleeping = True
    return Response(status_code=200)


@router.post("/wake_up", response_model=None)
def wake_up(tags: str | None = None, state: PolicyState = Depends(get_state)) -> Response:
    """Wake up (the last tag, `kv_cache`, or no tag ends the sleep)."""
    if tags in (None, "kv_cache"):
        state.model.sleeping = False
    return Response(status_code=200)


@router.get("/is_sleeping", response_model=SleepView)
def is_sleeping(state: PolicyState = Depends(get_state)) -> SleepView:
    """`{"is_sleeping": bool}`."""
    return SleepView(is_sleeping=state.model.sleeping)


@router.post("/collective_rpc", response_model=RpcResults, responses=ERRORS)
async def collective_rpc(request: Request, state: PolicyState = Depends(get_state)) -> Response:
    """Only `reload_weights` with `kwargs.weights_path` is supported (400 otherwise)."""
    try:
        body = await request.json()
        method, path = body["method"], body.get("kwargs", {})["weights_path"]
    except (ValueError, KeyError, TypeError, AttributeError):
        return openai_error("body must be {\"method\": \"reload_weights\", \"kwargs\": {\"weights_path\": str}}",
                            400)
    if method != "reload_weights":
        return openai_error(f"unsupported collective_rpc method {method!r} (scripted policy)", 400)
    failure = await load(state, str(path))
    return failure or JSONResponse(RpcResults(results=[None]).model_dump())


@router.post("/admin/reload", response_model=VersionView)
async def reload(body: VersionSwitch, state: PolicyState = Depends(get_state)) -> VersionView:
    """Serve `model_version` from now on (after `POLICY_RELOAD_MS`)."""
    await asyncio.sleep(state.settings.reload_ms / 1000.0)
    state.model.version = body.model_version
    return VersionView(model_version=state.model.version)
