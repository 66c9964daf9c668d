"""One attempt of one rollout: lease env -> setup -> step loop -> evaluate -> release (SPEC section 4).

The outcome is exactly one terminal `RolloutStatus`. Infrastructure failures (env transport, model
gateway) are reported as such so the job layer can retry them on another env; deterministic failures
(`setup_error`, `eval_error`) and bugs (`runner_error`, any unexpected exception, with its traceback)
are not retried.
"""

from __future__ import annotations

import base64
import logging
import time
import traceback
from collections.abc import Callable, Collection
from functools import partial
from typing import Any

import redis

from common.blobs import open_blob_writer
from common.env_client import DesktopEnvClient, EnvError
from common.envpool import EnvPool, Lease, LeaseKeeper
from common.events import EpisodeEvent
from common.run import RolloutJob, trajectory_prefix
from common.runstate import RolloutRecord, is_cancelled, record_rollout
from common.status import RolloutStatus
from common.versions import version_order_key
from services.runner.agent.base import Agent
from services.runner.agent.external import ExternalAgent
from services.runner.agent.registry import make_agent
from services.runner.envs import EnvRequest, EnvUnavailable, make_provider
from services.runner.external import ExternalEpisode, run_external
from services.runner.first_screen import FirstScreen, FirstScreenWaiter, needs_wait, window_ids
from services.runner.metrics import LEASE_WAIT_SECONDS, observe_attempt
from services.runner.model_client import ModelClient, shared_model_client
from services.runner.osworld import EvalContext, EvalError, SetupContext, SetupError, evaluate, run_setup
from services.runner.osworld.evidence import Evidence
from services.runner.outcome import EpisodeEnd, EpisodeStop, RolloutOutcome, StepTotals
from services.runner.publisher import BackpressureTimeout, BlobPutError, EventPublisher, retry_redis
from services.runner.settings import RunnerSettings
from services.runner.steps import Episode, StepLoop, pointer_of
from services.runner.timings import AttemptTimings

log = logging.getLogger(__name__)

#: Characters of a traceback kept in a `runner_error` rollout's `error` (the end, where the cause is).
TRACEBACK_CHARS = 4000

__all__ = ["RolloutOutcome", "RolloutRunner", "bug_report"]


def bug_report(exc: BaseException) -> str:
    """`runner error: <exc>` and the end of its traceback (at most `TRACEBACK_CHARS` characters)."""
    text = "".join(traceback.format_exception(exc))
    return f"runner error: {exc!r}\n{text[-TRACEBACK_CHARS:]}"


