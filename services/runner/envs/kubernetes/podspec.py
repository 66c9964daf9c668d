"""Env pod manifests: the pod template (YAML file) plus our names, labels and annotations.

Labels (selectable, values sanitized to Kubernetes' label-value syntax: at most 63 characters of
`[A-Za-z0-9._-]`, alphanumeric at both ends): `app=cua-env`, `app.kubernetes.io/managed-by=cua-rollout`,
`cua-rollout/mode` (`per-rollout` | `warm-pool`), `cua-rollout/pool`, `cua-rollout/runner` (the
creating runner), and for per-rollout pods `cua-rollout/run-id`, `cua-rollout/rollout-id`,
`cua-rollout/lease-owner`. The exact, unsanitized values are in annotations of the same names.
Pod names (= env ids in the registry) are `cua-env-<10 hex>` / `cua-pool-<pool>-<10 hex>`.
"""

from __future__ import annotations

import copy
import re
import secrets
from pathlib import Path
from typing import Any

import yaml

APP_LABEL = ("app", "cua-env")
MANAGED_BY = ("app.kubernetes.io/managed-by", "cua-rollout")
MODE = "cua-rollout/mode"
POOL = "cua-rollout/pool"
RUNNER = "cua-rollout/runner"
RUN_ID = "cua-rollout/run-id"
ROLLOUT_ID = "cua-rollout/rollout-id"
LEASE_OWNER = "cua-rollout/lease-owner"
PER_ROLLOUT = "per-rollout"
WARM_POOL = "warm-pool"

_BAD = re.compile(r"[^A-Za-z0-9._-]+")
_NAME_BAD = re.compile(r"[^a-z0-9-]+")


def label_value(value: str) -> str:
    """`value` as a valid label value: invalid characters become `-`, at most 63 characters,
    alphanumeric at both ends ("" stays "")."""
    cleaned = _BAD.sub("-", value)[:63]
    return cleaned.strip("-_.")


def selector(pool: str, mode: str | None = None) -> str:
    """Label selector of our env pods of `pool` (and `mode` when given)."""
    parts = [f"{APP_LABEL[0]}={APP_LABEL[1]}", f"{MANAGED_BY[0]}={MANAGED_BY[1]}", f"{POOL}={label_value(pool)}"]
    if mode:
        parts.append(f"{MODE}={mode}")
    return ",".join(parts)


def new_pod_name(mode: str, pool: str) -> str:
    """A fresh pod name: `cua-env-<10 hex>` (per-rollout) or `cua-pool-<pool>-<10 hex>` (warm pool)."""
    suffix = secrets.token_hex(5)
    if mode == PER_ROLLOUT:
        return f"cua-env-{suffix}"
    pool_part = _NAME_BAD.sub("-", pool.lower()).strip("-")[:30] or "pool"
    return f"cua-pool-{pool_part}-{suffix}"


class PodTemplate:
    """A pod manifest loaded from a YAML file (a `Pod`, or a bare pod `spec`, or a `PodTemplate`'s
    `template`). Raises: ValueError naming the file and the problem (missing, not YAML, no
    containers)."""

    def __init__(self, path: Path, default_port: int = 5000) -> None:
        try:
            document = yaml.safe_load(Path(path).read_text())
        except OSError as exc:
            raise ValueError(f"pod template {path}: cannot read it: {exc}") from exc
        except yaml.YAMLError as exc:
            raise ValueError(f"pod template {path}: not valid YAML: {exc}") from exc
        if not isinstance(document, dict):
            raise ValueError(f"pod template {path}: expected a mapping (a Pod manifest)")
        if document.get("kind") == "PodTemplate":
            document = document.get("template") or {}
        if "spec" not in document and "containers" in document:
            document = {"spec": document}
        containers = (document.get("spec") or {}).get("containers")
        if not isinstance(containers, list) or not containers:
            raise ValueError(f"pod template {path}: spec.containers must list at least one container")
        self.path = Path(path)
        self.manifest: dict[str, Any] = document
        self.port = self._port(containers, default_port)

    @staticmethod
    def _port(containers: list[dict[str, Any]], default_port: int) -> int:
        """The env server's port: the container port named `http`, else the first one, else `default_port`."""
        ports = [p for c in containers for p in (c.get("ports") or [])]
        for port in ports:
            if port.get("name") == "http":
                return int(port["containerPort"])
        return int(ports[0]["containerPort"]) if ports else default_port

    def render(self, name: str, namespace: str, labels: dict[str, str],
               annotations: dict[str, str] | None = None) -> dict[str, Any]:
        """The pod manifest to create: the template with `name`, `namespace`, our labels added to
        its own, our annotations, `restartPolicy: Never` unless the template sets one."""
        pod = copy.deepcopy(self.manifest)
        pod["apiVersion"], pod["kind"] = "v1", "Pod"
        metadata = pod.setdefault("metadata", {}) or {}
        pod["metadata"] = metadata
        metadata.pop("generateName", None)
        metadata["name"], metadata["namespace"] = name, namespace
        metadata["labels"] = {**(metadata.get("labels") or {}), **{k: label_value(v) for k, v in labels.items()}}
        metadata["annotations"] = {**(metadata.get("annotations") or {}), **(annotations or {})}
        pod["spec"].setdefault("restartPolicy", "Never")
        return pod


def pod_labels(mode: str, pool: str, runner_id: str, run_id: str = "", rollout_id: str = "",
               owner: str = "") -> tuple[dict[str, str], dict[str, str]]:
    """`(labels, annotations)` of a new env pod (see the module docstring)."""
    labels = {APP_LABEL[0]: APP_LABEL[1], MANAGED_BY[0]: MANAGED_BY[1], MODE: mode, POOL: pool, RUNNER: runner_id}
    extra = {RUN_ID: run_id, ROLLOUT_ID: rollout_id, LEASE_OWNER: owner}
    labels.update({k: v for k, v in extra.items() if v})
    annotations = {k: v for k, v in {RUNNER: runner_id, **extra}.items() if v}
    return labels, annotations
