"""Session level of the trainer export: per session, the multi-turn token sequence of its model calls with its
loss mask, in the fields verl's agent loop hands its trainer (verl `AgentLoopOutput`: `prompt_ids`,
`response_ids`, `response_mask`, `rollout_log_probs`; https://github.com/volcengine/verl,
verl/experimental/agent_loop/agent_loop.py).

A session is the calls of one gateway session (steps with the same `session_id`), else the steps of one
trajectory (a built-in agent's calls). Its calls, in step order, are laid end to end as a chat template does:
the first call's prompt is `prompt_ids`; each call's response tokens follow with mask 1 and their logprobs; the
tokens a later call's prompt adds after everything before it (tool results, observations, the next user turn,
screenshots) follow with mask 0 and logprob 0.0 (verl pads the logprobs of masked tokens with 0 too). That
needs each call's prompt to start with the previous call's prompt and response token ids. Where it does not
(the agent rewrote or cut its history, or another conversation of a multi-call agent begins), the sequence so
far becomes a record and a new one starts with that call: `segment` numbers them (0-based) and
`segment_reason` says why each began. A call without prompt or response token ids (a server that gave none)
cannot be placed: it ends the segment and is listed in the next record's `skipped_steps` (the last record's,
after the last placed call).

Per record also: `steps` (the calls' step numbers), `policy_versions` (each call's), `turn_starts` /
`turn_ends` (each call's response span in `response_ids`, end exclusive), and the trajectory's fields (group,
ids, status, reward). `rollout_log_probs` is None when a call of the segment came without logprobs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class _Segment:
    """One multi-turn sequence being built."""

    reason: str
    prompt_ids: list[int]
    response_ids: list[int] = field(default_factory=list)
    response_mask: list[int] = field(default_factory=list)
    log_probs: list[float] | None = field(default_factory=list)
    steps: list[int] = field(default_factory=list)
    policy_versions: list[str | None] = field(default_factory=list)
    turn_starts: list[int] = field(default_factory=list)
    turn_ends: list[int] = field(default_factory=list)
    skipped_steps: list[int] = field(default_factory=list)

    def sequence_length(self) -> int:
        return len(self.prompt_ids) + len(self.response_ids)

    def extends(self, prompt: list[int]) -> bool:
        """`prompt` starts with this whole sequence (prompt then responses and observations)."""
        n = len(self.prompt_ids)
        return (len(prompt) >= self.sequence_length() and prompt[:n] == self.prompt_ids
                and prompt[n:self.sequence_length()] == self.response_ids)

    def observe(self, tokens: list[int]) -> None:
        """Append tokens the model did not produce (mask 0, logprob 0.0)."""
        self.response_ids += tokens
        self.response_mask += [0] * len(tokens)
        if self.log_probs is not None:
            self.log_probs += [0.0] * len(tokens)

    def respond(self, step: dict[str, Any], ids: list[int], logprobs: list[float] | None) -> None:
        """Append one call's response (mask 1, its logprobs)."""
        self.turn_starts.append(len(self.response_ids))
        self.response_ids += ids
        self.response_mask += [1] * len(ids)
        self.turn_ends.append(len(self.response_ids))
        if self.log_probs is not None and logprobs is not None and len(logprobs) == len(ids):
            self.log_probs += logprobs
        else:
            self.log_probs = None
        self.steps.append(int(step["step"]))
        self.policy_versions.append(step.get("policy_version"))

    def record(self, index: int) -> dict[str, Any]:
        return {"segment": index, "segment_reason": self.reason, "prompt_ids": self.prompt_ids,
                "response_ids": self.response_ids, "response_mask": self.response_mask,
                "rollout_log_probs": self.log_probs, "steps": self.steps, "policy_versions": self.policy_versions,
                "turn_starts": self.turn_starts, "turn_ends": self.turn_ends, "skipped_steps": self.skipped_steps}


def _tokens(step: dict[str, Any]) -> tuple[list[int] | None, list[int] | None, list[float] | None]:
    """(prompt ids, response ids, response logprobs) of a stored step (either naming of the fields)."""
    return (step.get("prompt_token_ids"), step.get("response_token_ids", step.get("token_ids")),
            step.get("response_logprobs", step.get("logprobs")))


def session_segments(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The segments of one session's calls (`steps`: stored `cua.step.v1` records, any order), each a dict of
    the fields in the module docstring (without the trajectory's). No call with token ids: no segment."""
    segments: list[_Segment] = []
    current: _Segment | None = None
    skipped: list[int] = []
    for step in sorted(steps, key=lambda s: int(s["step"])):
        prompt, response, logprobs = _tokens(step)
        if prompt is None or response is None:
            skipped.append(int(step["step"]))
            current = None
            continue
        if current is not None and current.extends(prompt):
            current.observe(prompt[current.sequence_length():])
        else:
            reason = ("first call" if not segments else
                      f"step {step['step']}: the call's prompt does not extend the sequence before it"
                      if current is not None else
                      f"step {step['step']}: after calls without token ids")
            current = _Segment(reason=reason, prompt_ids=list(prompt), skipped_steps=skipped)
            skipped = []
            segments.append(current)
        current.respond(step, list(response), logprobs)
    if segments:
        segments[-1].skipped_steps += skipped  # calls without token ids after the last placed one
    return [segment.record(i) for i, segment in enumerate(segments)]


def session_records(rollout: dict[str, Any], steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Session-level records of one trajectory: its steps grouped by `session_id` (steps without one form one
    session, named by the rollout id), each session's segments with `rollout` (the trajectory's fields, see
    `export._rollout_fields`) and `session_id`, and `num_segments`."""
    sessions: dict[str, list[dict[str, Any]]] = {}
    for step in steps:
        sessions.setdefault(step.get("session_id") or rollout["rollout_id"], []).append(step)
    records = []
    for session_id, calls in sessions.items():
        segments = session_segments(calls)
        records += [{**rollout, "session_id": session_id, "num_segments": len(segments), **segment}
                    for segment in segments]
    return records
