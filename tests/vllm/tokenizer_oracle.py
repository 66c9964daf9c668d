"""The real tokenizer, run in .venv-vllm (transformers is not in the project's venv): reads one JSON object on
stdin, `{"model_dir": str, "chats": [messages, ...], "decode": [[ids], ...], "encode": [text, ...]}`, and
writes `{"chats": [ids, ...], "decode": [text, ...], "encode": [[ids], ...]}`: each chat through the model's
chat template (`apply_chat_template(..., add_generation_prompt=True)`, as vLLM's chat endpoint renders it),
each id list decoded (`skip_special_tokens=True`, as vLLM's response text), each text encoded (no specials).
"""

import json
import sys

from transformers import AutoTokenizer


def main() -> None:
    job = json.load(sys.stdin)
    tokenizer = AutoTokenizer.from_pretrained(job["model_dir"])
    chats = []
    for messages in job.get("chats", []):
        ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
        chats.append(list(ids["input_ids"] if hasattr(ids, "keys") else ids))
    json.dump({"chats": chats,
               "decode": [tokenizer.decode(ids, skip_special_tokens=True) for ids in job.get("decode", [])],
               "encode": [tokenizer.encode(text, add_special_tokens=False) for text in job.get("encode", [])]},
              sys.stdout)


if __name__ == "__main__":
    main()
