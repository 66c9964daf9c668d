"""What a pod's status says: ready (with its address), still starting (and why), or failed (and the
Kubernetes reason). Pure functions over the client's `V1Pod` objects.

Fatal while starting: a container waiting with `ImagePullBackOff`, `InvalidImageName`,
`ErrImageNeverPull`, `CreateContainerConfigError`, `CreateContainerError` or `CrashLoopBackOff`; any
container terminated (`OOMKilled`, `Error`, ...); phase `Failed` / `Succeeded` (`Evicted`, ...); a
deletion in progress (with the `DisruptionTarget` condition's reason when an eviction caused it).
`Unschedulable` is not fatal by itself (a cluster autoscaler may add a node): it is the reason
reported when the readiness deadline passes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

FATAL_WAITING = frozenset({"ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "CreateContainerConfigError",
                           "CreateContainerError", "CrashLoopBackOff"})


@dataclass(frozen=True)
class PodState:
    """`kind`: `ready` | `starting` | `failed`; `reason`: the Kubernetes reason and message ("" when
    ready); `ip`: the pod IP once it has one."""

    kind: str
    reason: str = ""
    ip: str | None = None


def _reason(reason: str | None, message: str | None) -> str:
    return f"{reason or 'Unknown'}: {message}" if message else (reason or "Unknown")


def _conditions(pod: Any) -> list[Any]:
    return list((pod.status.conditions if pod.status else None) or [])


def disruption(pod: Any) -> str | None:
    """The `DisruptionTarget` condition's reason and message (an eviction, a preemption), if any."""
    for condition in _conditions(pod):
        if condition.type == "DisruptionTarget" and condition.status == "True":
            return _reason(condition.reason, condition.message)
    return None


def _container_failure(pod: Any) -> str | None:
    statuses = [*(pod.status.init_container_statuses or []), *(pod.status.container_statuses or [])]
    for status in statuses:
        state = status.state
        if state is not None and state.terminated is not None:
            term = state.terminated
            return f"container {status.name} terminated: {_reason(term.reason, term.message)} (exit {term.exit_code})"
        if state is not None and state.waiting is not None and state.waiting.reason in FATAL_WAITING:
            return f"container {status.name}: {_reason(state.waiting.reason, state.waiting.message)}"
        last = status.last_state
        if last is not None and last.terminated is not None and last.terminated.reason == "OOMKilled":
            return f"container {status.name} restarted after OOMKilled (exit {last.terminated.exit_code})"
    return None


def pending_reason(pod: Any) -> str:
    """Why a pod is not ready yet: `Unschedulable: ...`, a container's waiting reason
    (`ContainerCreating`, `ErrImagePull`), a false `Ready` condition, or its phase."""
    for condition in _conditions(pod):
        if condition.type == "PodScheduled" and condition.status == "False":
            return _reason(condition.reason, condition.message)
    for status in pod.status.container_statuses or []:
        if status.state is not None and status.state.waiting is not None:
            return f"container {status.name}: {_reason(status.state.waiting.reason, status.state.waiting.message)}"
    for condition in _conditions(pod):
        if condition.type == "Ready" and condition.status != "True":
            return f"not Ready ({_reason(condition.reason, condition.message)})"
    return f"phase {pod.status.phase or 'Pending'}"


def classify(pod: Any) -> PodState:
    """The `PodState` of a `V1Pod`."""
    status = pod.status
    if status is None:
        return PodState("starting", "no status yet")
    if pod.metadata.deletion_timestamp is not None:
        cause = disruption(pod)
        return PodState("failed", f"pod is being deleted ({cause})" if cause else "pod is being deleted")
    if status.phase in ("Failed", "Succeeded"):
        container = _container_failure(pod)
        detail = f"; {container}" if container else ""
        return PodState("failed", f"phase {status.phase}: {_reason(status.reason, status.message)}{detail}")
    failure = _container_failure(pod)
    if failure:
        return PodState("failed", failure, status.pod_ip)
    ready = any(c.type == "Ready" and c.status == "True" for c in _conditions(pod))
    if ready and status.pod_ip:
        return PodState("ready", "", status.pod_ip)
    return PodState("starting", pending_reason(pod), status.pod_ip)


def gone_reason(last: Any | None) -> str:
    """Why a pod that no longer exists is gone, from its last known object (a DELETED event's)."""
    if last is None:
        return "pod deleted"
    cause = disruption(last)
    if cause:
        return f"pod deleted: {cause}"
    state = classify(last)
    return f"pod deleted ({state.reason})" if state.kind == "failed" and state.reason else "pod deleted"
