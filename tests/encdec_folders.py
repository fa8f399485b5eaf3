"""Tiny random-weight encoder-decoder folders as the field saves them (``save_pretrained``),
each with a tokenizer built here from the ``tokenizers`` library (no Hub access): T5 for text,
Whisper with its feature extractor for speech. Seeded; a second or two each."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

T5_WORDS = ["the", "cat", "sat", "on", "mat", "a", "dog", "numbers", "are", "not", "words"]
T5_SENTENCES = ["the cat sat on the mat", "a dog", "numbers are not words", "cat", "the dogs"]


def unigram_tokenizer(pieces: list[str], end: str) -> Any:
    """A SentencePiece-style tokenizer over ``pieces`` that appends ``end`` (T5's ``</s>``)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    scores = [(p, -1.0 if p.startswith("▁") else -5.0) for p in pieces]
    tokenizer = Tokenizer(models.Unigram(scores, unk_id=2, byte_fallback=False))
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"$A {end}", special_tokens=[(end, pieces.index(end))]
    )
    tokenizer.add_special_tokens(pieces[:3])
    return tokenizer


def t5_folder(
    folder: Path, architecture: str, pad: Any = "<pad>", seed: int = 0, factor: float = 1.0
) -> Path:
    """A random-weight T5 (encoder-decoder): a SentencePiece-style tokenizer.json with no
    padding settings, its pad token named only in tokenizer_config.json (``pad``: a string or
    transformers' serialised AddedToken). ``factor``: T5's ``initializer_factor`` (at 1 the
    tiny model answers every prompt with pads; at 5 the prompts make a difference)."""
    import torch
    import transformers

    torch.manual_seed(seed)
    pieces = ["<pad>", "</s>", "<unk>", *(f"▁{w}" for w in T5_WORDS), *"abcdefghijklmnopqrstuvwxyz"]
    config = transformers.T5Config(  # type: ignore[call-arg]
        vocab_size=len(pieces),
        d_model=16,
        d_kv=8,
        d_ff=32,
        num_layers=1,
        num_heads=2,
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
        initializer_factor=factor,
    )
    getattr(transformers, architecture)(config).eval().save_pretrained(folder)
    unigram_tokenizer(pieces, "</s>").save(str(folder / "tokenizer.json"))
    tokenizer_config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "pad_token": pad,
        "eos_token": "</s>",
        "unk_token": "<unk>",
        "model_input_names": ["input_ids", "attention_mask"],
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(tokenizer_config))
    return folder
