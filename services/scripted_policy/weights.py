"""Weight-reload endpoints of the scripted policy (mock of a GPU model server), shaped like vLLM's.

vLLM's runtime LoRA API: `POST /v1/load_lora_adapter {"lora_name", "lora_path"}` (400 when already loaded),
`POST /v1/unload_lora_adapter {"lora_name"}` (404 when not loaded). vLLM's sleep mode (dev endpoints):
`POST /sleep?level=N`, `POST /wake_up[?tags=...]`, `GET /is_sleeping`, `POST /collective_rpc {"method":
"reload_weights", "kwargs": {"weights_path"}}`. Plus `POST /admin/reload {"model_version"}` (direct switch).

The served version after a load is the last path component of the path (`/ckpt/v3` -> `v3`). Every load
takes `POLICY_RELOAD_MS`; a version listed in `POLICY_RELOAD_FAIL_VERSIONS` fails with HTTP 500. While
asleep, completions answer 503.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel

from services.scripted_policy.settings import ScriptedPolicySettings


@dataclass
class ModelState:
    """What the mock serves now: version, loaded LoRA adapters (name -> path), whether it sleeps."""

    version: str
    adapters: dict[str, str] = field(default_factory=dict)
    sleeping: bool = False
    reloads: int = 0


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


class SleepView(BaseModel):
    """`GET /is_sleeping`."""

    is_sleeping: bool


def version_of_path(path: str) -> str:
    """`/ckpt/v3/` -> `v3`."""
    return path.rstrip("/").rsplit("/", 1)[-1]


def _error(message: str, status: int) -> JSONResponse:
    kind = "InternalServerError" if status >= 500 else ("NotFoundError" if status == 404 else "BadRequestError")
    return JSONResponse({"error": {"message": message, "type": kind, "code": status}}, status_code=status)


def weights_router(settings: ScriptedPolicySettings, state: ModelState) -> APIRouter:
    """The reload endpoints over `state`."""
    router = APIRouter()
    failing = {v.strip() for v in settings.reload_fail_versions.split(",") if v.strip()}

    async def load(path: str) -> JSONResponse | None:
        """Simulated load time; a failure response for a failing version, else switch version."""
        await asyncio.sleep(settings.reload_ms / 1000.0)
        version = version_of_path(path)
        if version in failing:
            return _error(f"injected reload failure for version {version!r} (scripted policy)", 500)
        state.version = version
        state.reloads += 1
        return None

    @router.post("/v1/load_lora_adapter", response_model=None)
    async def load_lora(body: LoadLoRA) -> Response:
        """Load an adapter; 400 when the name is loaded already (vLLM's behaviour)."""
        if body.lora_name in state.adapters:
            return _error(f"The lora adapter '{body.lora_name}' has already been loaded.", 400)
        failure = await load(body.lora_path)
        if failure is not None:
            return failure
        state.adapters[body.lora_name] = body.lora_path
        return Response(f"Success: LoRA adapter '{body.lora_name}' added successfully.", media_type="text/plain")

    @router.post("/v1/unload_lora_adapter", response_model=None)
    async def unload_lora(body: UnloadLoRA) -> Response:
        """Unload an adapter; 404 when it is not loaded."""
        if state.adapters.pop(body.lora_name, None) is None:
            return _error(f"The lora adapter '{body.lora_name}' cannot be found.", 404)
        return Response(f"Success: LoRA adapter '{body.lora_name}' removed successfully.", media_type="text/plain")

    @router.post("/sleep", response_model=None)
    def sleep(level: int = 1) -> Response:
        """Put the engine to sleep (completions answer 503 until woken)."""
        state.sleeping = True
        return Response(status_code=200)

    @router.post("/wake_up", response_model=None)
    def wake_up(tags: str | None = None) -> Response:
        """Wake up (the last tag, `kv_cache`, or no tag ends the sleep)."""
        if tags in (None, "kv_cache"):
            state.sleeping = False
        return Response(status_code=200)

    @router.get("/is_sleeping", response_model=SleepView)
    def is_sleeping() -> SleepView:
        """`{"is_sleeping": bool}`."""
        return SleepView(is_sleeping=state.sleeping)

    @router.post("/collective_rpc", response_model=None)
    async def collective_rpc(request: Request) -> Response:
        """Only `reload_weights` with `kwargs.weights_path` is supported (400 otherwise)."""
        try:
            body = await request.json()
            method, path = body["method"], body.get("kwargs", {})["weights_path"]
        except (ValueError, KeyError, TypeError, AttributeError):
            return _error("body must be {\"method\": \"reload_weights\", \"kwargs\": {\"weights_path\": str}}", 400)
        if method != "reload_weights":
            return _error(f"unsupported collective_rpc method {method!r} (scripted policy)", 400)
        failure = await load(str(path))
        return failure or JSONResponse({"results": [None]})

    @router.post("/admin/reload", response_model=VersionView)
    async def reload(body: VersionSwitch) -> VersionView:
        """Serve `model_version` from now on (after `POLICY_RELOAD_MS`)."""
        await asyncio.sleep(settings.reload_ms / 1000.0)
        state.version = body.model_version
        return VersionView(model_version=state.version)

    return router
