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

from pinbench.artifacts.hf_encdec import decoder_start as decoder_start_of
from pinbench.artifacts.hf_encdec import generates_from_encoder, runnable, speech_encoder
from pinbench.artifacts.hf_json import HfFolderRefused as HfFolderRefused  # re-exported
from pinbench.artifacts.hf_json import read_json as read_json
from pinbench.artifacts.hf_processor_file import processor_file
from pinbench.artifacts.hf_shapes import ShapeMismatch, Weights, check_config
from pinbench.artifacts.safetensors import NotSafetensors, read_header

CONFIG = "config.json"
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")
SAFETENSORS = ".safetensors"
MAX_TENSORS = 2**20
"""Tensors all of a folder's safetensors files name together (the largest mixtures of experts
name under 200,000); with each name at most 1 KiB (``artifacts.safetensors``), what the shape
rules read is bounded however many shards a folder has."""
ARCHITECTURE = re.compile(r"^[A-Z][A-Za-z0-9]{0,99}\Z")
"""A transformers class name: letters and digits, nothing that could name a module path."""


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
    """The artifact path of the file holding the processor's settings, if the folder has one
    (``preprocessor_config.json``, or transformers 5's ``processor_config.json``:
    ``hf_processor_file``): what an image or audio model's input steps are written from."""
    decoder_start: int | None = None
    """An encoder-decoder that generates (``*ForConditionalGeneration``): the id its decoder
    starts from (None: not one)."""
    speech: bool = False
    """Its encoder reads log-mel features of audio (Whisper's), computed as ``processor``'s
    ``WhisperFeatureExtractor`` computes them."""

    def path(self, name: str) -> str:
        return f"{self.root}/{name}" if self.root else name


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
    runnable(config, architecture, configs[0])
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
        speech = speech_encoder(config, architecture, configs[0], files, inside)
        decoder_start = decoder_start_of(config, files, inside, configs[0])
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
        processor=processor_file(files, inside),
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
