"""Typed Python client of the producer API for trainers and evaluators (httpx + server-sent events).

    with RolloutClient("http://localhost:8080", token=os.environ["CUA_TOKEN"]) as client:  # the producer's port
        run = client.submit(tasks, rollouts_per_task=8, policy_version="step-120")
        for rollout in client.iter_finished(run.run_id):   # as each rollout finishes
            ...                                             # rollout.reward, rollout.trajectory
        summary = client.wait(run.run_id, timeout_s=600)

`iter_finished` follows `GET /v1/runs/{run_id}/events` and reconnects from its last cursor when the
connection drops, so every finished rollout is yielded exactly once per call.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal
from urllib.parse import quote

import httpx
from httpx_sse import connect_sse
from pydantic import BaseModel, TypeAdapter, ValidationError

from common.flaky import FlakyReport
from common.run import AdaptiveRollouts, Priority, RunRequest, SamplingParams
from common.rundiff import RunDiff
from common.runstate import RolloutRecord, RunSummary
from common.stats import RunStats
from common.task import OSWorldTask


class RolloutClientError(RuntimeError):
    """The producer answered with an error status or could not be reached; the one-line message names
    the method, path, HTTP status and the API's `error`/`detail` (or the URL that did not answer)."""


#: Environment variable holding the producer's bearer token (the CLI sends it when set).
TOKEN_ENV = "CUA_TOKEN"


def path_segment(value: str) -> str:
    """`value` quoted as one URL path segment (a `/` in an id cannot change the route)."""
    return quote(value, safe="")


def trajectory_path(trajectory: str) -> str:
    """`<run>/<task>_<index>` with each part quoted as a path segment."""
    return "/".join(path_segment(part) for part in trajectory.split("/", 1))


#: pydantic error types that mean "wrong type" (a TypeError from `submit`); any other is a wrong value (ValueError).
_TASKS = TypeAdapter(list[OSWorldTask])
_TYPE_ERRORS = ("_type", "is_instance_of", "missing", "extra_forbidden", "model_attributes_type")


