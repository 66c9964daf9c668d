"""The step loop of one episode: screenshot -> model -> parse -> execute -> settle -> publish (SPEC section 4)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

import redis

from common.env_client import DesktopEnvClient, EnvError
from common.envpool import LeaseKeeper
from common.events import DiscardedReply, ExecResult, ParsedAction, StepEvent, StepTimings, Usage
from common.run import RolloutJob
from common.runstate import is_cancelled
from common.status import RolloutStatus
from services.runner.agent.base import Agent, Observation, ParsedResponse, ParseError
from services.runner.first_screen import FirstScreen
from services.runner.metrics import observe_step
from services.runner.model_client import ModelClient, ModelError, ModelReply, TokenizeUnsupported
from services.runner.outcome import EpisodeStop, RolloutOutcome, StepTotals
from services.runner.publisher import EventPublisher
from services.runner.settings import RunnerSettings
from services.runner.settle import Point, ScreenSettler
from services.runner.token_carry import TokenCarry

log = logging.getLogger(__name__)
_T = TypeVar("_T")


@dataclass
class Episode:
    """Everything one episode's steps use: the job, its event ref, the env, the gateway client, the
    agent state, the lease keeper, the running totals (the attempt's timings among them) and the
    screen the wait after setup ended on (`first_screen`; None: step 0 grabs its own)."""

    job: RolloutJob
    ref: dict[str, Any]
    env: DesktopEnvClient
    model: ModelClient
    agent: Agent
    keeper: LeaseKeeper
    totals: StepTotals
    first: FirstScreen | None = None


@dataclass
class Sampled:
    """The outcome of a step's sampling: the reply kept, what the step runs (its parse; when no sample
    parsed, the agent's `unparseable(...)` answer, and `parse_error` says why), the total model time (ms)
    and the discarded replies."""

    reply: ModelReply
    parsed: ParsedResponse
    model_ms: float
    discarded: list[DiscardedReply]
    parse_error: str | None = None


def unparseable_error(step: int, sampled: Sampled) -> str:
    """The error text of a step none of whose samples parsed: the step, the number of samples, why the last
    was rejected and its first 200 characters."""
    return (f"unparseable reply at step {step} after {len(sampled.discarded) + 1} samples: {sampled.parse_error}; "
            f"last reply {sampled.reply.text[:200]!r}")


def end_of(step: int, sampled: Sampled, forced: bool) -> RolloutOutcome | None:
    """The outcome when step `step` ended the episode, else None: the reply's (or the agent's answer to an
    unparseable reply's) `DONE` is `completed` (`parse_error` for an unparseable one) and its `FAIL`
    `agent_fail` (`forced`: the agent's `last_step` made it, e.g. UI-TARS' `fail_at_max_steps`). The
    evaluator reads `last_action`: only a `FAIL` pays an infeasible task (docs/scoring.md)."""
    terminal = sampled.parsed.terminal
    if terminal == "DONE":
        if sampled.parse_error is not None:
            return RolloutOutcome(status=RolloutStatus.PARSE_ERROR, num_steps=step + 1, last_action="DONE",
                                  error=unparseable_error(step, sampled) + " (ended as the agent's DONE)")
        return RolloutOutcome(status=RolloutStatus.COMPLETED, num_steps=step + 1, last_action="DONE")
    if terminal == "FAIL":
        error = f"max_steps reached: the last step (step {step}) taken as FAIL (fail_at_max_steps)" if forced else None
        return RolloutOutcome(status=RolloutStatus.AGENT_FAIL, num_steps=step + 1, last_action="FAIL", error=error)
    return None


def resample_params(sampling: dict[str, Any], floor: float) -> dict[str, Any]:
    """The sampling of a re-sample: the run's, with the temperature raised to at least `floor` (at
    temperature 0 a model gives the same reply again)."""
    return {**sampling, "temperature": max(float(sampling.get("temperature", 0.0)), floor)}


def pointer_of(env: DesktopEnvClient) -> Point | None:
    """The mouse pointer's position in pixels (`GET /cursor_position`), or None when the env cannot tell."""
    try:
        return env.cursor_position()
    except (EnvError, ValueError, TypeError):  # no such endpoint, or a reply that is not [x, y]
        return None


