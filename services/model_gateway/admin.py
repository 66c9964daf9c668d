"""Admin routes of the gateway (`/admin/*`), behind `Authorization: Bearer $GATEWAY_ADMIN_TOKEN` when set.
All routes are async: they touch state the event loop owns (never from the threadpool).

- `GET /admin/replicas`, `POST /admin/replicas {"url"}`, `DELETE /admin/replicas/{id}`,
  `POST /admin/replicas/{id}/drain[?undrain=true]`.
- `POST /admin/reload` (`ReloadRequest`): start a rolling reload (202); 409 while one runs, 422 for a bad body.
- `GET /admin/reload`: `{"running", "reload": ReloadStatus | null}`.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Request
from pydantic import BaseModel, Field, field_validator

from common.auth import bearer, check_token
from services.model_gateway.reload import ReloadBusy, ReloadStatus
from services.model_gateway.reload_methods import ReloadRequest
from services.model_gateway.replicas import check_replica_url
from services.model_gateway.state import GatewayState, get_state


def require_admin(request: Request, state: GatewayState = Depends(get_state)) -> None:
    """Dependency: 401 unless the bearer token equals `GATEWAY_ADMIN_TOKEN` (open when that is empty)."""
    check_token(bearer(request), state.settings.admin_token, "GATEWAY_ADMIN_TOKEN")


router = APIRouter(prefix="/admin", dependencies=[Depends(require_admin)])


class ReplicaView(BaseModel):
    """One replica as the admin API shows it."""

    id: str
    url: str
    healthy: bool
    breaker: str
    draining: bool
    reloading: bool
    target_version: str | None
    in_flight: int
    sessions: int
    consecutive_failures: int
    model_version: str | None
    engine_running: int | None = Field(default=None, description="vLLM's num_requests_running at the last scrape")
    engine_waiting: int | None = Field(default=None, description="vLLM's num_requests_waiting at the last scrape")
    kv_cache_usage: float | None = Field(default=None, description="vLLM's kv_cache_usage_perc (0..1)")


class ReplicaList(BaseModel):
    """`GET /admin/replicas`."""

    replicas: list[ReplicaView]


class NewReplica(BaseModel):
    """`POST /admin/replicas` body."""

    url: str = Field(description="replica base URL http(s)://host:port")

    @field_validator("url")
    @classmethod
    def _replica_url(cls, url: str) -> str:
        return check_replica_url(url)


class Removed(BaseModel):
    """`DELETE /admin/replicas/{id}` response."""

    removed: str


class ReloadView(BaseModel):
    """`GET /admin/reload`."""

    running: bool
    reload: ReloadStatus | None


@router.get("/replicas", response_model=ReplicaList)
async def list_replicas(state: GatewayState = Depends(get_state)) -> dict[str, Any]:
    """Every replica with breaker, drain, reload, load and version state."""
    return {"replicas": [r.as_dict() for r in state.pool.list_replicas()]}


@router.post("/replicas", status_code=201, response_model=ReplicaView)
async def add_replica(body: NewReplica, state: GatewayState = Depends(get_state)) -> dict[str, object]:
    """Add a replica (idempotent); 422 when the URL is not http(s)."""
    return state.pool.add(body.url).as_dict()


@router.delete("/replicas/{rid}", response_model=Removed)
async def remove_replica(rid: str, state: GatewayState = Depends(get_state)) -> dict[str, str]:
    """Remove a replica (404 if unknown); its episodes migrate on their next request."""
    if not state.pool.remove(rid):
        raise HTTPException(404, f"replica {rid!r} not found")
    return {"removed": rid}


@router.post("/replicas/{rid}/drain", response_model=ReplicaView)
async def drain_replica(rid: str, undrain: bool = False, state: GatewayState = Depends(get_state)) -> dict[str, object]:
    """Stop routing new requests to a replica (in-flight ones finish); `?undrain=true` re-admits it."""
    replica = state.pool.drain(rid, draining=not undrain)
    if replica is None:
        raise HTTPException(404, f"replica {rid!r} not found")
    return replica.as_dict()


@router.post("/reload", status_code=202, response_model=ReloadView)
async def start_reload(body: ReloadRequest, state: GatewayState = Depends(get_state)) -> dict[str, Any]:
    """Start a rolling reload to `body.version` from `body.source`; progress in `GET /admin/reload`."""
    try:
        state.reloads.start(body)
    except ReloadBusy as exc:
        raise HTTPException(409, str(exc)) from exc
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from exc
    return state.reloads.view()


@router.get("/reload", response_model=ReloadView)
async def reload_status(state: GatewayState = Depends(get_state)) -> dict[str, Any]:
    """The current or last reload (`reload` is null before the first one)."""
    return state.reloads.view()
