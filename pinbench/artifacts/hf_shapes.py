"""A Hugging Face ``config.json`` checked against the weights beside it, from their headers.

transformers builds the model ``config.json`` describes and only then loads the weights into
it: a config that says ``n_layer: 1000000`` over two layers of weights builds a million layers
(minutes, gigabytes) before the load fails or, worse, fills the missing layers with random
numbers. So the numbers that size a model are bounded and compared with the tensors the
safetensors headers name (``artifacts.safetensors``: headers only, nothing loaded or run):

- **layer counts** (``num_hidden_layers``, ``n_layer``, ``num_layers``, ``n_layers``,
  ``encoder_layers``, ``decoder_layers``, ``num_decoder_layers``): the weights hold a numbered
  stack of exactly that many (``transformer.h.0`` .. ``transformer.h.N-1``). A model that
  shares or cycles its layers names the stacks instead (ALBERT's ``num_hidden_groups`` and
  ``inner_group_num``, HRM's ``num_layers_per_stack``): those are matched. A decoder's count is
  matched where the weights hold a decoder (an ``*EncoderModel`` holds none). EfficientNet's
  ``num_hidden_layers`` counts no blocks (it scales drop-connect): bounded only.
- **a vision model's stages** (``depths``): at most as many layers in all as the weights number
  (stages are laid out too differently across architectures to match one by one).
- **the model's width** (``hidden_size``, ``n_embd``, ``d_model``, ``dim``, ``embed_dim``,
  ``embedding_size``, each of ``hidden_sizes``) is a dimension of some tensor; a feed-forward
  width (``intermediate_size``, ``n_inner``, ``ffn_dim`` ...) is at most ``FFN_RATIO`` times the
  model's width (a mixture of experts may leave it unused, and some models derive the real one
  from it); a head count times ``head_dim`` at most the largest dimension; an expert count,
  where the weights hold experts, is a stack or a dimension (a router's).
- **a text model's vocabulary** (``vocab_size``, ``type_vocab_size``: a folder with a
  tokenizer) is at most the largest dimension; a context (``n_positions``,
  ``max_position_embeddings``) at most the rows of a learned position table where there is one,
  and an image's patches (``image_size`` / ``patch_size``) at most a vision position table's.
- **an encoder-decoder's own numbers** (decision 245): T5's ``d_kv`` times its heads at most the
  largest dimension, its ``relative_attention_num_buckets`` the rows of every
  ``relative_attention_bias`` table; Whisper's ``num_mel_bins`` the input channels of its
  encoder's first convolution, ``max_source_positions`` and ``max_target_positions`` the rows of
  the encoder's and the decoder's position tables.
- **every integer** in the file is bounded (``MAX_INT``), and each of the numbers above by its
  own bound, whatever the weights (pickled weights, whose headers cannot be read without
  unpickling, get the bounds only).

A nested ``X_config`` (``text_config``, ``vision_config``) is matched the same way where the
weights hold its part (a tensor named ``X...``: ``text_model``, ``vision_tower``), and bounded
only where they do not (``CLIPForImageClassification`` keeps the vision tower alone). A config
that breaks a rule is refused naming the key, its value and what the weights hold (decision
201). The rules were run over the default configuration of every causal-LM,
sequence-classification and image-classification class transformers 5.23 ships (300-odd):
all pass but ``PerceiverForImageClassificationLearned``, whose ``d_model`` is no tensor's
width. ``tests/test_hf_shapes.py`` keeps a sample of models as ``save_pretrained`` writes them.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pinbench.errors import Picklable

MAX_INT = 2**31 - 1
"""Any integer in ``config.json``."""
MAX_LAYERS = 1024
MAX_WIDTH = 2**18
MAX_VOCAB = 2**22
MAX_HEADS = 4096
MAX_EXPERTS = 2**16
MAX_CONTEXT = 2**20
"""The longest context a config may claim (tokens): a generation run's tokenizer sizes its
arrays by it."""
MAX_IMAGE = 2**14
MAX_MEL_BINS = 1024
"""A speech model's log-mel channels (Whisper: 80 or 128)."""
MAX_BUCKETS = 2**16
"""T5's relative-position buckets (32)."""
FFN_RATIO = 16
"""A feed-forward width is at most this many times the model's (GPT-2: 4, Gemma: 8)."""

