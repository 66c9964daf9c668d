"""Shared state of the producer's routers, handed out with FastAPI `Depends`.

`create_app` stores the Redis client and settings on `app.state`; routers ask for them here instead
of closing over them, so each router module stands alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import redis
from fastapi import Path, Request
from fastapi.security import HTTPBearer

from common.auth import bearer_roles
from common.ids import (
    FILE_NAME_MAX,
    FILE_NAME_PATTERN,
    RUN_ID_MAX,
    RUN_ID_PATTERN,
    TRAJECTORY_NAME_MAX,
    TRAJECTORY_NAME_PATTERN,
)
from common.objectstore import ObjectStore, open_store
from common.ui_session import cookie_ok
from services.task_producer.settings import ProducerSettings

if TYPE_CHECKING:
    from services.task_producer.live.sampler import LiveSampler

#: Path parameters: ids of the shapes of `common.ids`, so none can address objects outside its run.
RunIdPath = Annotated[str, Path(min_length=1, max_length=RUN_ID_MAX, pattern=RUN_ID_PATTERN)]
TrajectoryPath = Annotated[str, Path(min_length=1, max_length=TRAJECTORY_NAME_MAX, pattern=TRAJECTORY_NAME_PATTERN,
                                     description="`{task_id}_{rollout_index}`")]
FilePath = Annotated[str, Path(min_length=1, max_length=FILE_NAME_MAX, pattern=FILE_NAME_PATTERN)]


def get_redis(request: Request) -> redis.Redis:
    """The producer's Redis client (`REDIS_URL`)."""
    client: redis.Redis = request.app.state.redis
    return client


def get_settings(request: Request) -> ProducerSettings:
    """The producer's settings."""
    settings: ProducerSettings = request.app.state.settings
    return settings


def get_store(request: Request) -> ObjectStore:
    """The trajectory store (`STORE_URL`), opened on first use (the producer starts without it)."""
    state = request.app.state
    if getattr(state, "store", None) is None:
        state.store = open_store(state.settings)
    store: ObjectStore = state.store
    return store


def get_sampler(request: Request) -> LiveSampler:
    """The dashboard's sampler (`live/sampler.py`): the one reader of Redis behind every dashboard page."""
    sampler: LiveSampler = request.app.state.sampler
    return sampler


BEARER = HTTPBearer(auto_error=False, description="`Authorization: Bearer <PRODUCER_API_TOKEN>`")
#: The dashboard's cookie: a browser cannot send a bearer header, so `/ui/login` sets a session here (never the
#: token: `common.ui_session`).
UI_COOKIE = "cua_token"


#: The dependency of every `/v1` and `/ui` router (`common.auth.bearer_roles`): `Authorization: Bearer
#: <PRODUCER_API_TOKEN>`, or the dashboard's session cookie (`UI_COOKIE`, `common.ui_session`: a signed, expiring
#: proof of the token, never the token); open when the token is not set.
#: Raises: HTTPException(401).
require_token = bearer_roles(lambda request: {"submitter": get_settings(request).api_token}, "PRODUCER_API_TOKEN",
                             cookie=UI_COOKIE, cookie_proves=cookie_ok)
