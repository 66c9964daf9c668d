"""Policy versions (`common/versions.py`): ordering and the requirements of `X-Policy-Version` /
`X-Min-Policy-Version`."""

from __future__ import annotations

import pytest

from common.versions import VersionRequirement, min_version_for, requirement_from_headers, version_order_key


def test_versions_order_by_their_number_not_their_text() -> None:
    seen = ["step-9", "step-10", "step-100"]
    assert (min(seen, key=version_order_key), max(seen, key=version_order_key)) == ("step-9", "step-100")
    assert sorted(["v2", "base", "v10"], key=version_order_key) == ["base", "v2", "v10"]


def test_version_requirements() -> None:
    assert requirement_from_headers({}) is None
    exact = requirement_from_headers({"x-policy-version": "v3"})
    assert exact is not None and exact.satisfied_by("v3") and not exact.satisfied_by("v4")
    minimum = VersionRequirement(minimum="v3")
    assert minimum.satisfied_by("v3") and minimum.satisfied_by("step-12") and not minimum.satisfied_by("v2")
    assert not minimum.satisfied_by("main") and not minimum.satisfied_by(None)
    with pytest.raises(ValueError, match="X-Min-Policy-Version"):
        requirement_from_headers({"x-min-policy-version": "latest"})
    assert min_version_for("v5", 2) == "v3" and min_version_for("ckpt-1", 4) == "ckpt-0"
    with pytest.raises(ValueError, match="no trailing integer"):
        min_version_for("main", 1)