LAYER_COUNTS = (
    "num_hidden_layers",
    "n_layer",
    "num_layers",
    "n_layers",
    "encoder_layers",
    "decoder_layers",
    "num_decoder_layers",
)
SHARED_LAYERS = ("num_hidden_groups", "inner_group_num", "num_layers_per_stack")
"""The stacks a model whose layers are shared or cycled draws its ``num_hidden_layers`` from
(ALBERT's groups, HRM's stacks): where one is given, it is matched instead."""
DECODER_COUNTS = ("decoder_layers", "num_decoder_layers")
NOT_A_STACK = {"efficientnet": "num_hidden_layers"}
"""``model_type``: a layer-count key that counts no stack of its weights."""
WIDTHS = ("hidden_size", "n_embd", "d_model", "dim", "embed_dim", "embedding_size")
FFN_WIDTHS = (
    "intermediate_size",
    "moe_intermediate_size",
    "n_inner",
    "ffn_dim",
    "encoder_ffn_dim",
    "decoder_ffn_dim",
    "d_ff",
    "hidden_dim",
    "word_embed_proj_dim",
)
EXPERTS = ("num_local_experts", "num_experts", "n_routed_experts")
HEADS = (
    "num_attention_heads",
    "num_key_value_heads",
    "n_head",
    "n_heads",
    "num_heads",
    "encoder_attention_heads",
    "decoder_attention_heads",
)
VOCABS = ("vocab_size", "type_vocab_size")
CONTEXTS = ("n_positions", "max_position_embeddings", "n_ctx")
POSITION_TABLES = ("wpe.weight", "position_embeddings.weight", "embed_positions.weight")
"""Learned position tables (rows: positions); ``*position_embeddings`` of three dimensions
is a vision model's ``(1, patches + extra tokens, width)``."""
_INDEX = re.compile(r"^\d{1,9}\Z")


