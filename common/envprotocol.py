"""Env flavors: which server an env runs, so the runner calls only the endpoints it has (SPEC section 4).

- `desktop_env`: our env pod (`services.desktop_env`): the OSWorld VM server protocol plus `POST
  /reset` and `GET /healthz`. Reset strategy `endpoint`: a used env is reset in place and reused.
- `osworld_vm`: OSWorld's own VM image (xlang-ai/OSWorld `desktop_env/server/main.py` on :5000):
  the protocol only, no `/reset` and no `/healthz`. Its health probe is `GET /platform` (a route its
  server has); reset strategy `replace`: a used env is never reused in place (the `kubernetes`
  provider deletes the pod and creates a fresh one; a `static` VM is retired after one rollout,
  since reverting a VM snapshot is the VM host's job, not an HTTP endpoint).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import httpx


class EnvProtocol(StrEnum):
    """The kind of server behind an env's URL (stored with each env in the registry)."""

    DESKTOP_ENV = "desktop_env"
    OSWORLD_VM = "osworld_vm"


@dataclass(frozen=True)
class ProtocolSpec:
    """What a flavor's server offers: `has_reset` (`POST /reset`), the health probe (method, path),
    and how a used env is made clean (`reset_strategy`: `endpoint` = `POST /reset`; `replace` = new
    env)."""

    has_reset: bool
    health_method: str
    health_path: str
    reset_strategy: str


FLAVORS: dict[EnvProtocol, ProtocolSpec] = {
    EnvProtocol.DESKTOP_ENV: ProtocolSpec(has_reset=True, health_method="GET", health_path="/healthz",
                                      reset_strategy="endpoint"),
    EnvProtocol.OSWORLD_VM: ProtocolSpec(has_reset=False, health_method="GET", health_path="/platform",
                                     reset_strategy="replace"),
}


def parse_flavor(value: str) -> EnvProtocol:
    """`EnvProtocol` named `value`. Raises: ValueError naming the known flavors."""
    try:
        return EnvProtocol(value)
    except ValueError:
        known = ", ".join(f.value for f in EnvProtocol)
        raise ValueError(f"unknown env flavor {value!r}: expected one of {known}") from None


def spec(flavor: str | EnvProtocol) -> ProtocolSpec:
    """The `ProtocolSpec` of `flavor`. Raises: ValueError for an unknown flavor."""
    return FLAVORS[parse_flavor(str(flavor))]


def probe_health(url: str, flavor: str | EnvProtocol, timeout_s: float = 5.0) -> str | None:
    """Probe the env at base `url` with its flavor's health endpoint; None when healthy (2xx),
    else a short reason ("HTTP 503", "ConnectError: ...")."""
    flavor_spec = spec(flavor)
    try:
        response = httpx.request(flavor_spec.health_method, url.rstrip("/") + flavor_spec.health_path,
                                 timeout=timeout_s)
    except httpx.HTTPError as exc:
        return f"{type(exc).__name__}: {exc}"
    return None if response.is_success else f"HTTP {response.status_code} on {flavor_spec.health_path}"
