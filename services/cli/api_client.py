"""Thin HTTP client of the producer API used by the CLI's client commands (submit, watch, runs, ...).

Routes (SPEC section 3, `services/task_producer/api.py`): `POST/GET /v1/runs`, `GET/DELETE
/v1/runs/{id}`, `GET /v1/envs`, `GET /v1/queues`, `GET /v1/trajectories/{run_id}/{name}[/{file}]`.
When the environment variable `CUA_TOKEN` is set, every request carries `Authorization: Bearer
$CUA_TOKEN` (the producer's write routes may require it).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from common.task import OSWorldTask
from cua_rollout.client import TOKEN_ENV, RolloutClient, RolloutClientError, path_segment, run_request_body

__all__ = ["TOKEN_ENV", "ProducerClient", "ProducerError", "auth_token"]

#: The producer failed or could not be reached (the typed client's error: one line naming why).
ProducerError = RolloutClientError


def auth_token() -> str | None:
    """`$CUA_TOKEN` when set and not blank, else None."""
    return os.environ.get(TOKEN_ENV, "").strip() or None


class ProducerClient:
    """The producer's routes as JSON dicts (what `--json` prints), over the typed client's transport
    (`cua_rollout.client.RolloutClient`: bearer token from `CUA_TOKEN`, 10 s timeouts, 3 s to connect);
    a context manager.

    Every method raises ProducerError naming the URL when the producer cannot be reached, and the
    method, path, HTTP status and the API's `error`/`detail` when it responds with 4xx/5xx.
    """

    def __init__(self, base_url: str) -> None:
        self.client = RolloutClient(base_url, token=auth_token(), timeout_s=10.0, connect_timeout_s=3.0)
        self.base_url = self.client.base_url

    def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        response = self.client.request_json(method, path, **kwargs)
        if not isinstance(response, dict):
            raise ProducerError(f"{method} {path}: the response is not a JSON object")
        return response

    def submit(self, tasks: list[OSWorldTask], *, rollouts_per_task: int | None = None, max_steps: int | None = None,
               priority: str | None = None, agent: str | None = None, agent_options: Mapping[str, Any] | None = None,
               model: str | None = None, run_id: str | None = None) -> dict[str, Any]:
        """`POST /v1/runs` of `tasks` with the run fields the CLI sets (None: the producer's default), validated
        first (`cua_rollout.client.run_request_body`). Returns the API's JSON.

        Raises: TypeError / ValueError naming a bad field (before any request); ProducerError."""
        body = run_request_body(tasks, {"rollouts_per_task": rollouts_per_task, "max_steps": max_steps,
                                        "priority": priority, "agent": agent, "agent_options": agent_options,
                                        "model": model, "run_id": run_id})
        return self._call("POST", "/v1/runs", json=body)

    def run(self, run_id: str) -> dict[str, Any]:
        """`GET /v1/runs/{run_id}`: counts, success rate, and per-rollout records."""
        return self._call("GET", f"/v1/runs/{path_segment(run_id)}")

    def runs(self, limit: int = 50) -> dict[str, Any]:
        """`GET /v1/runs`: `{"runs": [summary without rollouts, ...]}`, newest first."""
        return self._call("GET", "/v1/runs", params={"limit": limit})

    def cancel(self, run_id: str) -> dict[str, Any]:
        """`DELETE /v1/runs/{run_id}`: `{"run_id", "cancelled_queued"}`."""
        return self._call("DELETE", f"/v1/runs/{path_segment(run_id)}")

    def envs(self) -> dict[str, Any]:
        """`GET /v1/envs`: `{"total", "leased", "idle", "unhealthy", "envs": [...]}`."""
        return self._call("GET", "/v1/envs")

    def stats(self, run_id: str) -> dict[str, Any]:
        """`GET /v1/runs/{run_id}/stats`: success with Wilson intervals, pass@k, latency, cost."""
        return self._call("GET", f"/v1/runs/{path_segment(run_id)}/stats")

    def queues(self) -> dict[str, Any]:
        """`GET /v1/queues`: `{"queues": [{"queue", "priority", "depth", ...}, ...]}`."""
        return self._call("GET", "/v1/queues")

    def trajectory(self, run_id: str, name: str) -> dict[str, Any]:
        """`GET /v1/trajectories/{run_id}/{name}` (`name` = `{task_id}_{rollout_index}`):
        `{"trajectory", "manifest", "files"}`."""
        return self._call("GET", f"/v1/trajectories/{path_segment(run_id)}/{path_segment(name)}")

    def trajectory_file(self, run_id: str, name: str, file: str) -> bytes:
        """The bytes of one stored file of a trajectory."""
        return self.client.trajectory_file(f"{run_id}/{name}", file)

    def close(self) -> None:
        """Close the connection pool."""
        self.client.close()

    def __enter__(self) -> ProducerClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
