"""The live dashboard's JSON (what `/ui` pages draw, docs/dashboard.md), all served from the sampler's
snapshot (`live/sampler.py`), never read from Redis per request: the snapshot and the last hour's series
(with `ETag`s: a poll that finds nothing new is a 304), a run's detail, server-sent events pushing each of
them when it changes, and the thumbnail of a running rollout's latest screenshot. Also a trajectory's stored
steps as they arrive (the trajectory page, read from the store) and its files as one ZIP archive."""

from __future__ import annotations

import asyncio
import io
import json
import zipfile
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, HTTPException, Path, Query, Request, Response
from pydantic import BaseModel
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.concurrency import run_in_threadpool

from common.blob_keys import check_blob_key
from common.ids import RUN_ID_MAX, RUN_ID_PATTERN
from common.objectstore import ObjectStore
from services.task_producer.deps import RunIdPath, TrajectoryPath, get_sampler, get_store
from services.task_producer.live.rundetail import RunDetail
from services.task_producer.live.sampler import LiveSampler, Snapshot
from services.task_producer.live.series import Series
from services.task_producer.live.thumbs import ThumbnailCache
from services.task_producer.ui.trajectory_view import StepView, load_steps, stored_step_names

router = APIRouter(prefix="/v1/dashboard", tags=["dashboard"])
#: Seconds between two looks of an event stream at the sampler's versions (memory only, no Redis).
STREAM_POLL_S = 0.25
THUMBNAILS = ThumbnailCache()
_NOT_YET = "the dashboard's first sample is not taken yet: try again in a second"


def _etagged(body: str, version: str, if_none_match: str | None) -> Response:
    etag = f'"{version}"'
    if if_none_match == etag:
        return Response(status_code=304, headers={"ETag": etag})
    return Response(body, media_type="application/json", headers={"ETag": etag, "Cache-Control": "no-cache"})


@router.get("/snapshot", response_model=Snapshot, responses={304: {"description": "unchanged (If-None-Match)"}})
def get_snapshot(sampler: Annotated[LiveSampler, Depends(get_sampler)],
                 if_none_match: Annotated[str | None, Header()] = None) -> Response:
    """Queues, env pool, replicas, newest runs, the wall (every leased env with its rollout's latest step)
    and the step rate, as of the sampler's last tick. `ETag`: its version. 503 before the first tick."""
    snapshot = sampler.snapshot
    if snapshot is None:
        raise HTTPException(503, _NOT_YET)
    return _etagged(snapshot.model_dump_json(), snapshot.version, if_none_match)


@router.get("/series", response_model=Series, responses={304: {"description": "unchanged (If-None-Match)"}})
def get_series(sampler: Annotated[LiveSampler, Depends(get_sampler)],
               if_none_match: Annotated[str | None, Header()] = None) -> Response:
    """The last hour of queue depth, envs leased / idle, in-flight model requests and steps per second
    (from Redis, or Prometheus when `PRODUCER_PROMETHEUS_URL` is set). `ETag`: its version."""
    return _etagged(sampler.series.model_dump_json(), sampler.series_version or "empty", if_none_match)


@router.get("/runs/{run_id}", response_model=RunDetail)
async def get_run_detail(run_id: RunIdPath, sampler: Annotated[LiveSampler, Depends(get_sampler)]) -> RunDetail:
    """A run's summary, statistics, curve over time (completed rollouts, success rate with its Wilson 95 %
    interval), its task groups and rollouts (failures first). 404 when the run is unknown."""
    detail = await run_in_threadpool(sampler.detail, run_id)
    if detail is None:
        raise HTTPException(404, f"run {run_id!r} not found")
    return detail


async def _events(sampler: LiveSampler, run_id: str | None, request: Request) -> AsyncIterator[Any]:
    sent = {"snapshot": "", "series": "", "run": ""}
    if run_id is not None and await run_in_threadpool(sampler.detail, run_id) is None:
        yield ServerSentEvent(data=f"run {run_id!r} not found", event="error")
        return
    while not await request.is_disconnected():
        snapshot = sampler.snapshot
        if snapshot is not None and snapshot.version != sent["snapshot"]:
            sent["snapshot"] = snapshot.version
            yield ServerSentEvent(data=snapshot.model_dump_json(), event="snapshot", id=snapshot.version)
        if sampler.series_version and sampler.series_version != sent["series"]:
            sent["series"] = sampler.series_version
            yield ServerSentEvent(data=sampler.series.model_dump_json(), event="series")
        if run_id is not None:
            sampler.watch(run_id)
            version = sampler.detail_version(run_id)
            detail = sampler.detail(run_id) if version else None
            if detail is not None and version != sent["run"]:
                sent["run"] = version
                yield ServerSentEvent(data=detail.model_dump_json(), event="run")
        await asyncio.sleep(STREAM_POLL_S)


