"""Policy versions: what a request may ask for and which replica versions satisfy it.

A version is an opaque string (`v3`, `step-120`, `42`, a LoRA adapter name). Ordering, needed only for
staleness bounds, uses the version's trailing integer (`v12` -> 12, `step-7` -> 7); a version with no
trailing integer can match an exact request but never a minimum.

Request headers (the gateway's RL contract):
- `X-Policy-Version: v3`: only a replica serving exactly `v3` may answer.
- `X-Min-Policy-Version: v3`: any replica whose version number is >= 3 may answer (staleness bound).
Both at once: the exact one must also satisfy the minimum.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

_TRAILING_INT = re.compile(r"(\d+)$")


def version_number(version: str) -> int | None:
    """The trailing integer of `version` (`"v12"` -> 12), or None when it has none."""
    match = _TRAILING_INT.search(version)
    return int(match.group(1)) if match else None


def version_order_key(version: str) -> tuple[int, int, str]:
    """Sort key ordering versions by trailing integer (`step-9` before `step-10`); versions without
    one sort first, by their text. Use with `min`/`max`/`sorted`."""
    number = version_number(version)
    return (0, 0, version) if number is None else (1, number, version)


def min_version_for(policy_version: str, max_staleness: int) -> str:
    """The oldest version a run at `policy_version` accepts with `max_staleness` versions of lag.

    `("v5", 2)` -> `"v3"` (floored at 0). Raises: ValueError when `policy_version` has no trailing integer
    or `max_staleness` is negative.
    """
    if max_staleness < 0:
        raise ValueError(f"max_staleness must be >= 0, got {max_staleness}")
    match = _TRAILING_INT.search(policy_version)
    if match is None:
        raise ValueError(f"policy_version {policy_version!r} has no trailing integer, so staleness is undefined")
    return f"{policy_version[:match.start()]}{max(0, int(match.group(1)) - max_staleness)}"


@dataclass(frozen=True)
class VersionRequirement:
    """What a request accepts: an exact version and/or a minimum version number."""

    exact: str | None = None
    minimum: str | None = None

    def satisfied_by(self, version: str | None) -> bool:
        """True when a replica serving `version` may answer (an unknown version satisfies nothing)."""
        if version is None:
            return False
        if self.exact is not None and version != self.exact:
            return False
        if self.minimum is not None:
            have, want = version_number(version), version_number(self.minimum)
            return have is not None and want is not None and have >= want
        return True

    def describe(self) -> str:
        """Human text: `version == v3`, `version >= v2`."""
        parts = [f"version == {self.exact}"] if self.exact else []
        if self.minimum:
            parts.append(f"version >= {self.minimum}")
        return " and ".join(parts)


def requirement_from_headers(headers: Mapping[str, str]) -> VersionRequirement | None:
    """The request's `X-Policy-Version` / `X-Min-Policy-Version`, or None when it sets neither.

    Raises: ValueError naming the header when `X-Min-Policy-Version` has no trailing integer.
    """
    exact = headers.get("x-policy-version") or None
    minimum = headers.get("x-min-policy-version") or None
    if exact is None and minimum is None:
        return None
    if minimum is not None and version_number(minimum) is None:
        raise ValueError(f"X-Min-Policy-Version {minimum!r} must end in an integer (e.g. v3)")
    return VersionRequirement(exact=exact, minimum=minimum)
