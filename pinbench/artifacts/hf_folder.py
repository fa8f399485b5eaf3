"""A Hugging Face model folder, read as data: what ``format: hf-folder`` means.

A model as the field publishes it: ``config.json`` (its ``architectures``: the transformers
class the weights load into), weights as ``*.safetensors`` (one file, or shards named by
``model.safetensors.index.json``), the tokenizer's ``tokenizer.json`` /
``tokenizer_config.json``, maybe ``generation_config.json`` and ``preprocessor_config.json``.
The same reading serves ``pinbench manifest model DIR``, publish and the transformers
predictor before it loads, and it refuses what would run a publisher's code:

- ``auto_map`` in ``config.json`` or ``tokenizer_config.json``, or any ``.py`` file: custom
  code, which transformers runs only with ``trust_remote_code`` (pinbench never sets it);
- pickled weights (``*.bin``, ``*.pt``, ``*.pth``, ``*.ckpt``, ``*.pkl``) beside safetensors
  (ambiguous: which loads?) and, alone, unless the manifest says ``trusted: true`` (and the run
  allows pickles: ``pinbench.evaluator.policy``).

It refuses a ``config.json`` whose numbers are past their bounds or do not describe the
weights beside it (layer counts, widths, vocabulary, context: ``artifacts.hf_shapes``, from the
safetensors headers), since transformers builds what the config says before loading anything.

Of an encoder-decoder (``config.json`` says ``is_encoder_decoder: true``, as transformers
writes it for T5, BART, Marian, Whisper...) it reads the architectures pinbench runs: a
sequence classifier (``*ForSequenceClassification``, which builds its decoder's inputs from
``input_ids``), the encoder alone (``*EncoderModel``), and a generating head
(``*ForConditionalGeneration``, ``*MTModel``: decision 245), whose decoder starts from the
``decoder_start_token_id`` that ``generation_config.json`` (else ``config.json``) names, as
transformers' ``generate`` reads it; a generating head without one is refused. Whisper's
encoder reads log-mel features: its ``preprocessor_config.json`` is checked as data
(``artifacts.hf_speech``, decision 246); other speech encoders are refused. The bare models
(``T5Model``) are refused: their decoder needs inputs pinbench does not give (decision 162).

Only JSON is parsed here (bounded: ``artifacts.jsonsafe``); nothing is imported or executed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pinbench.artifacts.hf_shapes import ShapeMismatch, Weights, check_config
from pinbench.artifacts.safetensors import NotSafetensors, read_header
from pinbench.errors import UserError

CONFIG = "config.json"
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")
SAFETENSORS = ".safetensors"
MAX_CONFIG_BYTES = 4 * 1024 * 1024
MAX_TENSORS = 2**20
"""Tensors all of a folder's safetensors files name together (the largest mixtures of experts
name under 200,000); with each name at most 1 KiB (``artifacts.safetensors``), what the shape
rules read is bounded however many shards a folder has."""
ARCHITECTURE = re.compile(r"^[A-Z][A-Za-z0-9]{0,99}$")
"""A transformers class name: letters and digits, nothing that could name a module path."""


class HfFolderRefused(UserError):
    """A Hugging Face folder pinbench will not load: which file, and why."""

    def __init__(self, *, path: str, reason: str) -> None:
        super().__init__(f"Hugging Face folder, {path}: {reason}")
        self.path = path
        self.reason = reason


@dataclass(frozen=True, slots=True)
class HfFolder:
    """What a folder's files say, read without loading anything."""

    root: str
    """The folder's path inside the artifact (``""``: the artifact's root)."""
    architecture: str
    """``config.json``'s one ``architectures`` entry (``GPT2LMHeadModel``)."""
    model_type: str
    weights: tuple[str, ...]
    """The weight files (artifact paths): safetensors, or pickles when there are none."""
    pickled: bool
    """The weights are pickles (``trusted`` required)."""
    tokenizer: str | None
    """``tokenizer.json``'s artifact path, if the folder has one."""
    context: int | None
    """The longest sequence the model takes (``n_positions`` / ``max_position_embeddings``)."""
    input_names: tuple[str, ...]
    """What the tokenizer gives the model (``tokenizer_config.json``'s ``model_input_names``,
    else ``input_ids`` and ``attention_mask``)."""
    chat_template: bool
    config: dict[str, Any]
    processor: str | None = None
    """``preprocessor_config.json``'s artifact path, if the folder has one (an image model's
    processor: what its inputs' steps are written from)."""
    decoder_start: int | None = None
    """An encoder-decoder that generates (``*ForConditionalGeneration``): the id its decoder
    starts from (None: not one)."""
    speech: bool = False
    """Its encoder reads log-mel features of audio (Whisper's), computed as ``processor``'s
    ``WhisperFeatureExtractor`` computes them."""

    def path(self, name: str) -> str:
        return f"{self.root}/{name}" if self.root else name


