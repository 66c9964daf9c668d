"""Builds a tiny random-weight model that vLLM serves, offline and deterministically (no hub, fixed seeds).

Usage (in .venv-vllm, which has torch, transformers, tokenizers and peft; `scripts/setup.sh --vllm`):

    .venv-vllm/bin/python scripts/make_tiny_model.py OUT_DIR [--kind text|vl|lora] [--train FORMAT]
                                                     [--base DIR] [--seed N]

- `text`: a Qwen2 causal LM (`Qwen2ForCausalLM`: hidden 128, 2 layers, 2 attention heads, 1 KV head, so
  head_dim 64, the smallest vLLM's CPU attention accepts; bf16, tied embeddings), with a byte-level BPE
  tokenizer of `VOCAB_SIZE` tokens trained with `tokenizers` on this repository's agent prompt texts, Qwen's
  special tokens (`<|im_start|>`, `<|im_end|>`, `<|endoftext|>`, the vision ones) and a Qwen2-VL style chat
  template (string or OpenAI content-part messages; `tiny_chat.CHAT_TEMPLATE`).
- `vl`: the same tokenizer and text stack as `Qwen2_5_VLForConditionalGeneration` (UI-TARS-1.5's
  architecture) with a 1-layer vision tower and `Qwen2VLImageProcessor`'s preprocessor config.
- `lora`: a random LoRA adapter (peft, r=8 on q_proj/v_proj, `init_lora_weights=False`) for the model at
  `--base` (default: the text model next to OUT_DIR, `tiny-qwen2`); `--seed` makes different adapters.

`--train FORMAT` (text only) then trains the model for a few seconds on CPU to answer in an agent's format
(`tiny_train.FORMATS`: `osworld_pyautogui` answers ```WAIT``` nine times in ten, else ```DONE```), so a rollout
with it is multi-turn; at temperature 1 it still strays now and then.

A build is skipped when OUT_DIR/.stamp holds the digest of this script, its helpers, the corpus and the
arguments (`.cua/models/<name>/` is built once and reused). Exit status 0 on success, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from tiny_chat import build_tokenizer, corpus_files  # noqa: E402

STAMP = ".stamp"
KINDS = ("text", "vl", "lora")


def digest(args: argparse.Namespace) -> str:
    """SHA-256 (hex) of the build's inputs: the scripts, the corpus files and the arguments."""
    sha = hashlib.sha256()
    for path in sorted(HERE.glob("tiny_*.py")) + [Path(__file__).resolve(), *corpus_files()]:
        sha.update(path.name.encode() + b"\0" + path.read_bytes())
    base = args.base and Path(args.base, STAMP)
    sha.update(json.dumps([args.kind, args.train, args.seed,
                           base.read_text() if base and base.exists() else None]).encode())
    return sha.hexdigest()


def _text_config(vocab_size: int, special: dict[str, int]) -> dict[str, object]:
    return dict(vocab_size=vocab_size, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=32768,
                rope_theta=1_000_000.0, tie_word_embeddings=True, bos_token_id=special["<|endoftext|>"],
                eos_token_id=special["<|im_end|>"], pad_token_id=special["<|endoftext|>"])


def build_text(out: Path, seed: int, train: str | None) -> None:
    """The Qwen2 text model and its tokenizer into `out`."""
    import torch
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    tokenizer = build_tokenizer()
    special = {t: tokenizer.convert_tokens_to_ids(t) for t in tokenizer.all_special_tokens}
    torch.manual_seed(seed)
    config = Qwen2Config(**_text_config(len(tokenizer), special))
    model = Qwen2ForCausalLM(config)
    if train:
        from tiny_train import train_format

        train_format(model, tokenizer, train, seed)
    model = model.to(torch.bfloat16)
    model.generation_config = GenerationConfig(eos_token_id=[special["<|im_end|>"], special["<|endoftext|>"]],
                                               pad_token_id=special["<|endoftext|>"])
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)


def build_vl(out: Path, seed: int) -> None:
    """The Qwen2.5-VL model (UI-TARS-1.5's architecture), tokenizer, image processor and chat template into `out`."""
    import torch
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    tokenizer = build_tokenizer()
    special = {t: tokenizer.convert_tokens_to_ids(t) for t in tokenizer.all_special_tokens}
    ids = {t: tokenizer.convert_tokens_to_ids(t)
           for t in ("<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>")}
    text = _text_config(len(tokenizer), special)
    vision = dict(depth=1, hidden_size=64, intermediate_size=128, num_heads=1, out_hidden_size=128,
                  patch_size=14, spatial_merge_size=2, temporal_patch_size=2, window_size=112,
                  fullatt_block_indexes=[0], in_chans=3)
    torch.manual_seed(seed)
    config = Qwen2_5_VLConfig(text_config=text, vision_config=vision, **text,
                              vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
                              image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
                              rope_scaling={"type": "mrope", "mrope_section": [8, 12, 12]})
    model = Qwen2_5_VLForConditionalGeneration(config).to(torch.bfloat16)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    from tiny_chat import write_vl_processor

    write_vl_processor(out)


def build_lora(out: Path, base: Path, seed: int) -> None:
    """A random LoRA adapter (r=8, q_proj/v_proj, `init_lora_weights=False`) of the model at `base` into `out`."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    if not (base / STAMP).exists():
        raise SystemExit(f"make_tiny_model: base model {base} is not built (build it with --kind text first)")
    model = AutoModelForCausalLM.from_pretrained(base, torch_dtype=torch.float32)
    torch.manual_seed(seed)
    config = LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    peft_model = get_peft_model(model, config)
    peft_model.save_pretrained(out, safe_serialization=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="output directory (e.g. .cua/models/tiny-qwen2)")
    parser.add_argument("--kind", choices=KINDS, default="text")
    parser.add_argument("--train", default=None, help="text only: train to answer in this agent format")
    parser.add_argument("--base", default=None, help="lora only: the base model directory")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.kind == "lora" and args.base is None:
        args.base = str(args.out.parent / "tiny-qwen2")
    if args.train and args.kind != "text":
        parser.error("--train applies to --kind text only")
    os.environ.setdefault("RAYON_NUM_THREADS", "1")  # tokenizers' trainer: one thread, one result
    want = digest(args)
    stamp = args.out / STAMP
    if stamp.exists() and stamp.read_text() == want:
        print(f"make_tiny_model: {args.out} is up to date")
        return 0
    tmp = args.out.with_name(args.out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    if args.kind == "text":
        build_text(tmp, args.seed, args.train)
    elif args.kind == "vl":
        build_vl(tmp, args.seed)
    else:
        build_lora(tmp, Path(args.base), args.seed)
    (tmp / STAMP).write_text(want)
    shutil.rmtree(args.out, ignore_errors=True)
    tmp.rename(args.out)
    print(f"make_tiny_model: built {args.kind} model in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
