"""`/ui` pages: overview (queues, envs, gateway replicas, runs with progress), a run page (per-domain
success with intervals, pass@k, failures first) and the trajectory viewer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import httpx
import redis
from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from common.envpool import EnvPool
from common.objectstore import ObjectStore
from common.runstate import list_run_ids, summarize_run
from common.stats import run_stats
from services.task_producer.deps import RunIdPath, TrajectoryPath, get_redis, get_settings, get_store
from services.task_producer.queueing import queue_stats
from services.task_producer.settings import ProducerSettings
from services.task_producer.ui.login import require_ui_token
from services.task_producer.ui.trajectory_view import load_steps

router = APIRouter(prefix="/ui", tags=["dashboard"], include_in_schema=True, dependencies=[Depends(require_ui_token)])
templates = Jinja2Templates(directory=Path(__file__).with_name("templates"))
#: Seconds between reloads of pages that show live progress.
REFRESH_S = 5


def _replicas(settings: ProducerSettings) -> dict[str, Any]:
    """The gateway's replicas (`GET /admin/replicas`), or the reason they cannot be shown."""
    if not settings.gateway_url:
        return {"error": "no gateway configured (PRODUCER_GATEWAY_URL)", "replicas": []}
    try:
        token = settings.gateway_admin_token
        headers = {"Authorization": f"Bearer {token.get_secret_value()}"} if token else {}
        response = httpx.get(f"{settings.gateway_url.rstrip('/')}/admin/replicas", headers=headers, timeout=2.0)
        response.raise_for_status()
        return {"error": None, "replicas": response.json().get("replicas", [])}
    except (httpx.HTTPError, ValueError) as exc:
        return {"error": f"gateway {settings.gateway_url}: {exc}", "replicas": []}


@router.get("", response_class=HTMLResponse)
def overview(request: Request, client: Annotated[redis.Redis, Depends(get_redis)],
             settings: Annotated[ProducerSettings, Depends(get_settings)]) -> HTMLResponse:
    """Queues (depth, started, failed, workers), envs (leased, idle, unhealthy), gateway replicas and
    versions, and the newest runs with their progress."""
    runs = [s for s in (summarize_run(client, run_id) for run_id in list_run_ids(client, 50)) if s]
    return templates.TemplateResponse(request, "overview.html", {
        "queues": queue_stats(client), "envs": EnvPool(client).status(), "gateway": _replicas(settings),
        "runs": runs, "refresh_s": REFRESH_S})


@router.get("/runs/{run_id}", response_class=HTMLResponse)
def run_page(request: Request, run_id: RunIdPath, client: Annotated[redis.Redis, Depends(get_redis)]) -> HTMLResponse:
    """One run: per-domain success with Wilson intervals, pass@k, then its rollouts, failures first."""
    summary = summarize_run(client, run_id, include_rollouts=True)
    if summary is None:
        raise HTTPException(404, f"run {run_id!r} not found")
    stats = run_stats(run_id, summary.rollouts, summary.total)  # the records the summary already read
    rollouts = sorted(summary.rollouts, key=lambda r: (r.reward is not None and r.reward >= 1.0,
                                                      r.status.is_terminal, r.task_id, r.rollout_index))
    return templates.TemplateResponse(request, "run.html", {
        "run": summary, "stats": stats, "rollouts": rollouts,
        "refresh_s": None if summary.finished else REFRESH_S})


@router.get("/trajectories/{run_id}/{name}", response_class=HTMLResponse)
def trajectory_page(request: Request, run_id: RunIdPath, name: TrajectoryPath,
                    store: Annotated[ObjectStore, Depends(get_store)]) -> HTMLResponse:
    """The trajectory viewer: each step's screenshot with its action drawn at the real coordinates,
    typed text, thought, parsed action and timings; the final status, reward and evaluation inputs."""
    trajectory = f"{run_id}/{name}"
    try:
        manifest = json.loads(store.get(f"{trajectory}/manifest.json"))
    except (KeyError, ValueError):
        raise HTTPException(404, f"trajectory {trajectory} not found (or not finished)") from None
    try:
        evaluation = json.loads(store.get(f"{trajectory}/evaluation.json"))
    except KeyError:
        evaluation = None
    return templates.TemplateResponse(request, "trajectory.html", {
        "trajectory": trajectory, "manifest": manifest, "evaluation": evaluation,
        "steps": load_steps(store, trajectory, manifest.get("steps", []))})
