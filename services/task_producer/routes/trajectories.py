"""Stored trajectories (DART layout, SPEC section 7): list a run's, read one's manifest and files."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Response
from pydantic import BaseModel

from common.objectstore import ObjectStore
from services.task_producer.deps import FilePath, RunIdPath, TrajectoryPath, get_store

router = APIRouter(tags=["trajectories"])


class TrajectoryRef(BaseModel):
    """One stored trajectory (`<run_id>/<task_id>_<rollout_index>`) and its manifest (None while
    the episode has not ended)."""

    trajectory: str
    manifest: dict[str, Any] | None


class TrajectoryList(BaseModel):
    """A run's stored trajectories."""

    run_id: str
    trajectories: list[TrajectoryRef]


class TrajectoryView(TrajectoryRef):
    """One trajectory with the names of its stored files."""

    files: list[str]


def _manifest(store: ObjectStore, prefix: str) -> dict[str, Any] | None:
    try:
        manifest: dict[str, Any] = json.loads(store.get(f"{prefix}/manifest.json"))
    except KeyError:
        return None
    return manifest


@router.get("/v1/runs/{run_id}/trajectories", response_model=TrajectoryList)
def list_trajectories(run_id: RunIdPath, store: Annotated[ObjectStore, Depends(get_store)]) -> TrajectoryList:
    """Stored trajectories of a run: `{task_id}_{rollout_index}` directories with their manifests."""
    names = sorted({k.split("/")[1] for k in store.list(f"{run_id}/") if k.count("/") >= 2})
    return TrajectoryList(run_id=run_id, trajectories=[
        TrajectoryRef(trajectory=f"{run_id}/{name}", manifest=_manifest(store, f"{run_id}/{name}")) for name in names])


@router.get("/v1/trajectories/{run_id}/{name}", response_model=TrajectoryView)
def get_trajectory(run_id: RunIdPath, name: TrajectoryPath,
                   store: Annotated[ObjectStore, Depends(get_store)]) -> TrajectoryView:
    """Manifest and file list of one trajectory. 404 when nothing is stored for it."""
    files = store.list(f"{run_id}/{name}/")
    if not files:
        raise HTTPException(404, f"trajectory {run_id}/{name} not found")
    return TrajectoryView(trajectory=f"{run_id}/{name}", manifest=_manifest(store, f"{run_id}/{name}"),
                          files=[f.split("/")[-1] for f in files])


@router.get("/v1/trajectories/{run_id}/{name}/{file}", response_class=Response,
            responses={200: {"content": {"image/png": {}, "application/json": {}, "text/plain": {}}}})
def get_trajectory_file(run_id: RunIdPath, name: TrajectoryPath, file: FilePath,
                        store: Annotated[ObjectStore, Depends(get_store)]) -> Response:
    """One stored file of a trajectory (PNG, JSON or text). 404 when missing."""
    try:
        data = store.get(f"{run_id}/{name}/{file}")
    except (KeyError, ValueError):
        raise HTTPException(404, f"file {run_id}/{name}/{file} not found") from None
    media = "image/png" if file.endswith(".png") else (
        "application/json" if file.endswith(".json") else "text/plain")
    return Response(data, media_type=media)