class StepLoop:
    """Runs the steps of episodes with one Redis client, publisher and settings."""

    def __init__(self, client: redis.Redis, settings: RunnerSettings, publisher: EventPublisher) -> None:
        self.client = client
        self.settings = settings
        self.publisher = publisher

    def run(self, episode: Episode) -> RolloutOutcome:
        """Steps until the agent finishes, fails or `max_steps` pass (`truncated`; the last step runs the
        agent's `last_step(...)`). A step none of whose samples parsed runs the agent's `unparseable(...)`:
        no action (the episode goes on) or its end as `DONE` (`parse_error`), never a FAIL. Raises:
        EpisodeStop (cancelled, lease lost, env or model failure).

        Each step's time is split (ms) into model, action (`/execute`), screenshot, settle and the
        runner's own overhead (the rest: cancel and lease checks, prompt, parsing, publishing); the
        published `StepTimings.step_ms` ends just before the step's event is published, the totals
        and metrics include publishing."""
        job, env, agent, totals = episode.job, episode.env, episode.agent, episode.totals
        settler = ScreenSettler(env.screenshot, lambda: pointer_of(env), self.settings.settle_config)
        carry = self._token_carry(job, episode.model)
        png: bytes | None = None
        unparseable_steps = 0
        for step in range(job.max_steps):
            t_step = time.perf_counter()
            if is_cancelled(self.client, job.run_id):
                raise EpisodeStop(RolloutStatus.CANCELLED, f"run cancelled at step {step}")
            if episode.keeper.lost.is_set():
                raise EpisodeStop(RolloutStatus.ENV_ERROR, "env lease lost (renewal failed)")
            screenshot_ms = action_ms = 0.0
            first = episode.first if step == 0 else None
            if png is None:  # the first step, or settling is off: grab now (step 0: the first screen's)
                t_env = time.perf_counter()
                png = self._env_call(partial(settler.first_frame, first.png if first else None),
                                     f"screenshot failed at step {step}")
                screenshot_ms = (time.perf_counter() - t_env) * 1000.0
            tree = None
            if agent.needs_accessibility_tree:
                t_env = time.perf_counter()
                tree = self._env_call(env.accessibility, f"accessibility tree failed at step {step}")
                screenshot_ms += (time.perf_counter() - t_env) * 1000.0
            messages = agent.build_messages(Observation(screenshot=png, accessibility_tree=tree))
            if totals.timings.first_model_at is None:
                totals.timings.first_model_at = time.monotonic()
            prompt_ids = self._carried_prompt(carry, messages)
            sampled = self._sample_parsable(job, episode.model, agent, messages, prompt_ids)
            forced = False
            if step == job.max_steps - 1:
                last = agent.last_step(sampled.parsed)
                forced, sampled.parsed = last is not sampled.parsed, last
            reply, parsed, model_ms = sampled.reply, sampled.parsed, sampled.model_ms
            unparseable_steps += sampled.parse_error is not None
            if carry is not None:
                carry.commit(messages, reply.prompt_token_ids, reply.token_ids, carried=prompt_ids is not None)
            totals.prompt_tokens += reply.prompt_tokens + sum(d.usage.prompt_tokens for d in sampled.discarded)
            totals.completion_tokens += reply.completion_tokens + sum(d.usage.completion_tokens
                                                                      for d in sampled.discarded)
            totals.versions += [v for v in [*(d.model_version for d in sampled.discarded), reply.model_version] if v]
            agent.record(reply.text, parsed=sampled.parse_error is None)
            settle_ms, capped, next_png = 0.0, False, None
            t_env = time.perf_counter()
            execution, acted = self._execute(env, parsed.actions, step)
            action_ms = (time.perf_counter() - t_env) * 1000.0
            if acted and self.settings.settle_max_s > 0:
                settled = self._env_call(partial(settler.settle, png), f"screenshot failed at step {step}")
                settle_ms, capped, next_png = settled.settle_ms, settled.capped, settled.png
            timings = StepTimings(model_ms=model_ms, env_ms=screenshot_ms + action_ms, action_ms=action_ms,
                                  screenshot_ms=screenshot_ms, settle_ms=settle_ms, settle_capped=capped,
                                  step_ms=(time.perf_counter() - t_step) * 1000.0,
                                  first_screen_ms=first.wait_ms if first else 0.0,
                                  first_screen_cause=first.cause if first else None)
            t_publish = time.perf_counter()
            self._publish(episode, step, sampled, execution, png, timings, first.windows if first else None)
            t_end = time.perf_counter()
            loop_ms = (t_end - t_step) * 1000.0
            totals.timings.add_step(timings, publish_ms=(t_end - t_publish) * 1000.0, loop_ms=loop_ms)
            observe_step(timings, total_ms=loop_ms)
            totals.steps = step + 1
            ended = end_of(step, sampled, forced)
            if ended is not None:
                return ended
            if sampled.parse_error is not None:
                log.info("rollout %s: %s; no action, the episode goes on", job.rollout_id,
                         unparseable_error(step, sampled))
            png = next_png
        unread = f"{unparseable_steps} of {job.max_steps} steps' replies unparseable (no action taken)"
        return RolloutOutcome(status=RolloutStatus.TRUNCATED, num_steps=job.max_steps,
                              error=f"max_steps reached; {unread}" if unparseable_steps else None)

    @staticmethod
    def _env_call(call: Callable[[], _T], what: str) -> _T:
        try:
            return call()
        except EnvError as exc:
            raise EpisodeStop(RolloutStatus.ENV_ERROR, f"{what}: {exc}") from exc

    def _publish(self, episode: Episode, step: int, sampled: Sampled, execution: ExecResult, png: bytes,
                 timings: StepTimings, windows: list[dict[str, Any]] | None = None) -> None:
        reply, parsed = sampled.reply, sampled.parsed
        self.publisher.publish(
            StepEvent(
                step=step,
                policy_version=episode.job.policy_version,
                model_version=reply.model_version,
                replica=reply.replica,
                response=reply.text,
                thought=parsed.thought,
                actions=parsed.actions,
                execution=execution,
                timings=timings,
                usage=Usage(prompt_tokens=reply.prompt_tokens, completion_tokens=reply.completion_tokens),
                token_ids=reply.token_ids,
                logprobs=reply.logprobs,
                prompt_token_ids=reply.prompt_token_ids,
                discarded=sampled.discarded,
                parse_error=sampled.parse_error,
                windows=windows,
                **episode.ref,
            ),
            png,
        )

    def _token_carry(self, job: RolloutJob, model: ModelClient) -> TokenCarry | None:
        """The episode's token carry (`token_carry.py`), None when off or the gateway has no `/tokenize`."""
        if not self.settings.token_carry or model.tokenize_unsupported:
            return None
        return TokenCarry(lambda messages, opened: model.tokenize(messages, job.model, job.rollout_id, opened))

    @staticmethod
    def _carried_prompt(carry: TokenCarry | None, messages: list[dict[str, Any]]) -> list[int] | None:
        """The step's token prompt, or None: chat messages (also when tokenizing failed: the chat route may
        still work, and the carry starts again from this step's reply; a 404 turns it off in this process)."""
        if carry is None:
            return None
        try:
            return carry.prompt_ids(messages)
        except ModelError as exc:
            if isinstance(exc, TokenizeUnsupported):
                carry.disabled = True
            else:
                log.warning("token carry: %s; this step goes as chat messages", exc)
            carry.last = None
            return None

    def _sample_parsable(self, job: RolloutJob, model: ModelClient, agent: Agent,
                         messages: list[dict[str, Any]], prompt_ids: list[int] | None = None) -> Sampled:
        """Call the model (with `prompt_ids`, a token prompt of the same request, `complete_tokens`); re-sample an
        unparseable reply up to `max_parse_retries` times, each re-sample at a temperature of at least
        `resample_temperature` (`resample_params`). Every rejected reply but the last is kept as discarded; when
        none parses, the last is kept with the agent's answer to it (`Agent.unparseable`: never a FAIL).

        Raises: EpisodeStop(model_error) when the gateway fails; RuntimeError (a bug: `runner_error`) when the
        agent answers an unparseable reply with FAIL.
        """
        model_ms = 0.0
        discarded: list[DiscardedReply] = []
        sampling = job.sampling.model_dump()
        error = ""
        for attempt in range(self.settings.max_parse_retries + 1):
            if attempt:
                sampling = resample_params(sampling, self.settings.resample_temperature)
            try:
                if prompt_ids is None:
                    reply = model.complete(messages, job.model, sampling, job.rollout_id, job.policy_version,
                                           job.max_staleness)
                else:
                    reply = model.complete_tokens(prompt_ids, job.model, sampling, job.rollout_id,
                                                  job.policy_version, job.max_staleness)
            except ModelError as exc:
                raise EpisodeStop(RolloutStatus.MODEL_ERROR, str(exc)) from exc
            model_ms += reply.model_ms
            try:
                return Sampled(reply, agent.parse(reply.text), model_ms, discarded)
            except ParseError as exc:
                error = str(exc)
                log.info("rollout %s: unparseable reply (%s), re-sampling", job.rollout_id, exc)
            if attempt < self.settings.max_parse_retries:
                discarded.append(DiscardedReply(
                    response=reply.text, error=error, temperature=sampling.get("temperature"),
                    model_ms=reply.model_ms, token_ids=reply.token_ids, logprobs=reply.logprobs,
                    usage=Usage(prompt_tokens=reply.prompt_tokens, completion_tokens=reply.completion_tokens),
                    model_version=reply.model_version, replica=reply.replica))
        answer = agent.unparseable(reply.text, error)
        if answer.terminal == "FAIL" or any(a.action_type == "FAIL" for a in answer.actions):
            # a reply nobody could read must never pay an infeasible task (docs/scoring.md): a bug of the agent
            raise RuntimeError(f"agent {agent.name!r} answered an unparseable reply with FAIL")
        return Sampled(reply, answer, model_ms, discarded, parse_error=error)

    def _execute(self, env: DesktopEnvClient, actions: list[ParsedAction], step: int) -> tuple[ExecResult, bool]:
        """Run each action's pyautogui code in the env; WAIT sleeps here. Stops at the first action
        with a non-zero return code. Returns (result of the last action run, whether any code ran: a
        step that only waited needs no settling, its next screenshot is grabbed fresh)."""
        result, acted = ExecResult(), False
        for action in actions:
            if action.action_type.upper() == "WAIT":
                time.sleep(self.settings.wait_action_s)  # the agent asked to wait for the UI
                continue
            if not action.code:
                continue
            try:
                reply = env.execute(["python", "-c", action.code])
            except EnvError as exc:
                raise EpisodeStop(RolloutStatus.ENV_ERROR, f"execute failed at step {step}: {exc}") from exc
            acted = True
            result = ExecResult(returncode=reply.returncode if reply.returncode is not None else -1,
                                output=reply.output or "", error=reply.error or "")
            if reply.returncode != 0:
                break
        return result, acted