class RolloutRunner:
    """Runs rollout attempts with its Redis client, env pool, publisher and gateway client."""

    def __init__(self, client: redis.Redis, settings: RunnerSettings) -> None:
        self.client = client
        self.settings = settings
        self.pool = EnvPool(client)
        self.provider = make_provider(settings, client)
        blobs = open_blob_writer(settings.store_url, settings.s3_endpoint, settings.s3_access_key.get_secret_value(),
                                 settings.s3_secret_key.get_secret_value(), settings.s3_secure, settings.s3_region)
        self.publisher = EventPublisher(client, settings.stream_backlog_bytes, settings.backpressure_wait_s,
                                        settings.event_shards, blobs, settings.blob_retry_s)
        self.steps = StepLoop(client, settings, self.publisher)

    def model_client(self) -> ModelClient:
        """The gateway client of this process (one connection pool kept across rollouts)."""
        key = self.settings.gateway_api_key
        return shared_model_client(self.settings.gateway_url, self.settings.model_timeout_s,
                                   self.settings.model_connect_timeout_s, key.get_secret_value() if key else None)

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
            ttl_s=self.settings.run_ttl_s,
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
    def run(self, job: RolloutJob, attempt: int, final_attempt: bool,
            avoid_envs: Collection[str] = (), picked_at: float | None = None) -> RolloutOutcome:
        """Run one attempt and record its outcome (a retried infra failure is recorded as `queued`).

        `avoid_envs`: env ids of earlier failed attempts, leased only when no other env is free.
        `picked_at`: when the worker picked the job (`time.monotonic()` s; None: now), the start of
        the attempt's `job_start_ms` and `startup_ms` timings (`services.runner.timings`).
        Every failure of the episode, a bug included, comes back as the outcome's status. The end
        event and the final record are retried through Redis errors and backpressure for up to
        `RUNNER_FINISH_RETRY_S` (see `_finish`), so a finished episode is not run again because its
        bookkeeping met a short Redis outage. Raises: redis.RedisError when Redis stays down.
        """
        started = time.time()
        begun = time.monotonic()
        picked_at = begun if picked_at is None else picked_at
        timings = AttemptTimings(picked_at=picked_at, job_start_ms=(begun - picked_at) * 1000.0)
        end_event: EpisodeEvent | None = None
        episode_end: EpisodeEnd | None = None
        if is_cancelled(self.client, job.run_id):
            outcome = RolloutOutcome(status=RolloutStatus.CANCELLED, error="run cancelled before start")
        else:
            self._record(job, attempt, RolloutStatus.RUNNING, started_at=started)
            outcome, episode_end = self._leased_attempt(job, attempt, avoid_envs, timings)
        outcome.timings = timings.as_dict()
        if episode_end is not None:
            end_event = episode_end.event(outcome)
        ended = time.time()
        observe_attempt(outcome.status.value, outcome.timings)
        retry_pending = outcome.status.is_infra_failure and not final_attempt
        final = partial(
            self._record,
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
            timings=outcome.timings,
            prompt_tokens=outcome.prompt_tokens,
            completion_tokens=outcome.completion_tokens,
        )
        self._finish(job, end_event, final)
        return outcome

    def _finish(self, job: RolloutJob, end_event: EpisodeEvent | None, record: Callable[[], None]) -> None:
        """Publish the end event (no backpressure wait: it is small and lets the sink close the
        trajectory), then write the final record; each retried on Redis errors for up to
        `finish_retry_s` seconds (the end event first: a crash between the two re-runs the rollout
        as a newer attempt, which replaces the trajectory, instead of leaving one without a manifest)."""
        if end_event is not None:
            retry_redis(lambda: self.publisher.publish(end_event, wait=False), self.settings.finish_retry_s,
                        f"end event of {job.rollout_id}")
        retry_redis(record, self.settings.finish_retry_s, f"final record of {job.rollout_id}")

    def record_bug(self, job: RolloutJob, attempt: int, exc: BaseException) -> None:
        """Record `runner_error` (with the traceback) for an exception that escaped `run()`."""
        self._record(job, attempt, RolloutStatus.RUNNER_ERROR, error=bug_report(exc), ended_at=time.time())

    def _leased_attempt(self, job: RolloutJob, attempt: int, avoid_envs: Collection[str],
                        timings: AttemptTimings) -> tuple[RolloutOutcome, EpisodeEnd | None]:
        """Lease an env, run the episode on it, give it back; `timings` gains the lease ones
        (`lease_wait_ms`, `release_ms`, `held_ms`, `teardown_ms`) and the episode's."""
        request = EnvRequest(owner=f"{job.rollout_id}#{attempt}", run_id=job.run_id, rollout_id=job.rollout_id,
                             avoid=avoid_envs)
        t_lease = time.monotonic()
        try:
            lease = self.provider.acquire(request, self.settings.lease_wait_s)
        except EnvUnavailable as exc:
            timings.lease_wait_ms = (time.monotonic() - t_lease) * 1000.0
            return RolloutOutcome(status=exc.status, error=str(exc)), None
        t_leased = time.monotonic()
        LEASE_WAIT_SECONDS.observe(t_leased - t_lease)
        env = DesktopEnvClient(lease.env.url)
        totals = StepTotals(timings)
        t_done = t_leased
        try:
            with LeaseKeeper(self.pool, lease) as keeper:
                outcome, episode_end = self._episode(job, attempt, env, lease, keeper, totals)
                t_done = time.monotonic()
            if outcome.status.is_infra_failure and outcome.status is not RolloutStatus.MODEL_ERROR:
                reason = self.provider.explain(lease)  # e.g. the pod's Kubernetes reason (Evicted, OOMKilled)
                if reason:
                    outcome.error = f"{outcome.error} [{reason}]" if outcome.error else reason
        finally:
            t_release = time.monotonic()
            self._release(env, lease)
            t_freed = time.monotonic()
        timings.lease_wait_ms = (t_leased - t_lease) * 1000.0
        timings.release_ms = (t_freed - t_release) * 1000.0
        timings.held_ms = (t_freed - t_leased) * 1000.0
        timings.teardown_ms = (t_freed - t_done) * 1000.0
        outcome.env_id = lease.env.env_id
        return outcome, episode_end

    def _release(self, env: DesktopEnvClient, lease: Lease) -> None:
        """Give the env back through its provider: reset or replaced by its flavor, then the lease freed."""
        try:
            self.provider.release(lease, env)
        finally:
            env.close()

    def _episode(
        self, job: RolloutJob, attempt: int, env: DesktopEnvClient, lease: Lease, keeper: LeaseKeeper,
        totals: StepTotals,
    ) -> tuple[RolloutOutcome, EpisodeEnd]:
        """Publish the start event, run setup, steps and evaluation; returns the outcome and what the end
        event holds besides it (built and published by `run`, after the env is released)."""
        ref = self._ref(job, attempt)
        sampling = job.sampling.model_dump()
        common_fields: dict[str, Any] = {
            "env_id": lease.env.env_id,
            "env_image": lease.env.provider,
            "sampling": sampling,
            "model": job.model,
            "agent": job.agent,
            "agent_options": job.agent_options,
            "domain": job.task.effective_domain,
        }
        t0 = time.perf_counter()
        self.publisher.publish(
            EpisodeEvent(phase="start", task_config=job.task.to_json_dict(), **ref, **common_fields)
        )
        agent: Agent | None = None
        outcome = RolloutOutcome(status=RolloutStatus.ENV_INIT_FAILED)
        timings = totals.timings
        setup_log: list[dict[str, Any]] = []  # setup/postconfig commands that exited non-zero
        model = self.model_client()
        try:
            screen, first = self._setup(job, env, lease, totals, setup_log)
            timings.setup_ms = (time.perf_counter() - t0) * 1000.0
            if job.agent == ExternalAgent.name:  # a program of its own, beside the env (external.py)
                outcome = run_external(ExternalEpisode(job, ref, env.base_url, screen, self.settings,
                                                       self.publisher, totals))
            else:
                agent = make_agent(job.agent, job.agent_options, job.task.instruction, screen,
                                   self.settings.client_password)
                outcome = self.steps.run(Episode(job, ref, env, model, agent, keeper, totals, first))
            if outcome.status.has_reward:
                t_eval = time.perf_counter()
                outcome = self._evaluate(job, env, screen, outcome, setup_log)
                timings.eval_ms = (time.perf_counter() - t_eval) * 1000.0
        except EpisodeStop as stop:
            outcome = RolloutOutcome(status=stop.status, error=stop.error, num_steps=totals.steps)
        except (redis.RedisError, BackpressureTimeout) as exc:  # the event stream failed: infrastructure
            outcome = RolloutOutcome(status=RolloutStatus.ENV_ERROR, error=f"event stream unavailable: {exc!r}",
                                     num_steps=totals.steps)
        except BlobPutError as exc:  # the object store refused or failed a step file: infrastructure
            outcome = RolloutOutcome(status=RolloutStatus.ENV_ERROR, error=f"object store unavailable: {exc}",
                                     num_steps=totals.steps)
        except Exception as exc:  # a bug: end the episode, free the env, and show it as a bug (never infra)
            log.exception("rollout %s crashed", job.rollout_id)
            outcome = RolloutOutcome(status=RolloutStatus.RUNNER_ERROR, error=bug_report(exc),
                                     num_steps=totals.steps)
        timings.total_ms = (time.perf_counter() - t0) * 1000.0
        outcome.prompt_tokens, outcome.completion_tokens = totals.prompt_tokens, totals.completion_tokens
        versions = totals.versions
        return outcome, EpisodeEnd({
            "min_policy_version": min(versions, key=version_order_key) if versions else job.policy_version,
            "max_policy_version": max(versions, key=version_order_key) if versions else job.policy_version,
            "spanned_reload": len(set(totals.versions)) > 1,
            "final_messages": agent.final_messages() if agent else None,
            "setup_log": setup_log,
            **ref,
            **common_fields,
        })

    def _setup(self, job: RolloutJob, env: DesktopEnvClient, lease: Lease, totals: StepTotals,
               setup_log: list[dict[str, Any]]) -> tuple[tuple[int, int], FirstScreen]:
        """Prepare the env through its provider (a reset when its flavor has `/reset`; its time in ms
        goes to `totals.timings.reset_ms`), run the task's `config` (non-zero exits noted in `setup_log`)
        and wait until the windows it started show (`first_screen`); returns the screen size (pixels)
        and the first screen.
        Raises: EpisodeStop(env_init_failed) for env transport failures (infrastructure: retried),
        EpisodeStop(setup_error) for a failing setup step (the task's config: not retried)."""
        try:
            t_reset = time.perf_counter()
            try:
                self.provider.prepare(lease, env)
            finally:
                totals.timings.reset_ms = (time.perf_counter() - t_reset) * 1000.0
            screen = env.screen_size()
            waits = needs_wait(job.task.config) and self.settings.first_screen_max_s > 0
            before, baseline = (window_ids(env), env.screenshot()) if waits else (None, None)
            run_setup(job.task.config, env, self._setup_context(screen, setup_log))
            waiter = FirstScreenWaiter(env, lambda: pointer_of(env), self.settings.first_screen_config)
            first = waiter.wait(job.task.config, before, baseline)
        except EnvError as exc:
            raise EpisodeStop(RolloutStatus.ENV_INIT_FAILED, f"env failed during setup: {exc}") from exc
        except SetupError as exc:
            raise EpisodeStop(RolloutStatus.SETUP_ERROR, f"setup failed: {exc}") from exc
        return screen, first

    def _evaluate(self, job: RolloutJob, env: DesktopEnvClient, screen: tuple[int, int],
                  outcome: RolloutOutcome, setup_log: list[dict[str, Any]]) -> RolloutOutcome:
        """The rewarded outcome with its reward. Raises: EpisodeStop(eval_error) when the evaluator
        cannot run (task config: not retried), EpisodeStop(env_error) when the env fails (retried)."""
        evidence = Evidence()
        try:
            outcome.reward = float(evaluate(job.task.evaluator, env, self._eval_context(screen, evidence, setup_log),
                                            outcome.last_action))
        except (EvalError, SetupError) as exc:
            raise EpisodeStop(RolloutStatus.EVAL_ERROR, f"evaluation failed: {exc}") from exc
        except EnvError as exc:
            raise EpisodeStop(RolloutStatus.ENV_ERROR, f"env failed during evaluation: {exc}") from exc
        outcome.evaluation = {**evidence.to_json(), **self._evidence_files(evidence.files)}
        return outcome

    def _evidence_files(self, files: dict[str, bytes]) -> dict[str, dict[str, str]]:
        """The evaluation's files for its end event: `{"file_keys": {name: blob key}}` when the runner has a
        store (each put first, `EventPublisher.put_file`), else `{"files": {name: base64}}` inline.
        Raises: BlobPutError (caught by `_episode` as an infrastructure failure)."""
        if self.publisher.blobs is None:
            return {"files": {name: base64.b64encode(data).decode() for name, data in files.items()}}
        keys = {}
        for name, data in files.items():
            key = self.publisher.put_file(data, "application/octet-stream", "")
            assert key is not None  # the publisher has a blob writer
            keys[name] = key
        return {"file_keys": keys}

    def _setup_context(self, screen: tuple[int, int], log: list[dict[str, Any]] | None = None) -> SetupContext:
        return SetupContext(client_password=self.settings.client_password, screen=screen,
                            cache_dir=self.settings.cache_dir, log=[] if log is None else log)

    def _eval_context(self, screen: tuple[int, int], evidence: Evidence | None = None,
                      log: list[dict[str, Any]] | None = None) -> EvalContext:
        return EvalContext(setup=self._setup_context(screen, log), cache_dir=self.settings.cache_dir,
                           evidence=evidence)
