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


WHISPER_WORDS = [f"w{i}" for i in range(50)]
"""The tiny Whisper's vocabulary: ids 0-49 are words, 50 starts a transcript, 51 ends it."""
RATE = 16_000


WHISPER_SPECIALS = [
    *("<|en|>", "<|de|>", "<|fr|>", "<|translate|>", "<|transcribe|>", "<|startoflm|>"),
    *("<|startofprev|>", "<|nospeech|>", "<|notimestamps|>"),
]
"""A multilingual tiny Whisper's tokens after its 52 (ids 52-60), in openai/whisper-*'s order:
languages, tasks, then the rest up to ``<|notimestamps|>``."""
SPECIAL = {t: 52 + i for i, t in enumerate(WHISPER_SPECIALS)}


def whisper_generation_config() -> dict[str, Any]:
    """A generation_config.json shaped like openai/whisper-tiny's (its keys, its prompt: the
    language left to detection, then transcribe), with the tiny vocabulary's ids."""
    return {
        "alignment_heads": [[0, 0], [0, 1]],
        "begin_suppress_tokens": [0, 51],  # openai's: [220 (a space), 50257 (end of text)]
        "bos_token_id": 51,
        "decoder_start_token_id": 50,
        "eos_token_id": 51,
        "forced_decoder_ids": [[1, None], [2, SPECIAL["<|transcribe|>"]]],
        "is_multilingual": True,
        "lang_to_id": {t: SPECIAL[t] for t in ("<|en|>", "<|de|>", "<|fr|>")},
        "max_initial_timestamp_index": 50,
        "max_length": 32,
        "no_timestamps_token_id": SPECIAL["<|notimestamps|>"],
        "pad_token_id": 51,
        "prev_sot_token_id": SPECIAL["<|startofprev|>"],
        "return_timestamps": False,
        "suppress_tokens": [1, 2, 50, *range(55, 60)],  # openai's end with sot, tasks..nospeech
        "task_to_id": {"transcribe": SPECIAL["<|transcribe|>"], "translate": 55},
        "transformers_version": "4.31.0.dev0",
    }


def whisper_folder(folder: Path, seed: int = 0, multilingual: bool = False) -> Path:
    """A random-weight Whisper (speech encoder-decoder) with its WhisperFeatureExtractor's
    settings: 16 mel channels over one-second windows (100 frames: 2 x 50 source positions),
    a word-level tokenizer whose special tokens decoding skips. Its matrices are drawn with
    three times the usual spread: at transformers' own initialisation every sound gets the
    same answer. ``multilingual``: language, task and timestamp tokens too, and
    ``whisper_generation_config`` as its generation_config.json (openai/whisper-*'s shape)."""
    import torch
    import transformers
    from tokenizers import Tokenizer, models, pre_tokenizers

    torch.manual_seed(seed)
    config = transformers.WhisperConfig(
        vocab_size=52 + len(WHISPER_SPECIALS) * multilingual,
        num_mel_bins=16,
        d_model=16,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=32,
        decoder_ffn_dim=32,
        max_source_positions=50,
        max_target_positions=32,
        decoder_start_token_id=50,
        eos_token_id=51,
        pad_token_id=51,
        bos_token_id=51,
        begin_suppress_tokens=None,
        suppress_tokens=None,
    )
    model = transformers.WhisperForConditionalGeneration(config).eval()  # type: ignore[no-untyped-call]
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.dim() > 1:
                parameter.normal_(0.0, 3.0 / parameter.shape[-1] ** 0.5)
    model.save_pretrained(folder)
    extractor = transformers.WhisperFeatureExtractor(  # type: ignore[no-untyped-call]
        feature_size=16, sampling_rate=RATE, hop_length=160, chunk_length=1, n_fft=400
    )
    extractor.save_pretrained(folder)
    vocab = {w: i for i, w in enumerate(WHISPER_WORDS)}
    vocab.update({"<|startoftranscript|>": 50, "<|endoftext|>": 51})
    specials = ["<|startoftranscript|>", "<|endoftext|>"]
    if multilingual:
        vocab.update(SPECIAL)
        specials += WHISPER_SPECIALS
        settings = folder / "generation_config.json"
        settings.write_text(json.dumps(whisper_generation_config(), indent=2))
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="<|endoftext|>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.add_special_tokens(specials)
    tokenizer.save(str(folder / "tokenizer.json"))
    return folder


def write_wav(path: Path, samples: Any) -> Path:
    """16-bit mono PCM at ``RATE``."""
    import wave

    import numpy as np

    pcm = (np.clip(samples, -1, 1) * 32767).astype("<i2")
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(RATE)
        out.writeframes(pcm.tobytes())
    return path
