"""The step loop's handling of replies the agent cannot parse: re-samples with a temperature floor, then the
agent's FAIL (the whole path on the real stack: tests/e2e/test_agents_e2e.py)."""

from __future__ import annotations

from services.runner.settings import RunnerSettings
from services.runner.steps import resample_params, unparseable_fail


def test_resamples_raise_the_temperature_to_the_floor_and_keep_the_rest() -> None:
    sampling = {"temperature": 0.0, "top_p": 0.9, "max_tokens": 512, "logprobs": True}
    assert resample_params(sampling, 0.7) == {**sampling, "temperature": 0.7}
    assert resample_params({**sampling, "temperature": 1.2}, 0.7)["temperature"] == 1.2  # never lowered
    assert RunnerSettings().resample_temperature == 0.7 and RunnerSettings().max_parse_retries == 2


def test_an_unparseable_reply_becomes_the_agents_fail_with_the_reason() -> None:
    parsed = unparseable_fail("reply has no 'Action:'")
    assert parsed.terminal == "FAIL"
    assert [(a.action_type, a.inputs, a.code) for a in parsed.actions] == \
        [("FAIL", {"unparseable": "reply has no 'Action:'"}, "")]
