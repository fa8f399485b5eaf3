"""Which encoder-decoders a Hugging Face folder may hold, read as data: the heads pinbench runs,
the decoder's start token a generating head needs (decision 245), and a speech encoder's
feature-extractor settings (decision 246). Whisper's generation settings are read where the
model opens (``worker.generation.whisper_prompt``, decision 260)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pinbench.artifacts.hf_json import HfFolderRefused, read_json
from pinbench.bounds import MAX_JSON_INT

ENCODER_DECODER_RUNS = ("ForSequenceClassification", "EncoderModel")
"""The architectures of an encoder-decoder that run from the tokenizer's inputs alone."""
ENCODER_DECODER_GENERATES = ("ForConditionalGeneration", "MTModel")
"""The architectures of an encoder-decoder that generate (T5's, BART's, Whisper's, Marian's):
the encoder reads the sample once, the decoder generates from its start token (decision 245)."""
START_KEY = "decoder_start_token_id"


def generates_from_encoder(config: dict[str, Any], architecture: str) -> bool:
    """An encoder-decoder whose head generates (``T5ForConditionalGeneration``)."""
    return config.get("is_encoder_decoder") is True and architecture.endswith(
        ENCODER_DECODER_GENERATES
    )


def runnable(config: dict[str, Any], architecture: str, label: str) -> None:
    if config.get("is_encoder_decoder") is True and not architecture.endswith(
        ENCODER_DECODER_RUNS + ENCODER_DECODER_GENERATES
    ):
        raise HfFolderRefused(
            path=label,
            reason=f"{architecture} is an encoder-decoder (`is_encoder_decoder: true`) without "
            "a head pinbench runs: its decoder needs inputs of its own. Of an encoder-decoder, "
            "pinbench generates with a *ForConditionalGeneration or *MTModel head, and runs a "
            "sequence classifier (*ForSequenceClassification) or the encoder alone "
            "(*EncoderModel)",
        )


SPEECH_KEYS = ("num_mel_bins", "input_feat_per_channel", "num_conv_layers")
"""config.json keys of an encoder that reads audio features (Whisper's, Speech2Text's)."""
PROCESSOR = "preprocessor_config.json"


def speech_encoder(
    config: dict[str, Any],
    architecture: str,
    label: str,
    files: Mapping[str, Path],
    inside: dict[str, str],
) -> bool:
    """Whether the encoder reads audio (Whisper's log-mel features, from the folder's
    ``WhisperFeatureExtractor`` settings, checked by ``hf_speech``); another encoder of audio
    features (Speech2Text's) is refused naming why, not run into a traceback."""
    from pinbench.artifacts.hf_processor_file import processor_file, settings
    from pinbench.artifacts.hf_speech import FeaturesRefused, check_features

    speech = next((k for k in SPEECH_KEYS if k in config), None)
    if speech is None:
        return False
    if config.get("model_type") != "whisper":
        raise HfFolderRefused(
            path=label,
            reason=f"{architecture}'s encoder reads audio features (`{speech}`): of speech "
            "encoder-decoders pinbench runs Whisper's (model_type whisper) alone",
        )
    where = processor_file(files, inside)
    if where is None:
        raise HfFolderRefused(
            path=label,
            reason=f"{architecture} reads log-mel features: the folder needs its {PROCESSOR} "
            "(the WhisperFeatureExtractor's settings) to compute them from audio",
        )
    try:
        check_features(settings(files[where], where), config)
    except FeaturesRefused as exc:
        raise HfFolderRefused(path=where, reason=exc.reason) from None
    return True


def decoder_start(
    config: dict[str, Any], files: Mapping[str, Path], inside: dict[str, str], label: str
) -> int:
    """The decoder's first id: ``generation_config.json``'s ``decoder_start_token_id`` if it
    names one, else ``config.json``'s (transformers' ``generate`` reads them in that order),
    within the vocabulary where ``vocab_size`` is named (the output embedding's rows are
    checked where the model opens, ``TorchGenerator``)."""
    where, value = label, config.get(START_KEY)
    if "generation_config.json" in inside:
        name = inside["generation_config.json"]
        generation = read_json(files[name], name)
        if not isinstance(generation, dict):
            raise HfFolderRefused(path=name, reason="not a JSON object")
        if generation.get(START_KEY) is not None:
            where, value = name, generation[START_KEY]
    vocab = config.get("vocab_size")
    if value is None:
        raise HfFolderRefused(
            path=label,
            reason=f"an encoder-decoder's decoder starts from `{START_KEY}`, which neither "
            "config.json nor generation_config.json names: add the id its decoder was trained "
            "to start from",
        )
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_JSON_INT:
        raise HfFolderRefused(
            path=where,
            reason=f"`{START_KEY}: {value!r:.40}` is not a token id (an integer from 0 to "
            f"{MAX_JSON_INT})",
        )
    if isinstance(vocab, int) and not isinstance(vocab, bool) and value >= vocab:
        raise HfFolderRefused(
            path=where,
            reason=f"`{START_KEY}: {value}` is past the vocabulary (`vocab_size: {vocab}`)",
        )
    return value
