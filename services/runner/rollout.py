"""One attempt of one rollout: lease env -> setup -> step loop -> evaluate -> release (SPEC section 4).

The outcome is exactly one terminal `RolloutStatus`; infrastructure failures are reported as such so
the job layer can retry them on a fresh env.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

import redis

from common.env_client import DesktopEnvClient, EnvError
from common.envpool import EnvPool, Lease, LeaseKeeper, NoEnvAvailable
from common.events import EpisodeEvent, ExecResult, StepEvent, StepTimings, Usage
from common.run import RolloutJob, trajectory_prefix
from common.runstate import RolloutRecord, is_cancelled, record_rollout
from common.status import RolloutStatus
from services.runner.agent.parser import ParseError
from services.runner.agent.ui_tars import UITarsAgent
from services.runner.model_client import ModelClient, ModelError, ModelReply
from services.runner.osworld import EvalContext, EvalError, SetupContext, SetupError, evaluate, run_setup
from services.runner.publisher import EventPublisher
from services.runner.settings import RunnerSettings

log = logging.getLogger(__name__)


@dataclass
class RolloutOutcome:
    """Result of one attempt: terminal status, reward (None unless rewarded), steps, error text."""

    status: RolloutStatus
    reward: float | None = None
    num_steps: int = 0
    error: str | None = None
    last_action: str | None = None
    env_id: str | None = None
    timings: dict[str, float] = field(default_factory=dict)


@dataclass
class _StepTotals:
    model_ms: float = 0.0
    env_ms: float = 0.0
    versions: list[str] = field(default_factory=list)


class _Stop(Exception):
    """Internal: ends the step loop with a terminal status."""

    def __init__(self, status: RolloutStatus, error: str | None = None) -> None:
        super().__init__(error or status.value)
        self.status = status
        self.error = error


class RolloutRunner:
    """Runs rollout attempts with its Redis client, env pool, publisher and gateway client."""

    def __init__(self, client: redis.Redis, settings: RunnerSettings) -> None:
        self.client = client
        self.settings = settings
        self.pool = EnvPool(client)
        self.publisher = EventPublisher(client, settings.stream_backlog_limit, settings.backpressure_wait_s)

    # -- bookkeeping -------------------------------------------------------------------------
    def _record(self, job: RolloutJob, attempt: int, status: RolloutStatus, **extra: Any) -> None:
        record_rollout(
            self.client,
            RolloutRecord(
                rollout_id=job.rollout_id,
                run_id=job.run_id,
                task_id=job.task.id,
                rollout_index=job.rollout_index,
                domain=job.task.effective_domain,
                status=status,
                attempt=attempt,
                trajectory=trajectory_prefix(job.run_id, job.task.id, job.rollout_index),
                **extra,
            ),
        )

    def _ref(self, job: RolloutJob, attempt: int) -> dict[str, Any]:
        return {
            "run_id": job.run_id,
            "task_id": job.task.id,
            "rollout_index": job.rollout_index,
            "rollout_id": job.rollout_id,
            "attempt": attempt,
        }

    # -- the attempt -------------------------------------------------------------------------
    def run(self, job: RolloutJob, attempt: int, final_attempt: bool) -> RolloutOutcome:
        """Run one attempt and record its outcome (a retried infra failure is recorded as `queued`).

        Never raises for policy or infrastructure failures: they come back as the outcome's status.
        """
        started = time.time()
        if is_cancelled(self.client, job.run_id):
            outcome = RolloutOutcome(status=RolloutStatus.CANCELLED, error="run cancelled before start")
        else:
            self._record(job, attempt, RolloutStatus.RUNNING, started_at=started)
            outcome = self._leased_attempt(job, attempt)
        ended = time.time()
        retry_pending = outcome.status.is_infra_failure and not final_attempt
        self._record(
            job,
            attempt,
            RolloutStatus.QUEUED if retry_pending else outcome.status,
            reward=outcome.reward,
            num_steps=outcome.num_steps,
            error=(f"attempt {attempt} {outcome.status.value}: {outcome.error}; retrying" if retry_pending
                   else outcome.error),
            env_id=outcome.env_id,
            started_at=started,
            ended_at=ended,
            duration_ms=(ended - started) * 1000.0,
            model_ms=outcome.timings.get("model_ms", 0.0),
            env_ms=outcome.timings.get("env_ms", 0.0),
        )
        return outcome

    def _leased_attempt(self, job: RolloutJob, attempt: int) -> RolloutOutcome:
        owner = f"{job.rollout_id}#{attempt}"
        try:
            lease = self.pool.lease(owner, self.settings.lease_ttl_ms, self.settings.lease_wait_s)
        except NoEnvAvailable as exc:
            return RolloutOutcome(status=RolloutStatus.ENV_INIT_FAILED, error=str(exc))
        env = DesktopEnvClient(lease.env.url)
        try:
            with LeaseKeeper(self.pool, lease) as keeper:
                outcome = self._episode(job, attempt, env, lease, keeper)
        finally:
            self._release(env, lease)
        outcome.env_id = lease.env.env_id
        return outcome

    def _release(self, env: DesktopEnvClient, lease: Lease) -> None:
        """Reset the env for the next rollout, then give it back; an env that fails reset is marked unhealthy."""
        try:
            env.reset()
        except EnvError as exc:
            log.warning("env %s failed to reset, marking unhealthy: %s", lease.env.env_id, exc)
            self.pool.mark_unhealthy(lease.env.env_id)
        finally:
            env.close()
            self.pool.release(lease)

    def _episode(
        self, job: RolloutJob, attempt: int, env: DesktopEnvClient, lease: Lease, keeper: LeaseKeeper
    ) -> RolloutOutcome:
        ref = self._ref(job, attempt)
        sampling = job.sampling.model_dump()
        common_fields: dict[str, Any] = {
            "env_id": lease.env.env_id,
            "env_image": lease.env.provider,
            "sampling": sampling,
            "model": job.model,
            "domain": job.task.effective_domain,
        }
        t0 = time.perf_counter()
        self.publisher.publish(
            EpisodeEvent(phase="start", task_config=job.task.to_json_dict(), **ref, **common_fields)
        )
        totals = _StepTotals()
        agent: UITarsAgent | None = None
        outcome = RolloutOutcome(status=RolloutStatus.ENV_INIT_FAILED)
        setup_ms = eval_ms = 0.0
        # One gateway client per episode: its keep-alive connection is reused by every step.
        model = ModelClient(self.settings.gateway_url, self.settings.model_timeout_s,
                            self.settings.model_connect_timeout_s)
        try:
            try:
                env.reset()
                screen = env.screen_size()
                run_setup(job.task.config, env, self._setup_context(screen))
            except (SetupError, EnvError) as exc:
                raise _Stop(RolloutStatus.ENV_INIT_FAILED, f"setup failed: {exc}") from exc
            setup_ms = (time.perf_counter() - t0) * 1000.0
            agent = UITarsAgent(job.task.instruction, screen=screen)
            outcome = self._step_loop(job, ref, env, model, agent, keeper, totals)
            if outcome.status.has_reward:
                t_eval = time.perf_counter()
                try:
                    outcome.reward = float(
                        evaluate(job.task.evaluator, env, self._eval_context(screen), outcome.last_action)
                    )
                except (EvalError, SetupError, EnvError) as exc:
                    outcome = RolloutOutcome(status=RolloutStatus.EVAL_ERROR, num_steps=outcome.num_steps,
                                             error=f"evaluation failed: {exc}")
                eval_ms = (time.perf_counter() - t_eval) * 1000.0
        except _Stop as stop:
            outcome = RolloutOutcome(status=stop.status, error=stop.error, num_steps=outcome.num_steps)
        except Exception as exc:  # an unexpected bug must still end the episode and free the env
            log.exception("rollout %s crashed", job.rollout_id)
            outcome = RolloutOutcome(status=RolloutStatus.ENV_ERROR, error=f"runner error: {exc!r}")
        finally:
            model.close()
        outcome.timings = {
            "total_ms": (time.perf_counter() - t0) * 1000.0,
            "setup_ms": setup_ms,
            "eval_ms": eval_ms,
            "model_ms": totals.model_ms,
            "env_ms": totals.env_ms,
        }
        self.publisher.publish(
            EpisodeEvent(
                phase="end",
                status=outcome.status,
                reward=outcome.reward if outcome.status.has_reward else None,
                num_steps=outcome.num_steps,
                error=outcome.error,
                timings=outcome.timings,
                min_policy_version=min(totals.versions) if totals.versions else job.policy_version,
                max_policy_version=max(totals.versions) if totals.versions else job.policy_version,
                final_messages=agent.final_messages() if agent else None,
                **ref,
                **common_fields,
            )
        )
        return outcome

    def _step_loop(
        self,
        job: RolloutJob,
        ref: dict[str, Any],
        env: DesktopEnvClient,
        model: ModelClient,
        agent: UITarsAgent,
        keeper: LeaseKeeper,
        totals: _StepTotals,
    ) -> RolloutOutcome:
        for step in range(job.max_steps):
            if is_cancelled(self.client, job.run_id):
                raise _Stop(RolloutStatus.CANCELLED, f"run cancelled at step {step}")
            if keeper.lost.is_set():
                raise _Stop(RolloutStatus.ENV_ERROR, "env lease lost (renewal failed)")
            t_step = time.perf_counter()
            try:
                t_env = time.perf_counter()
                png = env.screenshot()
                env_ms = (time.perf_counter() - t_env) * 1000.0
            except EnvError as exc:
                raise _Stop(RolloutStatus.ENV_ERROR, f"screenshot failed at step {step}: {exc}") from exc
            messages = agent.build_messages(png)
            reply, parsed, model_ms = self._sample_parsable(job, model, agent, messages)
            totals.model_ms += model_ms
            if reply.model_version:
                totals.versions.append(reply.model_version)
            agent.record(reply.text)
            execution = ExecResult()
            if parsed is not None:
                t_env = time.perf_counter()
                execution = self._execute(env, parsed.actions, step)
                env_ms += (time.perf_counter() - t_env) * 1000.0
            totals.env_ms += env_ms
            self.publisher.publish(
                StepEvent(
                    step=step,
                    policy_version=job.policy_version,
                    model_version=reply.model_version,
                    replica=reply.replica,
                    response=reply.text,
                    thought=parsed.thought if parsed else "",
                    actions=parsed.actions if parsed else [],
                    execution=execution,
                    timings=StepTimings(model_ms=model_ms, env_ms=env_ms,
                                        step_ms=(time.perf_counter() - t_step) * 1000.0),
                    usage=Usage(prompt_tokens=reply.prompt_tokens, completion_tokens=reply.completion_tokens),
                    token_ids=reply.token_ids,
                    logprobs=reply.logprobs,
                    **ref,
                ),
                png,
            )
            if parsed is None:
                return RolloutOutcome(status=RolloutStatus.PARSE_ERROR, num_steps=step + 1,
                                      error=f"unparseable reply at step {step}: {reply.text[:200]!r}")
            if parsed.terminal == "DONE":
                return RolloutOutcome(status=RolloutStatus.COMPLETED, num_steps=step + 1, last_action="DONE")
            if parsed.terminal == "FAIL":
                return RolloutOutcome(status=RolloutStatus.AGENT_FAIL, num_steps=step + 1, last_action="FAIL")
        return RolloutOutcome(status=RolloutStatus.TRUNCATED, num_steps=job.max_steps)

    def _sample_parsable(
        self, job: RolloutJob, model: ModelClient, agent: UITarsAgent, messages: list[dict[str, Any]]
    ) -> tuple[ModelReply, Any, float]:
        """Call the model; re-sample an unparseable reply up to `max_parse_retries` times.

        Returns (last reply, parsed reply or None if it never parsed, total model ms).
        """
        model_ms = 0.0
        for _ in range(self.settings.max_parse_retries + 1):
            try:
                reply = model.complete(messages, job.model, job.sampling.model_dump(),
                                       job.rollout_id, job.policy_version)
            except ModelError as exc:
                raise _Stop(RolloutStatus.MODEL_ERROR, str(exc)) from exc
            model_ms += reply.model_ms
            try:
                return reply, agent.parse(reply.text), model_ms
            except ParseError as exc:
                log.info("rollout %s: unparseable reply (%s), re-sampling", job.rollout_id, exc)
        return reply, None, model_ms

    def _execute(self, env: DesktopEnvClient, actions: list[Any], step: int) -> ExecResult:
        """Run each action's pyautogui code in the env (a warm interpreter there); WAIT sleeps here."""
        result = ExecResult()
        for action in actions:
            if action.action_type.upper() == "WAIT":
                time.sleep(self.settings.wait_action_s)  # the agent asked to wait for the UI
                continue
            if not action.code:
                continue
            try:
                reply = env.execute(["python", "-c", action.code])
            except EnvError as exc:
                raise _Stop(RolloutStatus.ENV_ERROR, f"execute failed at step {step}: {exc}") from exc
            result = ExecResult(returncode=reply.returncode if reply.returncode is not None else -1,
                                output=reply.output or "", error=reply.error or "")
            if reply.returncode != 0:
                break
        if self.settings.settle_after_action_s:
            time.sleep(self.settings.settle_after_action_s)  # let the UI repaint before the next screenshot
        return result

    def _setup_context(self, screen: tuple[int, int]) -> SetupContext:
        return SetupContext(client_password=self.settings.client_password, screen=screen,
                            cache_dir=self.settings.cache_dir)

    def _eval_context(self, screen: tuple[int, int]) -> EvalContext:
        return EvalContext(setup=self._setup_context(screen), cache_dir=self.settings.cache_dir)
