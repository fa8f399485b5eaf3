"""``text/tiny-llama``: a small LLaMA-architecture causal language model trained here, the
model the catalog converts into each LLM engine's format (issue 87, ``catalog.engines``).

It is trained exactly as ``text/tiny-gpt`` is (``gpt.fit``: the same text, the same byte-level
BPE of 512 tokens, the same steps and batches, one thread, deterministic kernels) with its own
seed, so its tokenizer's bytes are tiny-gpt's. LLaMA's parts are what the engines take:
rotary positions, RMS norms, a gated MLP, grouped-query attention (two key/value heads for six
query heads), an untied output head. Written as a Hugging Face folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pinbench.catalog import gpt

NAME = "text/tiny-llama"
VERSION = "1.0.0"
SEED = 87
LAYERS, HEADS, KV_HEADS, WIDTH, MLP = 2, 6, 2, 96, 192
"""Six heads of 16: ONNX Runtime's GroupQueryAttention takes head sizes in multiples of 16."""
FOLDER = "tiny-llama"
FOLDER_FILES = gpt.FOLDER_FILES


def train(data: Path, out: Path) -> Path:
    """The tokenizer and weights, trained on ``data``'s training text (``gpt.fit``)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    def build(vocab: int, end: int) -> Any:
        return LlamaForCausalLM(
            LlamaConfig(
                vocab_size=vocab,
                hidden_size=WIDTH,
                intermediate_size=MLP,
                num_hidden_layers=LAYERS,
                num_attention_heads=HEADS,
                num_key_value_heads=KV_HEADS,
                max_position_embeddings=gpt.CONTEXT,
                bos_token_id=end,
                eos_token_id=end,
                tie_word_embeddings=False,
                attention_dropout=0.0,
            )
        )

    return gpt.fit(data, out, build, seed=SEED)


def export(root: Path, weights: Path) -> list[Path]:
    """The trained folder copied under ``root/tiny-llama/`` with its model manifest."""
    description = (
        f"a {LAYERS}-layer LLaMA ({WIDTH} wide, {HEADS} query and {KV_HEADS} key/value heads, "
        f"{gpt.VOCAB}-token byte-level BPE, context {gpt.CONTEXT}) trained by pinbench's catalog "
        "on CPython's documentation topics, as a Hugging Face folder"
    )
    return [gpt.export_folder(root, weights, FOLDER, f"{NAME}@{VERSION}", description)]
