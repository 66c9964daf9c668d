"""A few seconds of CPU training that teach a tiny random model (`make_tiny_model.py --train FORMAT`) to answer
in an agent's format, so rollouts with it are multi-turn instead of ending at step 0 on an unparseable reply.

Training data: `STEPS` batches of `BATCH` synthetic conversations (seeded `random.Random`): a system message and
user turns made of consecutive corpus lines (1 to `MAX_CHARS` characters, like an accessibility tree and the
question), each answered by a reply drawn from the format's distribution; the loss (cross-entropy) is on the
reply tokens and their `<|im_end|>` only. One CPU thread and fixed seeds: the same weights every build.
"""

from __future__ import annotations

import random
from typing import Any

from tiny_chat import corpus

#: Agent formats: (reply, weight) pairs. `osworld_pyautogui`: OSWorld's prompt agent, pyautogui action space.
FORMATS: dict[str, list[tuple[str, int]]] = {
    "osworld_pyautogui": [("```WAIT```", 9), ("```DONE```", 1)],
}
STEPS = 120
BATCH = 4
MAX_CHARS = 1200
LEARNING_RATE = 3e-3


def _conversation(rng: random.Random, lines: list[str], replies: list[str], weights: list[int]) -> list[dict[str, str]]:
    def chunk() -> str:
        size = rng.randint(1, MAX_CHARS)
        start = rng.randrange(len(lines))
        text = ""
        for line in lines[start:] + lines[:start]:
            if len(text) >= size:
                break
            text += line + "\n"
        return text[:size]

    messages = [{"role": "system", "content": chunk()}]
    for _ in range(rng.randint(1, 3)):
        messages.append({"role": "user", "content": chunk()})
        messages.append({"role": "assistant", "content": rng.choices(replies, weights)[0]})
    return messages


def _example(tokenizer: Any, messages: list[dict[str, str]]) -> tuple[list[int], list[int]]:
    """(ids, labels) of one conversation: labels are -100 but on the assistant replies and their `<|im_end|>`."""
    ids: list[int] = []
    labels: list[int] = []
    for end in range(1, len(messages) + 1):
        full = tokenizer.apply_chat_template(messages[:end], tokenize=True, add_generation_prompt=False)
        full = list(full["input_ids"] if isinstance(full, dict) or hasattr(full, "keys") else full)
        new = full[len(ids):]
        if messages[end - 1]["role"] == "assistant":
            keep = len(tokenizer.encode(messages[end - 1]["content"])) + 1  # the reply and <|im_end|>
            labels += [-100] * (len(new) - keep - 1) + new[-keep - 1:-1] + [-100]  # not the "\n" after it
        else:
            labels += [-100] * len(new)
        ids = full
    return ids, labels


def train_format(model: Any, tokenizer: Any, fmt: str, seed: int) -> None:
    """Train `model` (float32, in place) to answer in `fmt` (a `FORMATS` key). Raises: SystemExit on an
    unknown format."""
    import torch

    if fmt not in FORMATS:
        raise SystemExit(f"make_tiny_model: unknown --train format {fmt!r} (known: {', '.join(FORMATS)})")
    replies = [reply for reply, _ in FORMATS[fmt]]
    weights = [weight for _, weight in FORMATS[fmt]]
    torch.set_num_threads(1)
    torch.manual_seed(seed)
    rng = random.Random(seed)
    lines = [line for line in corpus() if line.strip()]
    pad = tokenizer.pad_token_id
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE)
    model.train()
    for _ in range(STEPS):
        batch = [_example(tokenizer, _conversation(rng, lines, replies, weights)) for _ in range(BATCH)]
        width = max(len(ids) for ids, _ in batch)
        input_ids = torch.tensor([ids + [pad] * (width - len(ids)) for ids, _ in batch])
        labels = torch.tensor([lab + [-100] * (width - len(lab)) for _, lab in batch])
        mask = torch.tensor([[1] * len(ids) + [0] * (width - len(ids)) for ids, _ in batch])
        loss = model(input_ids=input_ids, attention_mask=mask, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    print(f"make_tiny_model: trained {STEPS} steps on {fmt}, last loss {loss.item():.4f}")