#: Not in the OpenAPI document: an event stream never ends while the client listens, which schema-driven clients
#: and fuzzers (tests/e2e/test_schemathesis.py) cannot consume; docs/dashboard.md documents it.
@router.get("/stream", response_class=EventSourceResponse, include_in_schema=False)
async def stream(request: Request, sampler: Annotated[LiveSampler, Depends(get_sampler)],
                 run_id: Annotated[str | None, Query(max_length=RUN_ID_MAX, pattern=RUN_ID_PATTERN)] = None,
                 ) -> EventSourceResponse:
    """Server-sent events: the snapshot, the series and the run's detail (`run_id`), each sent at once and
    again whenever it changes (the sampler's tick, `PRODUCER_LIVE_INTERVAL_S`)."""
    return EventSourceResponse(_events(sampler, run_id, request), ping=15)


@router.get("/rollouts/{rollout_id}/shot", response_class=Response,
            responses={200: {"content": {"image/jpeg": {}}}, 404: {"description": "no screenshot of it"}})
async def rollout_shot(rollout_id: Annotated[str, Path(min_length=1, max_length=200)],
                       sampler: Annotated[LiveSampler, Depends(get_sampler)],
                       store: Annotated[ObjectStore, Depends(get_store)]) -> Response:
    """The latest screenshot of a rollout the event stream showed, as a JPEG thumbnail 480 pixels wide with
    its step's action drawn on it (the wall's tiles). 404 when the sampler knows no screenshot of it."""
    live = sampler.tracker.latest(rollout_id)
    shot = live.shot if live is not None else None
    if live is None or shot is None:
        raise HTTPException(404, f"no screenshot of rollout {rollout_id!r} on the event stream")

    def load(key: str) -> bytes:
        if key.startswith("inline:"):
            return sampler.tracker.inline_pngs[key]
        return store.get(check_blob_key(key))

    try:
        data = await run_in_threadpool(THUMBNAILS.get, shot, list(live.markers), load)
    except (KeyError, ValueError) as exc:
        raise HTTPException(404, f"screenshot of rollout {rollout_id!r}: {exc}") from None
    return Response(data, media_type="image/jpeg", headers={"Cache-Control": "private, max-age=3600"})


class TrajectorySteps(BaseModel):
    """A trajectory's steps stored so far after step `after` (the trajectory page's live view), and its
    manifest (None while the episode runs)."""

    trajectory: str
    manifest: dict[str, Any] | None
    steps: list[StepView]


@router.get("/trajectories/{run_id}/{name}/steps", response_model=TrajectorySteps)
def trajectory_steps(run_id: RunIdPath, name: TrajectoryPath, store: Annotated[ObjectStore, Depends(get_store)],
                     after: Annotated[int, Query(ge=-1, description="last step the page has (-1: none)")] = -1,
                     ) -> TrajectorySteps:
    """The steps the sink has stored of a trajectory after step `after` (read from the store, not Redis),
    and its manifest once the episode ended. 404 when nothing of it is stored yet."""
    trajectory = f"{run_id}/{name}"
    names = stored_step_names(store, trajectory)
    if not names and not store.list(f"{trajectory}/"):
        raise HTTPException(404, f"trajectory {trajectory} not found (nothing stored yet)")
    wanted = [n for n in names if int(n.removeprefix("step_").removesuffix(".json")) > after]
    try:
        manifest = json.loads(store.get(f"{trajectory}/manifest.json"))
    except KeyError:
        manifest = None
    return TrajectorySteps(trajectory=trajectory, manifest=manifest, steps=load_steps(store, trajectory, wanted))


@router.get("/trajectories/{run_id}/{name}/archive.zip", response_class=Response,
            responses={200: {"content": {"application/zip": {}}}, 404: {"description": "nothing stored"}})
def trajectory_archive(run_id: RunIdPath, name: TrajectoryPath,
                       store: Annotated[ObjectStore, Depends(get_store)]) -> Response:
    """Every stored file of a trajectory (screenshots, step records, manifest, reward, evaluation inputs) in
    one ZIP archive named `{run_id}_{name}.zip`, paths relative to the trajectory. 404 when nothing is stored."""
    prefix = f"{run_id}/{name}/"
    files = store.list(prefix)
    if not files:
        raise HTTPException(404, f"trajectory {run_id}/{name} not found")
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for key in files:
            archive.writestr(key.removeprefix(prefix), store.get(key))
    return Response(out.getvalue(), media_type="application/zip",
                    headers={"Content-Disposition": f'attachment; filename="{run_id}_{name}.zip"'})
