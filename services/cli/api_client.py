"""Thin HTTP client of the producer API used by the CLI (`submit`, `watch`, `stats`)."""

from __future__ import annotations

from typing import Any

import httpx

from common.task import OSWorldTask


class ProducerError(RuntimeError):
    """The producer rejected a request or could not be reached; the message says why."""


class ProducerClient:
    """`POST /v1/runs` and `GET /v1/runs/{id}` with explicit timeouts (10 s); a context manager."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")
        self.http = httpx.Client(base_url=self.base_url, timeout=httpx.Timeout(10.0, connect=3.0))

    def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        try:
            response = self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise ProducerError(f"cannot reach the producer at {self.base_url}: {exc}") from exc
        if response.status_code >= 400:
            try:
                body = response.json()
                detail = body.get("error") or body.get("detail")
            except ValueError:
                detail = response.text
            raise ProducerError(f"{method} {path} -> HTTP {response.status_code}: {detail}")
        return dict(response.json())

    def submit(self, tasks: list[OSWorldTask], **run_fields: Any) -> dict[str, Any]:
        """Submit a run of `tasks`; `run_fields` are the other `RunRequest` fields."""
        body = {"tasks": [t.to_json_dict() for t in tasks], **run_fields}
        return self._call("POST", "/v1/runs", json=body)

    def run(self, run_id: str) -> dict[str, Any]:
        """`GET /v1/runs/{run_id}` with per-rollout records."""
        return self._call("GET", f"/v1/runs/{run_id}")

    def close(self) -> None:
        """Close the connection pool."""
        self.http.close()

    def __enter__(self) -> ProducerClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
