"""Token carrying: each prompt of an episode is the previous prompt, the token ids the model sampled, then the
tokens the chat template adds for the new turns, so a trainer's multi-turn sequence is exactly what the model
saw and produced (issue 32, point 3; verl's agent loop does the same, verl issues #6921 and #6719 show what
re-encoding text loses).

Without it every step's request is chat messages that the replica renders and tokenizes afresh: a reply the
model sampled as a non-canonical token split (frequent at temperature 1), or whose text the agent changes
(OSWorld's prompt agent strips it), comes back as other ids, and the next prompt no longer starts with the
previous prompt plus response (the session export must then start a new segment).

How a prompt is built (`TokenCarry.prompt_ids`), for a request whose messages are the previous request's,
then an assistant message (the recorded reply), then new messages, none with an image (a token prompt cannot
carry images through vLLM's OpenAI API):
- `A` = the replica's chat template of the previous messages plus the assistant message left open
  (`/tokenize` with `continue_final_message`), `T` = the template of the whole request (generation prompt on);
- when `A` starts with the previous request's rendered prompt and `T` starts with `A`, the tail `T[len(A):]`
  is what the template adds after the reply (its end-of-turn token, separators, the new turns and the
  generation prompt); when the sampled reply already ends with that end-of-turn token (it stopped on it), the
  tail's copy of it is dropped;
- prompt = previous prompt ids + sampled ids + tail, sent as a token prompt (`/v1/completions`).
Anything else (the agent cut or rewrote its history, an image, a replica without `/tokenize`) returns None: the
request goes as chat messages, and the export records the segment break with its reason.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

#: `tokenize(messages, continue_final_message) -> ids`: the replica's chat template (ModelClient.tokenize).
Tokenize = Callable[[list[dict[str, Any]], bool], list[int]]


def has_image(messages: list[dict[str, Any]]) -> bool:
    """Whether a message has a content part other than text (an image)."""
    return any(isinstance(m.get("content"), list) and any(part.get("type") != "text" for part in m["content"])
               for m in messages)


@dataclass
class _Turn:
    """The last request of the episode: its messages, the template's ids of them, the ids sent, the reply's."""

    messages: list[dict[str, Any]]
    rendered: list[int]
    prompt: list[int]
    response: list[int]


class TokenCarry:
    """The carried token sequence of one episode (module docstring). Not thread-safe: one per episode."""

    def __init__(self, tokenize: Tokenize) -> None:
        self.tokenize = tokenize
        self.last: _Turn | None = None
        self._rendered: list[int] = []  # the template's ids of the request `prompt_ids` last built
        self.disabled = False  # set when the replicas cannot tokenize: every request goes as chat messages

    def prompt_ids(self, messages: list[dict[str, Any]]) -> list[int] | None:
        """The token prompt of a request of `messages`, or None when it must go as chat messages.
        Raises: what `tokenize` raises (ModelError)."""
        last = self.last
        if last is None or self.disabled or has_image(messages):
            return None
        n = len(last.messages)
        if len(messages) <= n + 1 or messages[:n] != last.messages or messages[n].get("role") != "assistant":
            return None
        opened = self.tokenize(messages[:n + 1], True)
        rendered = self.tokenize(messages, False)
        if opened[:len(last.rendered)] != last.rendered or rendered[:len(opened)] != opened:
            log.info("token carry: the template of the history is not a prefix of the request's: sent as chat")
            return None
        tail = rendered[len(opened):]
        if tail and last.response and tail[0] == last.response[-1]:
            tail = tail[1:]  # the reply ended on the end-of-turn token the template puts after it
        self._rendered = rendered
        return last.prompt + last.response + tail

    def commit(self, messages: list[dict[str, Any]], prompt: list[int] | None, response: list[int] | None,
               carried: bool) -> None:
        """Record the step's request and the reply the agent kept: `prompt` the ids sent (or, for a chat request,
        the ones the replica reports), `response` the sampled ids. Without ids the carry stops (next: chat)."""
        if self.disabled or prompt is None or response is None or has_image(messages):
            self.last = None
            return
        rendered = self._rendered if carried else prompt
        self.last = _Turn(messages=[dict(m) for m in messages], rendered=rendered, prompt=prompt,
                          response=response)