def run_request_body(tasks: Sequence[OSWorldTask | Mapping[str, Any]], fields: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON body of `POST /v1/runs` for `tasks` and the run `fields` given (None: the producer's default),
    validated first as the producer does (`common.run.RunRequest`), strictly for the run fields: `"8"` is not
    an int. Task dicts are validated as task JSON (`OSWorldTask`, as the producer reads them).

    Raises: TypeError for a field of the wrong type, ValueError for a wrong value (out of range, unknown agent,
    a bad task); each message names the field (`rollouts_per_task: Input should be a valid integer`)."""
    given = {name: value for name, value in fields.items() if value is not None}
    if isinstance(given.get("priority"), str) and not isinstance(given["priority"], Priority):
        try:
            given["priority"] = Priority(given["priority"])
        except ValueError:
            raise ValueError(f"priority: {given['priority']!r} is not one of {[p.value for p in Priority]}") from None
    for name in ("agent_options", "metadata", "sampling", "adaptive"):
        if isinstance(given.get(name), Mapping):
            given[name] = dict(given[name])
    if isinstance(tasks, (str, bytes, Mapping)) or not isinstance(tasks, Sequence):
        raise TypeError(f"tasks: a sequence of OSWorldTask or task dicts, not {type(tasks).__name__}")
    try:
        models = _TASKS.validate_python(list(tasks))  # lax, as the producer reads task JSON
        request = RunRequest.model_validate({"tasks": models, **given}, strict=True)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_input=False)
        prefix = "" if exc.title == RunRequest.__name__ else "tasks."
        message = "; ".join(f"{prefix}{'.'.join(map(str, e['loc'])) or 'run'}: "
                            f"{e['msg'].removeprefix('Value error, ')}" for e in errors)
        if any(e["type"].endswith(_TYPE_ERRORS) for e in errors):
            raise TypeError(message) from None
        raise ValueError(message) from None
    return request.model_dump(mode="json", exclude_unset=True)


class SubmittedRun(BaseModel):
    """What `POST /v1/runs` answered: the run id and how many rollouts were enqueued / skipped."""

    run_id: str
    enqueued: int
    already_present: int = 0
    created: bool = True
    skipped: int = 0
    unsupported: dict[str, list[str]] = {}


class RolloutClient:
    """Client of one producer (`base_url`: the producer listens on port 8080 by default, `PRODUCER_PORT`, e.g.
    `http://localhost:8080`); `token` (the producer's `PRODUCER_API_TOKEN`, which the CLI reads from `CUA_TOKEN`)
    is sent as `Authorization: Bearer <token>` on every request. Use as a context manager or call `close()`."""

    def __init__(self, base_url: str, token: str | None = None, timeout_s: float = 30.0,
                 connect_timeout_s: float | None = None) -> None:
        """Raises: RolloutClientError when `base_url` is not an http(s) URL."""
        if not base_url.startswith(("http://", "https://")):
            raise RolloutClientError(f"producer URL {base_url!r} must start with http:// or https://")
        self.base_url = base_url.rstrip("/")
        headers = {"Authorization": f"Bearer {token.strip()}"} if token and token.strip() else {}
        self._http = httpx.Client(base_url=self.base_url, headers=headers,
                                  timeout=httpx.Timeout(timeout_s, connect=connect_timeout_s or timeout_s))

    def __enter__(self) -> RolloutClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """One request to the producer (`path` under its base URL; `kwargs` as for httpx).

        Raises: RolloutClientError naming the URL when the producer cannot be reached, and the method,
        path, status and the API's `error`/`detail` for a 4xx/5xx answer (401/403 add a hint to set
        `CUA_TOKEN`)."""
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise RolloutClientError(f"cannot reach the producer at {self.base_url}: {exc!r}") from exc
        if response.status_code >= 400:
            try:
                body = response.json()
                detail = body.get("error") or body.get("detail")
            except (ValueError, AttributeError):
                detail = response.text[:300]
            hint = f" (set {TOKEN_ENV} to the producer's API token)" if response.status_code in (401, 403) else ""
            raise RolloutClientError(f"{method} {path}: HTTP {response.status_code}: {detail}{hint}")
        return response

    def request_json(self, method: str, path: str, **kwargs: Any) -> Any:
        """`request()`'s answer decoded from JSON. Raises: RolloutClientError (as `request`, or when the
        answer is not JSON)."""
        response = self.request(method, path, **kwargs)
        try:
            return response.json()
        except ValueError as exc:
            raise RolloutClientError(f"{method} {path}: the answer is not JSON ({exc})") from exc


    def submit(self, tasks: Sequence[OSWorldTask | Mapping[str, Any]], *, rollouts_per_task: int | None = None,
               max_steps: int | None = None, priority: Priority | Literal["high", "default", "low"] | None = None,
               agent: str | None = None, agent_options: Mapping[str, Any] | None = None, model: str | None = None,
               sampling: SamplingParams | Mapping[str, Any] | None = None, policy_version: str | None = None,
               max_staleness: int | None = None, idempotency_key: str | None = None, run_id: str | None = None,
               metadata: Mapping[str, Any] | None = None, adaptive: AdaptiveRollouts | Mapping[str, Any] | None = None,
               on_unsupported: Literal["reject", "skip"] | None = None) -> SubmittedRun:
        """Submit a run of `tasks` (OSWorld task models or their JSON dicts); the keyword arguments are the
        other fields of `common.run.RunRequest` (their meaning and limits there), None leaving the producer's
        default. The body is validated before any request (`run_request_body`).

        Raises: TypeError for an unknown keyword or a field of the wrong type, ValueError for a wrong value
        (both before any HTTP, naming the field); RolloutClientError with the producer's error text (e.g. 401,
        or a 422 for a limit only the producer knows, such as `PRODUCER_MAX_ROLLOUTS_PER_RUN`).
        """
        body = run_request_body(tasks, {
            "rollouts_per_task": rollouts_per_task, "max_steps": max_steps, "priority": priority, "agent": agent,
            "agent_options": agent_options, "model": model, "sampling": sampling, "policy_version": policy_version,
            "max_staleness": max_staleness, "idempotency_key": idempotency_key, "run_id": run_id,
            "metadata": metadata, "adaptive": adaptive, "on_unsupported": on_unsupported})
        return SubmittedRun.model_validate(self.request_json("POST", "/v1/runs", json=body))

    def run(self, run_id: str) -> RunSummary:
        """The run's summary with its rollout records. Raises: RolloutClientError (404 when unknown)."""
        return RunSummary.model_validate(self.request_json("GET", f"/v1/runs/{path_segment(run_id)}"))

    def stats(self, run_id: str) -> RunStats:
        """`GET /v1/runs/{run_id}/stats`. Raises: RolloutClientError (404 when unknown)."""
        return RunStats.model_validate(self.request_json("GET", f"/v1/runs/{path_segment(run_id)}/stats"))

    def diff(self, run_a: str, run_b: str) -> RunDiff:
        """`GET /v1/runs/{run_a}/diff/{run_b}`. Raises: RolloutClientError (404 naming the run)."""
        path = f"/v1/runs/{path_segment(run_a)}/diff/{path_segment(run_b)}"
        return RunDiff.model_validate(self.request_json("GET", path))

    def flaky(self, runs: int = 50) -> FlakyReport:
        """`GET /v1/flaky`: flaky tasks among the newest `runs` runs."""
        return FlakyReport.model_validate(self.request_json("GET", "/v1/flaky", params={"runs": runs}))

    def quarantine(self, task_ids: Sequence[str] = (), remove: bool = False) -> list[str]:
        """Put `task_ids` on the quarantine list (or take them off with `remove`); returns the list.
        Raises: RolloutClientError (401 without the producer's token, 422 for a bad task id)."""
        listed: list[str] = list(self.request_json("GET", "/v1/quarantine")["task_ids"])
        for task_id in task_ids:
            path = f"/v1/quarantine/{path_segment(task_id)}"
            listed = list(self.request_json("DELETE" if remove else "PUT", path)["task_ids"])
        return listed

    def trajectories(self, run_id: str) -> list[dict[str, Any]]:
        """The run's stored trajectories: `[{"trajectory": "<run>/<task>_<index>", "manifest": {...}}]`."""
        return list(self.request_json("GET", f"/v1/runs/{path_segment(run_id)}/trajectories")["trajectories"])

    def trajectory_files(self, trajectory: str) -> list[str]:
        """File names stored for one trajectory (`<run>/<task>_<index>`)."""
        return list(self.request_json("GET", f"/v1/trajectories/{trajectory_path(trajectory)}")["files"])

    def trajectory_file(self, trajectory: str, name: str) -> bytes:
        """The bytes of one stored file of a trajectory. Raises: RolloutClientError (404 when missing)."""
        return self.request("GET", f"/v1/trajectories/{trajectory_path(trajectory)}/{path_segment(name)}").content

    def iter_finished(self, run_id: str, cursor: str | None = None,
                      reconnect_attempts: int = 5) -> Iterator[RolloutRecord]:
        """Yield each rollout of the run as it finishes (terminal status), in finishing order,
        until every rollout is terminal. `cursor`: resume after that event id (see `last_cursor`).
        A dropped connection is resumed from the last event, up to `reconnect_attempts` times in a row.

        Raises: RolloutClientError on an error status (404 unknown run); httpx.TransportError once
        reconnecting failed `reconnect_attempts` times.
        """
        failures = 0
        while True:
            params = {"cursor": cursor} if cursor else {}
            try:
                with connect_sse(self._http, "GET", f"/v1/runs/{path_segment(run_id)}/events", params=params,
                                 timeout=httpx.Timeout(self._http.timeout.connect, read=60.0)) as source:
                    if source.response.status_code >= 400:
                        source.response.read()
                        raise RolloutClientError(f"GET /v1/runs/{run_id}/events: HTTP "
                                                 f"{source.response.status_code}: {source.response.text}")
                    for event in source.iter_sse():
                        failures = 0
                        if event.event == "end":
                            return
                        if event.event == "rollout":
                            cursor = event.id or cursor
                            self.last_cursor = cursor
                            yield RolloutRecord.model_validate_json(event.data)
            except httpx.TransportError:
                failures += 1
                if failures > reconnect_attempts:
                    raise
                time.sleep(min(0.2 * 2 ** failures, 5.0))  # back off before resuming from the cursor

    last_cursor: str | None = None
    """The event id of the last rollout `iter_finished` yielded (to resume in a later call)."""

    def wait(self, run_id: str, timeout_s: float = 3600.0, poll_s: float = 1.0) -> RunSummary:
        """Poll until every rollout of the run is terminal and return its summary.

        Raises: TimeoutError naming the run and its progress; RolloutClientError (404 when unknown).
        """
        deadline = time.monotonic() + timeout_s
        while True:
            summary = self.run(run_id)
            if summary.finished:
                return summary
            if time.monotonic() >= deadline:
                raise TimeoutError(f"run {run_id} not finished after {timeout_s:.0f} s: "
                                   f"{summary.done}/{summary.total} rollouts done")
            time.sleep(poll_s)
