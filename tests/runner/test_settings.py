"""The runner's step-file settings (services/runner/settings.py, the block marked for issue 27): its own
write-only key, never the sink's, required with an `s3://` store outside local mode."""

from __future__ import annotations

import pytest

from services.runner.settings import RunnerSettings


def test_the_runner_reads_its_own_key_and_the_shared_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNNER_STORE_URL", "s3://trajectories")
    monkeypatch.setenv("S3_ENDPOINT", "minio:9000")
    monkeypatch.setenv("S3_ACCESS_KEY", "the-sinks-root-key")  # never the runner's
    monkeypatch.setenv("S3_SECRET_KEY", "the-sinks-root-secret")
    monkeypatch.setenv("RUNNER_S3_ACCESS_KEY", "cua-runner-0123")
    monkeypatch.setenv("RUNNER_S3_SECRET_KEY", "a-random-runner-secret")
    monkeypatch.setenv("CUA_LOCAL_MODE", "0")
    monkeypatch.setenv("RUNNER_GATEWAY_API_KEY", "a-random-gateway-key")
    settings = RunnerSettings()
    assert (settings.store_url, settings.s3_endpoint) == ("s3://trajectories", "minio:9000")
    assert settings.s3_access_key.get_secret_value() == "cua-runner-0123"
    assert settings.s3_secret_key.get_secret_value() == "a-random-runner-secret"
    assert "a-random-runner-secret" not in repr(settings)


def test_outside_local_mode_an_s3_store_needs_the_runners_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("S3_ACCESS_KEY", "the-sinks-root-key")  # present, and ignored
    with pytest.raises(ValueError, match="RUNNER_S3_ACCESS_KEY is empty but required"):
        RunnerSettings(store_url="s3://trajectories", local_mode=False, gateway_api_key="a-random-gateway-key")
    with pytest.raises(ValueError, match="RUNNER_S3_SECRET_KEY is a well-known default secret"):
        RunnerSettings(store_url="s3://trajectories", local_mode=False, gateway_api_key="a-random-gateway-key",
                       s3_access_key="cua-runner-1", s3_secret_key="minioadmin")
    assert RunnerSettings(store_url="s3://trajectories", local_mode=True).s3_access_key.get_secret_value() == ""
    assert RunnerSettings().store_url == ""  # no store: PNGs ride in the entries, as before


def test_a_store_url_of_another_scheme_is_refused() -> None:
    with pytest.raises(ValueError, match="RUNNER_STORE_URL must be file://DIR, s3://BUCKET or empty"):
        RunnerSettings(store_url="gs://bucket")
