"""The tokenizer, chat template and image processor of the tiny models (`make_tiny_model.py`).

The tokenizer is a byte-level BPE (`tokenizers`: `ByteLevel` pre-tokenizer and decoder, all 256 bytes in the
alphabet, so any text encodes) of `VOCAB_SIZE` tokens, trained on this repository's agent prompt texts
(`corpus_files`), with Qwen2's special tokens. The chat template is Qwen2-VL's (Qwen2-VL and Qwen2.5-VL
`chat_template.json`, Apache-2.0, https://huggingface.co/Qwen/Qwen2.5-VL-7B-Instruct): string or OpenAI
content-part messages, each image part as `<|vision_start|><|image_pad|><|vision_end|>`, the default system
message when the first message is not one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
VOCAB_SIZE = 3000
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
                  "<|image_pad|>", "<|video_pad|>"]
CHAT_TEMPLATE = (
    "{% set image_count = namespace(value=0) %}{% set video_count = namespace(value=0) %}"
    "{% for message in messages %}{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}<|im_end|>\n"
    "{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "{% set image_count.value = image_count.value + 1 %}"
    "{% if add_vision_id %}Picture {{ image_count.value }}: {% endif %}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'video' or 'video' in content %}"
    "{% set video_count.value = video_count.value + 1 %}"
    "{% if add_vision_id %}Video {{ video_count.value }}: {% endif %}"
    "<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
#: Image preprocessing of Qwen2.5-VL (its `preprocessor_config.json`), smaller pixel bounds for CPU tests.
IMAGE_PROCESSOR = {
    "image_processor_type": "Qwen2VLImageProcessor", "processor_class": "Qwen2_5_VLProcessor",
    "do_resize": True, "do_rescale": True, "do_normalize": True, "do_convert_rgb": True,
    "rescale_factor": 1 / 255, "resample": 3,
    "image_mean": [0.48145466, 0.4578275, 0.40821073], "image_std": [0.26862954, 0.26130258, 0.27577711],
    "min_pixels": 3136, "max_pixels": 200704, "patch_size": 14, "temporal_patch_size": 2, "merge_size": 2,
}
#: Texts of the agents' formats, so that their answers are few tokens.
FORMAT_TEXTS = ["```WAIT```", "```DONE```", "```FAIL```", "```python\npyautogui.click(100, 200)\n```",
                "Thought: wait\nAction: wait()", "Action: finished(content='done')", "<tool_call>", "</tool_call>"]


def corpus_files() -> list[Path]:
    """The repository files the tokenizer is trained on (the agents' prompt texts), in a fixed order."""
    return sorted((ROOT / "services" / "runner" / "agent").glob("*.py"))


def corpus() -> list[str]:
    """The training texts: each corpus file's lines, then the format texts (repeated so they merge)."""
    lines: list[str] = []
    for path in corpus_files():
        lines += path.read_text(encoding="utf-8").splitlines()
    return lines + FORMAT_TEXTS * 50


def build_tokenizer() -> Any:
    """A `PreTrainedTokenizerFast`: byte-level BPE trained on `corpus()`, Qwen's specials, `CHAT_TEMPLATE`."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, special_tokens=SPECIAL_TOKENS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator(corpus(), trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                        bos_token=None, unk_token=None, model_max_length=32768,
                                        additional_special_tokens=SPECIAL_TOKENS[1:2] + SPECIAL_TOKENS[3:])
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def write_vl_processor(out: Path) -> None:
    """Qwen2.5-VL's image processor config and the chat template (as `chat_template.json`) into `out`."""
    (out / "preprocessor_config.json").write_text(json.dumps(IMAGE_PROCESSOR, indent=2) + "\n")
    (out / "chat_template.json").write_text(json.dumps({"chat_template": CHAT_TEMPLATE}, indent=2) + "\n")