def read_json(path: Path, label: str) -> Any:
    from pinbench.artifacts.jsonsafe import JsonRefused, load_json

    try:
        size = path.stat().st_size
        if size > MAX_CONFIG_BYTES:
            raise HfFolderRefused(
                path=label, reason=f"{size} bytes: at most {MAX_CONFIG_BYTES} for a JSON file"
            )
        return load_json(path.read_bytes())
    except JsonRefused as exc:
        raise HfFolderRefused(path=label, reason=str(exc)) from None
    except OSError as exc:
        raise HfFolderRefused(path=label, reason=f"cannot read: {exc.strerror}") from None


def describe(files: Mapping[str, Path]) -> HfFolder:
    """Read the folder whose files (artifact path -> bytes on disk) are ``files``."""
    configs = sorted(p for p in files if p == CONFIG or p.endswith("/" + CONFIG))
    if len(configs) != 1:
        raise HfFolderRefused(
            path=", ".join(configs) or CONFIG,
            reason=f"a Hugging Face folder has exactly one {CONFIG}; found {len(configs)}",
        )
    root = configs[0][: -len(CONFIG)].rstrip("/")
    inside = {
        p[len(root) + 1 :] if root else p: p for p in files if not root or p.startswith(root + "/")
    }
    code = sorted(p for p in files if p.endswith(".py"))
    if code:
        raise HfFolderRefused(
            path=code[0],
            reason="Python code in a model folder is custom code (trust_remote_code), which "
            "pinbench never runs; publish a model whose architecture transformers ships",
        )
    config = read_json(files[configs[0]], configs[0])
    if not isinstance(config, dict):
        raise HfFolderRefused(path=configs[0], reason="not a JSON object")
    _no_remote_code(config, configs[0])
    architecture = _architecture(config, configs[0])
    _runnable(config, architecture, configs[0])
    model_type = config.get("model_type")
    if not isinstance(model_type, str) or not model_type:
        raise HfFolderRefused(path=configs[0], reason="no `model_type` string")
    tok_config: dict[str, Any] = {}
    if "tokenizer_config.json" in inside:
        loaded = read_json(files[inside["tokenizer_config.json"]], inside["tokenizer_config.json"])
        if not isinstance(loaded, dict):
            raise HfFolderRefused(path=inside["tokenizer_config.json"], reason="not a JSON object")
        _no_remote_code(loaded, inside["tokenizer_config.json"])
        tok_config = loaded
    weights, pickled = _weights(inside)
    _sized(
        config,
        configs[0],
        None if pickled else _read(files, weights),
        text="tokenizer.json" in inside,
    )
    decoder_start, speech = None, False
    if generates_from_encoder(config, architecture):
        speech = _speech_encoder(config, architecture, configs[0], files, inside)
        decoder_start = _decoder_start(config, files, inside, configs[0])
    names = tok_config.get("model_input_names", ["input_ids", "attention_mask"])
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise HfFolderRefused(
            path=inside.get("tokenizer_config.json", "tokenizer_config.json"),
            reason="`model_input_names` must be a list of names",
        )
    context = next(
        (
            v
            for k in ("n_positions", "max_position_embeddings", "n_ctx")
            if isinstance(v := config.get(k), int) and not isinstance(v, bool) and v > 0
        ),
        None,
    )
    template = tok_config.get("chat_template")
    return HfFolder(
        root=root,
        architecture=architecture,
        model_type=model_type,
        weights=weights,
        pickled=pickled,
        tokenizer=inside.get("tokenizer.json"),
        context=context,
        input_names=tuple(names),
        chat_template=isinstance(template, (str, list)) and bool(template),
        config=config,
        processor=inside.get("preprocessor_config.json"),
        decoder_start=decoder_start,
        speech=speech,
    )


def _read(files: Mapping[str, Path], names: tuple[str, ...]) -> Weights:
    """The tensors the safetensors files ``names`` hold, from their headers alone."""
    shapes: dict[str, tuple[int, ...]] = {}
    for name in names:
        try:
            header = read_header(files[name])
        except NotSafetensors as exc:
            raise HfFolderRefused(path=name, reason=str(exc)) from None
        except OSError as exc:
            raise HfFolderRefused(path=name, reason=f"cannot read: {exc.strerror}") from None
        shapes.update({tensor: shape for tensor, (_, shape) in header.tensors.items()})
        if len(shapes) > MAX_TENSORS:
            raise HfFolderRefused(
                path=name,
                reason=f"the weights' headers name more than {MAX_TENSORS} tensors in all "
                "(up to this file)",
            )
    return Weights.of(shapes)


