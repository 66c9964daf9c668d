"""`/ui` pages: the overview (live figures, the last hour's plots, runs, queues, envs, replicas), the wall
(every leased env's latest screenshot), a run page (curves, per-domain success with intervals, pass@k, task
groups, rollouts failures first), a task's group (GRPO view) and the trajectory viewer (live while the
rollout runs). Each page is rendered with the sampler's current data embedded and then keeps itself up to date
from `/v1/dashboard/stream` (server-sent events) in the browser (`static/dashboard.js`), so no page reads Redis
per browser: see `live/sampler.py`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from common.ids import TASK_ID_MAX, TASK_ID_PATTERN
from common.objectstore import ObjectStore
from services.task_producer.deps import RunIdPath, TrajectoryPath, get_sampler, get_store
from services.task_producer.live.sampler import LiveSampler
from services.task_producer.ui.login import require_ui_token
from services.task_producer.ui.trajectory_view import StepView, load_steps, stored_step_names

router = APIRouter(prefix="/ui", tags=["dashboard"], include_in_schema=True, dependencies=[Depends(require_ui_token)])
templates = Jinja2Templates(directory=Path(__file__).with_name("templates"))
TaskIdPath = Annotated[str, Query(min_length=1, max_length=TASK_ID_MAX, pattern=TASK_ID_PATTERN)]


def _snapshot(sampler: LiveSampler) -> dict[str, Any] | None:
    return None if sampler.snapshot is None else sampler.snapshot.model_dump(mode="json")


@router.get("", response_class=HTMLResponse)
def overview(request: Request, sampler: Annotated[LiveSampler, Depends(get_sampler)]) -> HTMLResponse:
    """Live figures (steps per second, envs, queue depth), the last hour's plots, the newest runs with their
    progress, queues, envs and the gateway's replicas."""
    return templates.TemplateResponse(request, "overview.html", {
        "initial": {"snapshot": _snapshot(sampler), "series": sampler.series.model_dump(mode="json")}})


@router.get("/wall", response_class=HTMLResponse)
def wall(request: Request, sampler: Annotated[LiveSampler, Depends(get_sampler)]) -> HTMLResponse:
    """Every leased env: its rollout's latest screenshot (the last action drawn on it), task, step, step
    time and policy version; each opens that rollout's live trajectory."""
    return templates.TemplateResponse(request, "wall.html", {"initial": {"snapshot": _snapshot(sampler)}})


@router.get("/runs/{run_id}", response_class=HTMLResponse)
async def run_page(request: Request, run_id: RunIdPath,
                   sampler: Annotated[LiveSampler, Depends(get_sampler)]) -> HTMLResponse:
    """One run: its curves, per-domain success with Wilson intervals, pass@k, its tasks' groups, then its
    rollouts, failures first. 404 when the run is unknown."""
    detail = await run_in_threadpool(sampler.detail, run_id)
    if detail is None:
        raise HTTPException(404, f"run {run_id!r} not found")
    return templates.TemplateResponse(request, "run.html", {"run_id": run_id,
                                                            "initial": {"run": detail.model_dump(mode="json")}})


@router.get("/runs/{run_id}/group", response_class=HTMLResponse)
async def group_page(request: Request, run_id: RunIdPath, task: TaskIdPath,
                     sampler: Annotated[LiveSampler, Depends(get_sampler)]) -> HTMLResponse:
    """The GRPO view of one task of a run: all its rollouts side by side with their rewards, step counts and
    final screens. 404 when the run or the task is unknown."""
    detail = await run_in_threadpool(sampler.detail, run_id)
    if detail is None or task not in detail.groups:
        raise HTTPException(404, f"task {task!r} of run {run_id!r} not found")
    return templates.TemplateResponse(request, "group.html", {
        "run_id": run_id, "task_id": task, "initial": {"run": detail.model_dump(mode="json")}})


def _trajectory_files(store: ObjectStore, trajectory: str, sampler: LiveSampler,
                      ) -> tuple[dict[str, Any] | None, list[StepView]]:
    """The manifest (None while running) and stored steps of `trajectory`. Raises: HTTPException(404) when
    nothing of it is stored and the event stream showed no rollout of that name."""
    names = stored_step_names(store, trajectory)
    try:
        manifest = json.loads(store.get(f"{trajectory}/manifest.json"))
    except (KeyError, ValueError):
        manifest = None
    if manifest is None and not names and not sampler.knows(trajectory):
        raise HTTPException(404, f"trajectory {trajectory} not found (nothing stored yet)")
    return manifest, load_steps(store, trajectory, (manifest or {}).get("steps") or names)


@router.get("/trajectories/{run_id}/{name}", response_class=HTMLResponse)
def trajectory_page(request: Request, run_id: RunIdPath, name: TrajectoryPath,
                    store: Annotated[ObjectStore, Depends(get_store)],
                    sampler: Annotated[LiveSampler, Depends(get_sampler)]) -> HTMLResponse:
    """The trajectory viewer: each step's screenshot with its action drawn at the real coordinates, thought
    and parsed action in one line each, code folded away, timings as a bar, tokens and mean logprob;
    Prev/Next with the keyboard; a download link. While the rollout runs, its steps appear as they are
    stored."""
    trajectory = f"{run_id}/{name}"
    manifest, steps = _trajectory_files(store, trajectory, sampler)
    try:
        evaluation = json.loads(store.get(f"{trajectory}/evaluation.json"))
    except KeyError:
        evaluation = None
    max_step_ms = max([float(s.timings.get("step_ms") or 0.0) for s in steps] + [1.0])
    return templates.TemplateResponse(request, "trajectory.html", {
        "trajectory": trajectory, "manifest": manifest, "evaluation": evaluation, "steps": steps,
        "max_step_ms": max_step_ms})


class StepsFragment(BaseModel):
    """Steps stored after the page's last one, as HTML sections (`step.html`); `last` is the last step
    number included (the page's `after` when none); `ended`: the manifest is stored (reload for the outcome)."""

    html: str
    last: int
    ended: bool


@router.get("/trajectories/{run_id}/{name}/steps", response_model=StepsFragment)
def trajectory_steps_fragment(run_id: RunIdPath, name: TrajectoryPath,
                              store: Annotated[ObjectStore, Depends(get_store)],
                              sampler: Annotated[LiveSampler, Depends(get_sampler)],
                              after: Annotated[int, Query(ge=-1)] = -1) -> StepsFragment:
    """The live trajectory page's poll (the store, not Redis): steps stored after step `after`."""
    trajectory = f"{run_id}/{name}"
    manifest, steps = _trajectory_files(store, trajectory, sampler)
    new = [s for s in steps if s.step > after]
    template = templates.get_template("step.html")
    return StepsFragment(html="".join(template.render(s=s) for s in new),
                         last=new[-1].step if new else after, ended=manifest is not None)