class ShapeMismatch(Picklable, ValueError):
    """A number in ``config.json`` past its bound, or one that does not describe the weights
    beside it: ``reason`` says which and what the weights hold."""

    def __init__(self, *, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Weights:
    """What the headers say: every tensor's shape, and the numbered stacks their names make
    (``transformer.h`` -> ``{0, 1}`` for ``transformer.h.0.*`` and ``transformer.h.1.*``)."""

    shapes: dict[str, tuple[int, ...]]
    stacks: dict[str, frozenset[int]]
    dims: frozenset[int]

    @classmethod
    def of(cls, shapes: dict[str, tuple[int, ...]]) -> Weights:
        stacks: dict[str, set[int]] = defaultdict(set)
        for name in shapes:
            parts = name.split(".")
            end = len(parts[0])  # where the prefix before part i ends in ``name``
            for part in parts[1:-1]:
                if _INDEX.match(part):
                    stacks[name[:end]].add(int(part))
                end += 1 + len(part)
        dims = frozenset(d for shape in shapes.values() for d in shape)
        return cls(shapes, {k: frozenset(v) for k, v in stacks.items()}, dims)

    def has_stack(self, count: int) -> bool:
        """A stack of exactly ``count`` (numbered 0 .. count-1)."""
        want = frozenset(range(count))
        return any(v == want for v in self.stacks.values())

    def numbered(self) -> int:
        """How many numbered members all stacks hold."""
        return sum(len(v) for v in self.stacks.values())

    def holds(self, stem: str) -> bool:
        """A tensor named with a part that begins ``stem`` (``decoder``, ``text_model``)."""
        return any(p.startswith(stem) for name in self.shapes for p in name.split("."))

    def holds_word(self, word: str) -> bool:
        """A tensor whose name has ``word`` in it (``expert``: a mixture of experts)."""
        return any(word in name for name in self.shapes)

    def largest(self) -> int:
        return max(self.dims, default=0)

    def said(self) -> str:
        """The weights' stacks, for a message: the longest few, each with its count."""
        top = sorted(self.stacks.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:3]
        return ", ".join(f"{k} ({len(v)})" for k, v in top) or "none"


def check_config(config: dict[str, Any], weights: Weights | None, *, text: bool = False) -> None:
    """Refuse (``ShapeMismatch``) a config with a number past its bound or, given the
    ``weights`` (None: pickles, unread), one whose sizes are not the weights'. ``text``: the
    folder is a text model's (it has a tokenizer), whose vocabulary the weights embed."""
    for where, value in _integers(config, ""):
        if abs(value) > MAX_INT:
            raise ShapeMismatch(reason=f"`{where}: {value}` is past {MAX_INT}")
    _check_section(config, "", weights, top=True, text=text)
    for key, section in _sections(config):
        held = weights is not None and weights.holds(key.removesuffix("_config"))
        _check_section(section, f"{key}.", weights if held else None, top=False, text=held)


def _integers(value: Any, where: str) -> Iterator[tuple[str, int]]:
    if isinstance(value, bool):
        return
    if isinstance(value, int):
        yield where, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _integers(v, f"{where}.{k}" if where else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _integers(v, f"{where}[{i}]")


def _sections(config: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """The nested ``*_config`` objects (a multimodal model's parts), by dotted key."""
    for key, value in config.items():
        if key.endswith("_config") and isinstance(value, dict):
            yield f"{prefix}{key}", value
            yield from _sections(value, f"{prefix}{key}.")


def _count(section: dict[str, Any], key: str, prefix: str, bound: int, low: int = 0) -> int | None:
    """``section[key]`` as a bounded integer (None where absent or null)."""
    value = section.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= bound:
        raise ShapeMismatch(
            reason=f"`{prefix}{key}: {value!r:.40}` must be an integer from {low} to {bound}"
        )
    return value


def _counts(section: dict[str, Any], key: str, prefix: str, bound: int) -> list[int]:
    """``section[key]`` as bounded integers: one, or a list (``depths``, ``hidden_sizes``)."""
    value = section.get(key)
    if isinstance(value, list):
        if len(value) > MAX_LAYERS:
            raise ShapeMismatch(reason=f"`{prefix}{key}` lists more than {MAX_LAYERS} values")
        return [_count({key: v}, key, prefix, bound) or 0 for v in value]
    one = _count(section, key, prefix, bound)
    return [] if one is None else [one]


def _check_section(
    section: dict[str, Any], prefix: str, weights: Weights | None, *, top: bool, text: bool
) -> None:
    _check_layers(section, prefix, weights)
    widths = [
        (key, width)
        for key in (*WIDTHS, "hidden_sizes")
        for width in _counts(section, key, prefix, MAX_WIDTH)
    ]
    for key, width in widths:
        if weights is not None and width not in weights.dims:
            raise ShapeMismatch(
                reason=f"`{prefix}{key}: {width}`, but no tensor of the weights has a "
                f"dimension of {width}{_widths(weights)}"
            )
    widest = max((w for _, w in widths), default=0) or (
        weights.largest() if weights is not None else MAX_WIDTH
    )
    for key in FFN_WIDTHS:
        for width in _counts(section, key, prefix, MAX_WIDTH):
            if weights is not None and width > FFN_RATIO * widest:
                raise ShapeMismatch(
                    reason=f"`{prefix}{key}: {width}`, more than {FFN_RATIO} times the model's "
                    f"width ({widest})"
                )
    _check_heads(section, prefix, weights)
    experts = weights is not None and weights.holds_word("expert")
    for key in EXPERTS:
        n = _count(section, key, prefix, MAX_EXPERTS)
        if weights is None or not n or not experts or weights.has_stack(n) or n in weights.dims:
            continue
        raise ShapeMismatch(
            reason=f"`{prefix}{key}: {n}`, but the weights hold no {n} experts (no stack and "
            "no router of that many)"
        )
    for key in VOCABS:
        n = _count(section, key, prefix, MAX_VOCAB)
        if text and weights is not None and n is not None and n > weights.largest():
            raise ShapeMismatch(
                reason=f"`{prefix}{key}: {n}`, more than any tensor of the weights holds "
                f"(their largest dimension: {weights.largest()})"
            )
    _check_positions(section, prefix, weights if top else None)
    _check_encoder_decoder(section, prefix, weights if top else None)


def _check_layers(section: dict[str, Any], prefix: str, weights: Weights | None) -> None:
    shared = any(key in section for key in SHARED_LAYERS)
    decoder = weights is not None and weights.holds("decoder")
    loose = NOT_A_STACK.get(str(section.get("model_type")))
    for key in LAYER_COUNTS + SHARED_LAYERS:
        n = _count(section, key, prefix, MAX_LAYERS)
        skip = (
            (key in DECODER_COUNTS and not decoder)
            or (shared and key == "num_hidden_layers")
            or key == loose
        )
        if weights is None or not n or skip or weights.has_stack(n):
            continue
        raise ShapeMismatch(
            reason=f"`{prefix}{key}: {n}`, but no numbered stack of the weights holds {n} "
            f"layers (theirs: {weights.said()})"
        )
    depths = _counts(section, "depths", prefix, MAX_LAYERS)
    if sum(depths) > MAX_LAYERS:
        raise ShapeMismatch(reason=f"`{prefix}depths` add up to more than {MAX_LAYERS} layers")
    if weights is not None and sum(depths) > weights.numbered():
        raise ShapeMismatch(
            reason=f"`{prefix}depths: {depths}` make {sum(depths)} layers, more than the "
            f"weights number ({weights.numbered()})"
        )


def _widths(weights: Weights) -> str:
    common = sorted(weights.dims, reverse=True)[:6]
    return f" (the largest: {', '.join(map(str, common))})" if common else ""


def _check_heads(section: dict[str, Any], prefix: str, weights: Weights | None) -> None:
    head_dim = _count(section, "head_dim", prefix, MAX_WIDTH)
    for key in HEADS:
        for heads in _counts(section, key, prefix, MAX_HEADS):
            if weights is None or head_dim is None or heads * head_dim <= weights.largest():
                continue
            raise ShapeMismatch(
                reason=f"`{prefix}{key}: {heads}` heads of `head_dim: {head_dim}` make "
                f"{heads * head_dim}, more than any tensor of the weights holds (their largest "
                f"dimension: {weights.largest()})"
            )


def _check_encoder_decoder(section: dict[str, Any], prefix: str, weights: Weights | None) -> None:
    """T5's head width and relative-position buckets; Whisper's mel channels and its encoder's
    and decoder's positions (each bounded; matched where the weights hold the tensor)."""
    shapes = weights.shapes if weights is not None else {}
    d_kv = _count(section, "d_kv", prefix, MAX_WIDTH)
    for key in HEADS:
        for heads in _counts(section, key, prefix, MAX_HEADS):
            if weights is not None and d_kv is not None and heads * d_kv > weights.largest():
                raise ShapeMismatch(
                    reason=f"`{prefix}{key}: {heads}` heads of `d_kv: {d_kv}` make "
                    f"{heads * d_kv}, more than any tensor of the weights holds (their largest "
                    f"dimension: {weights.largest()})"
                )
    _count(section, "relative_attention_max_distance", prefix, MAX_CONTEXT)
    rules = (
        ("relative_attention_num_buckets", MAX_BUCKETS, "relative_attention_bias.weight", 2, 0),
        ("num_mel_bins", MAX_MEL_BINS, "encoder.conv1.weight", 3, 1),
        ("max_source_positions", MAX_CONTEXT, "encoder.embed_positions.weight", 2, 0),
        ("max_target_positions", MAX_CONTEXT, "decoder.embed_positions.weight", 2, 0),
    )
    for key, bound, tensor, rank, axis in rules:
        n = _count(section, key, prefix, bound)
        held = {s[axis] for name, s in shapes.items() if name.endswith(tensor) and len(s) == rank}
        if n is not None and held and held != {n}:
            raise ShapeMismatch(
                reason=f"`{prefix}{key}: {n}`, but the weights' {tensor} "
                f"{'has' if len(held) == 1 else 'have'} {' and '.join(map(str, sorted(held)))} "
                f"({'rows' if axis == 0 else 'input channels'})"
            )


def _check_positions(section: dict[str, Any], prefix: str, weights: Weights | None) -> None:
    """A context at most a learned position table's rows; an image's patches at most a vision
    position table's (``weights``: the top level's only, where the tables are its own)."""
    shapes = weights.shapes.items() if weights is not None else ()
    rows = [s[0] for name, s in shapes if name.endswith(POSITION_TABLES) and len(s) == 2]
    for key in CONTEXTS:
        n = _count(section, key, prefix, MAX_CONTEXT)
        if n is not None and rows and n > max(rows):
            raise ShapeMismatch(
                reason=f"`{prefix}{key}: {n}`, more positions than the weights' position "
                f"table holds ({max(rows)})"
            )
    image = _counts(section, "image_size", prefix, MAX_IMAGE)
    patch = _counts(section, "patch_size", prefix, MAX_IMAGE)
    vision = [s[1] for name, s in shapes if name.endswith("position_embeddings") and len(s) == 3]
    if image and patch and patch[0] and vision:
        sides = image if len(image) == 2 else image[:1] * 2
        patches = math.prod(side // patch[0] for side in sides)
        if patches > max(vision):
            raise ShapeMismatch(
                reason=f"`{prefix}image_size: {section.get('image_size')}` in patches of "
                f"{patch[0]} makes {patches} positions, more than the weights' position "
                f"table holds ({max(vision)})"
            )
