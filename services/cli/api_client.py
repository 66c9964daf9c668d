"""Thin HTTP client of the producer API used by the CLI's client commands (submit, watch, runs, ...).

Routes (SPEC section 3, `services/task_producer/api.py`): `POST/GET /v1/runs`, `GET/DELETE
/v1/runs/{id}`, `GET /v1/envs`, `GET /v1/queues`, `GET /v1/trajectories/{run_id}/{name}[/{file}]`.
When the environment variable `CUA_TOKEN` is set, every request carries `Authorization: Bearer
$CUA_TOKEN` (the producer's write routes may require it).
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import quote

import httpx

from common.task import OSWorldTask

#: Environment variable holding the producer's bearer token (sent when set).
TOKEN_ENV = "CUA_TOKEN"


class ProducerError(RuntimeError):
    """The producer rejected a request or could not be reached; the message (one line) says why."""


def _segment(value: str) -> str:
    """`value` quoted as one URL path segment (a `/` in a task id cannot change the route)."""
    return quote(value, safe="")


def auth_headers() -> dict[str, str]:
    """`{"Authorization": "Bearer <token>"}` when `CUA_TOKEN` is set and not blank, else `{}`."""
    token = os.environ.get(TOKEN_ENV, "").strip()
    return {"Authorization": f"Bearer {token}"} if token else {}


class ProducerClient:
    """The producer's routes with explicit timeouts (10 s, 3 s to connect); a context manager.

    Every method raises ProducerError naming the URL when the producer cannot be reached, and the
    method, path, HTTP status and the API's `error`/`detail` when it answers 4xx/5xx.
    """

    def __init__(self, base_url: str) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ProducerError(f"producer URL {base_url!r} must start with http:// or https://")
        self.base_url = base_url.rstrip("/")
        self.http = httpx.Client(base_url=self.base_url, timeout=httpx.Timeout(10.0, connect=3.0),
                                 headers=auth_headers())

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise ProducerError(f"cannot reach the producer at {self.base_url}: {exc!r}") from exc
        if response.status_code >= 400:
            try:
                body = response.json()
                detail = body.get("error") or body.get("detail")
            except (ValueError, AttributeError):
                detail = response.text[:300]
            hint = f" (set {TOKEN_ENV} to the producer's API token)" if response.status_code in (401, 403) else ""
            raise ProducerError(f"{method} {path} -> HTTP {response.status_code}: {detail}{hint}")
        return response

    def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        response = self._request(method, path, **kwargs)
        try:
            return dict(response.json())
        except (ValueError, TypeError) as exc:
            raise ProducerError(f"{method} {path}: the answer is not a JSON object ({exc})") from exc

    def submit(self, tasks: list[OSWorldTask], **run_fields: Any) -> dict[str, Any]:
        """`POST /v1/runs` of `tasks`; `run_fields` are the other `RunRequest` fields. Returns the API's JSON."""
        body = {"tasks": [t.to_json_dict() for t in tasks], **run_fields}
        return self._call("POST", "/v1/runs", json=body)

    def run(self, run_id: str) -> dict[str, Any]:
        """`GET /v1/runs/{run_id}`: counts, success rate, and per-rollout records."""
        return self._call("GET", f"/v1/runs/{_segment(run_id)}")

    def runs(self, limit: int = 50) -> dict[str, Any]:
        """`GET /v1/runs`: `{"runs": [summary without rollouts, ...]}`, newest first."""
        return self._call("GET", "/v1/runs", params={"limit": limit})

    def cancel(self, run_id: str) -> dict[str, Any]:
        """`DELETE /v1/runs/{run_id}`: `{"run_id", "cancelled_queued"}`."""
        return self._call("DELETE", f"/v1/runs/{_segment(run_id)}")

    def envs(self) -> dict[str, Any]:
        """`GET /v1/envs`: `{"total", "leased", "idle", "unhealthy", "envs": [...]}`."""
        return self._call("GET", "/v1/envs")

    def stats(self, run_id: str) -> dict[str, Any]:
        """`GET /v1/runs/{run_id}/stats`: success with Wilson intervals, pass@k, latency, cost."""
        return self._call("GET", f"/v1/runs/{_segment(run_id)}/stats")

    def queues(self) -> dict[str, Any]:
        """`GET /v1/queues`: `{"queues": [{"queue", "priority", "depth", ...}, ...]}`."""
        return self._call("GET", "/v1/queues")

    def trajectory(self, run_id: str, name: str) -> dict[str, Any]:
        """`GET /v1/trajectories/{run_id}/{name}` (`name` = `{task_id}_{rollout_index}`):
        `{"trajectory", "manifest", "files"}`."""
        return self._call("GET", f"/v1/trajectories/{_segment(run_id)}/{_segment(name)}")

    def trajectory_file(self, run_id: str, name: str, file: str) -> bytes:
        """The bytes of one stored file of a trajectory."""
        return self._request("GET", f"/v1/trajectories/{_segment(run_id)}/{_segment(name)}/{_segment(file)}").content

    def close(self) -> None:
        """Close the connection pool."""
        self.http.close()

    def __enter__(self) -> ProducerClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
