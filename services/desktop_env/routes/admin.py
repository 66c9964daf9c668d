"""Our own route: `POST /reset` (not in OSWorld, whose envs are reset by reverting a VM snapshot).
`/healthz` and `/metrics` are mounted by `server.create_app`."""

from __future__ import annotations

from fastapi import APIRouter
from prometheus_client import Histogram

from services.desktop_env.pod import PodDep
from services.desktop_env.schemas import StatusReply

RESET_SECONDS = Histogram("desktop_env_reset_seconds", "Duration of /reset (the desktop's part)")

router = APIRouter(tags=["admin"])


@router.post("/reset", response_model=StatusReply)
def reset(pod: PodDep) -> StatusReply:
    """Back to a clean desktop: every process and window of the env stopped (the zygote of its
    actions too, then started afresh), home rebuilt, keys released, pointer centred.
    `duration_ms` is the desktop's part; the new zygote warms up in the background."""
    pod.zygote.stop()  # first: actions still running are answered as killed by the reset
    duration_ms = pod.desktop.reset()
    pod.zygote.start()
    pod.execute_log.clear()
    RESET_SECONDS.observe(duration_ms / 1000.0)
    return StatusReply(status="success", message="Env reset.", duration_ms=round(duration_ms, 1))
