"""The step loop's handling of replies the agent cannot parse: re-samples with a temperature floor, then what
the agent does with such a reply (never the model's FAIL), and how a step's parse ends the episode (the whole
path on the real stack: tests/e2e/test_agents_e2e.py, tests/e2e/test_stack.py)."""

from __future__ import annotations

from common.events import DiscardedReply, ParsedAction
from common.status import RolloutStatus
from services.runner.agent.base import ParsedResponse
from services.runner.agent.ui_tars import UITarsAgent
from services.runner.model_client import ModelReply
from services.runner.settings import RunnerSettings
from services.runner.steps import Sampled, end_of, resample_params


def test_resamples_raise_the_temperature_to_the_floor_and_keep_the_rest() -> None:
    sampling = {"temperature": 0.0, "top_p": 0.9, "max_tokens": 512, "logprobs": True}
    assert resample_params(sampling, 0.7) == {**sampling, "temperature": 0.7}
    assert resample_params({**sampling, "temperature": 1.2}, 0.7)["temperature"] == 1.2  # never lowered
    assert RunnerSettings().resample_temperature == 0.7 and RunnerSettings().max_parse_retries == 2


def _sampled(parsed: ParsedResponse, parse_error: str | None = None) -> Sampled:
    reply = ModelReply(text="blorp qz", token_ids=None, logprobs=None, prompt_tokens=1, completion_tokens=1,
                       model_version=None, replica=None, model_ms=1.0)
    discarded = [DiscardedReply(response="blorp", error=parse_error or "")] * (2 if parse_error else 0)
    return Sampled(reply, parsed, 3.0, discarded, parse_error)


def test_an_unparseable_reply_is_never_a_fail() -> None:
    error = "reply has no 'Action:'"
    done = end_of(4, _sampled(UITarsAgent("x", (1920, 1080)).unparseable("blorp qz", error), error), forced=False)
    assert done is not None and (done.status, done.last_action, done.num_steps) == \
        (RolloutStatus.PARSE_ERROR, "DONE", 5)
    assert done.error is not None and done.error.startswith(
        "unparseable reply at step 4 after 3 samples: reply has no 'Action:'; last reply 'blorp qz'")
    assert RolloutStatus.PARSE_ERROR.has_reward  # scored (0 on an infeasible task: its last action is DONE)
    assert end_of(4, _sampled(ParsedResponse(thought=""), error), forced=False) is None  # no action: goes on


def test_the_models_own_terminal_actions_end_the_episode() -> None:
    fail = ParsedResponse(thought="", actions=[ParsedAction(action_type="FAIL")], terminal="FAIL")
    ended = end_of(0, _sampled(fail), forced=False)
    assert ended is not None and (ended.status, ended.last_action, ended.error) == \
        (RolloutStatus.AGENT_FAIL, "FAIL", None)
    forced = end_of(14, _sampled(fail), forced=True)
    assert forced is not None and forced.error is not None and "fail_at_max_steps" in forced.error
    done = ParsedResponse(thought="", actions=[ParsedAction(action_type="DONE")], terminal="DONE")
    ended = end_of(2, _sampled(done), forced=False)
    assert ended is not None and (ended.status, ended.last_action) == (RolloutStatus.COMPLETED, "DONE")