def _sized(config: dict[str, Any], label: str, weights: Weights | None, *, text: bool) -> None:
    """The numbers that size the model bounded, and matched with the weights where their
    headers were read (``artifacts.hf_shapes``)."""
    try:
        check_config(config, weights, text=text)
    except ShapeMismatch as exc:
        raise HfFolderRefused(
            path=label,
            reason=f"{exc.reason}: a config must describe the weights beside it (transformers "
            "builds what it says before it loads them)",
        ) from None


def _no_remote_code(data: dict[str, Any], label: str) -> None:
    if "auto_map" in data:
        raise HfFolderRefused(
            path=label,
            reason="`auto_map` names custom code (trust_remote_code), which pinbench never "
            "runs; publish a model whose architecture transformers ships",
        )


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


def _runnable(config: dict[str, Any], architecture: str, label: str) -> None:
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


def _speech_encoder(
    config: dict[str, Any],
    architecture: str,
    label: str,
    files: Mapping[str, Path],
    inside: dict[str, str],
) -> bool:
    """Whether the encoder reads audio (Whisper's log-mel features, from the folder's
    ``WhisperFeatureExtractor`` settings, checked by ``hf_speech``); another encoder of audio
    features (Speech2Text's) is refused naming why, not run into a traceback."""
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
    if PROCESSOR not in inside:
        raise HfFolderRefused(
            path=label,
            reason=f"{architecture} reads log-mel features: the folder needs its {PROCESSOR} "
            "(the WhisperFeatureExtractor's settings) to compute them from audio",
        )
    pre = read_json(files[inside[PROCESSOR]], inside[PROCESSOR])
    if not isinstance(pre, dict):
        raise HfFolderRefused(path=inside[PROCESSOR], reason="not a JSON object")
    try:
        check_features(pre, config)
    except FeaturesRefused as exc:
        raise HfFolderRefused(path=inside[PROCESSOR], reason=exc.reason) from None
    return True


def _decoder_start(
    config: dict[str, Any], files: Mapping[str, Path], inside: dict[str, str], label: str
) -> int:
    """The decoder's first id: ``generation_config.json``'s ``decoder_start_token_id`` if it
    names one, else ``config.json``'s (transformers' ``generate`` reads them in that order),
    within the vocabulary."""
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
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise HfFolderRefused(path=where, reason=f"`{START_KEY}: {value!r:.40}` is not a token id")
    if isinstance(vocab, int) and not isinstance(vocab, bool) and value >= vocab:
        raise HfFolderRefused(
            path=where,
            reason=f"`{START_KEY}: {value}` is past the vocabulary (`vocab_size: {vocab}`)",
        )
    return value


def _architecture(config: dict[str, Any], label: str) -> str:
    arch = config.get("architectures")
    if not isinstance(arch, list) or len(arch) != 1 or not isinstance(arch[0], str):
        raise HfFolderRefused(
            path=label,
            reason=f"`architectures` must name exactly one transformers class (got {arch!r:.80})",
        )
    if not ARCHITECTURE.match(arch[0]):
        raise HfFolderRefused(path=label, reason=f"{arch[0]!r:.80} is not a class name")
    return arch[0]


def _weights(inside: dict[str, str]) -> tuple[tuple[str, ...], bool]:
    safe = sorted(p for name, p in inside.items() if name.endswith(SAFETENSORS))
    pickles = sorted(p for name, p in inside.items() if name.endswith(PICKLE_SUFFIXES))
    if safe and pickles:
        raise HfFolderRefused(
            path=pickles[0],
            reason="pickled weights beside safetensors: which would load is ambiguous; "
            "leave the pickles out",
        )
    if not safe and not pickles:
        other = sorted(p for name, p in inside.items() if name.endswith((".h5", ".msgpack")))
        if other:
            raise HfFolderRefused(
                path=other[0],
                reason="TensorFlow or Flax weights: transformers 5 (pinbench's transformers "
                "framework) loads PyTorch weights only; convert them to safetensors",
            )
        raise HfFolderRefused(path="(weights)", reason=f"no weights: expected *{SAFETENSORS} files")
    return (tuple(safe), False) if safe else (tuple(pickles), True)
