"""An LLM engine's model artifact checked at publish, as data (issue 87, decision 318):
``ort-genai`` (ONNX Runtime GenAI's folder), ``ctranslate2`` (CTranslate2's), ``openvino``
(optimum-intel's OpenVINO IR) and ``gguf`` (llama.cpp's one file: ``gguf_header``), each
beside the Hugging Face folder's ``config.json`` and ``tokenizer.json`` at the artifact's root,
which pinbench's generator reads (``worker.generation.engine_folder``).

``genai_config.json`` is the engine's instructions for loading its model: it can name a
library of custom operators to load (``custom_ops_library``: native code), execution providers
and their options, and other model files by any path. Only what the CPU engine needs to load
one decoder is accepted, key by key (``GENAI_KEYS``); its decoder's file must be an ONNX model
of the artifact beside it, with its external data inside the artifact (``onnx_files``). A
refusal names the key and the file. An OpenVINO IR's ``rt_info`` runtime options are held to
those pinbench overrides or float32 does not use (``check_openvino_ir``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from pinbench.registry.manifest import ModelManifest
from pinbench.registry.manifest_parts import FileEntry
from pinbench.registry.sourcing import FileProblem

GENAI = "genai_config.json"
MAX_CONFIG_BYTES = 1 << 20
ROOT_FILES = ("config.json", "tokenizer.json")
NAME = re.compile(r"[A-Za-z0-9_.:/-]{1,128}\Z")
TEMPLATE = re.compile(r"[A-Za-z0-9_.:/-]{0,120}%d[A-Za-z0-9_.:/-]{0,120}\Z")
MOST = 2**31 - 1
GENAI_KEYS: Mapping[str, Any] = {
    "model": {
        "bos_token_id": "ids",
        "context_length": "count",
        "eos_token_id": "ids",
        "pad_token_id": "ids",
        "sep_token_id": "ids",
        "decoder_start_token_id": "ids",
        "type": "name",
        "vocab_size": "count",
        "decoder": {
            "session_options": {"log_id": "name", "provider_options": "empty"},
            "filename": "name",
            "head_size": "count",
            "hidden_size": "count",
            "inputs": "names",
            "outputs": "names",
            "num_attention_heads": "count",
            "num_hidden_layers": "count",
            "num_key_value_heads": "count",
        },
    },
    "search": {
        **dict.fromkeys(("do_sample", "early_stopping", "past_present_share_buffer"), "bool"),
        **dict.fromkeys(("num_beams", "num_return_sequences"), "one"),
        **dict.fromkeys(("max_length", "min_length", "no_repeat_ngram_size", "top_k"), "whole"),
        **dict.fromkeys(
            ("diversity_penalty", "length_penalty", "repetition_penalty", "temperature", "top_p"),
            "number",
        ),
    },
}
"""The keys a ``genai_config.json`` may hold, nested, each leaf with its rule (``_leaf``).
Its ``search`` section is the engine's own search's defaults, which pinbench's loop does not
use (``worker.generation.ort_genai_generator``), bounded all the same. The decoder's input and
output names are templates the engine formats (``past_key_values.%d.key``): one ``%d`` and
name characters only, so no other conversion reaches its formatting."""
ENGINE_FOLDER = {
    "ort-genai": (GENAI,),
    "ctranslate2": ("model.bin", "config.json", "vocabulary.json"),
    "openvino": ("openvino_model.xml", "openvino_model.bin"),
    "gguf": ("*.gguf",),
}
"""Per format: the file that marks the engine's folder (a name, or a pattern of one), then the
others it must hold."""


class EngineFolderRefused(FileProblem):
    """An engine's model folder pinbench does not load."""


def check_engine_folder(manifest: ModelManifest, where: Callable[[FileEntry], Path]) -> None:
    """Refuse ``manifest`` (an engine's format: ``ENGINE_FOLDER``) unless its files are one
    engine folder and the root files pinbench's generator reads."""
    need = ENGINE_FOLDER.get(manifest.format)
    if need is None:
        return
    paths = {f.path: f for f in manifest.files}
    marker, *beside = need
    found = [p for p in paths if PurePosixPath(PurePosixPath(p).name).match(marker)]
    if len(found) != 1:
        raise EngineFolderRefused(
            path=found[1] if found else marker,
            reason=f"a {manifest.format} model has one {marker}; this one has {len(found)}",
        )
    folder = PurePosixPath(found[0]).parent
    for name in [*(str(folder / b) for b in beside), *ROOT_FILES]:
        if name not in paths:
            raise EngineFolderRefused(
                path=name,
                reason=f"a {manifest.format} model needs it (the engine's folder is "
                f"{folder.as_posix()}; the Hugging Face folder's config.json and tokenizer.json "
                "sit at the artifact's root)",
            )
    if manifest.format == "ort-genai":
        check_genai(found[0], lambda p: where(paths[p]), list(paths))
    if manifest.format == "openvino":
        check_openvino_ir(found[0], where(paths[found[0]]))
    if manifest.format in ("gguf", "ctranslate2"):
        _check_vocabulary(manifest.format, found[0], lambda p: where(paths[p]))


def _check_vocabulary(kind: str, marker: str, locate: Callable[[str], Path]) -> None:
    """The engine's own vocabulary (llama.cpp's in its GGUF header, CTranslate2's
    ``vocabulary.json``) against the artifact's ``tokenizer.json``, id for id."""
    from pinbench.registry import engine_vocabulary as vocabulary

    tokenizer = vocabulary.tokenizer_tokens("tokenizer.json", locate("tokenizer.json"))
    if kind == "gguf":
        from pinbench.registry.gguf_header import check_gguf

        words = check_gguf(marker, locate(marker))["tokenizer.ggml.tokens"]
        vocabulary.check_words(marker, words, tokenizer)
    else:
        name = str(PurePosixPath(marker).parent / "vocabulary.json")
        vocabulary.check_vocabulary_file(name, locate(name), tokenizer)


def check_genai(name: str, locate: Callable[[str], Path], paths: Collection[str]) -> Genai:
    """The ``genai_config.json`` at artifact path ``name`` (its bytes at ``locate(name)``)
    as checked data, with its decoder and the files that hold the decoder's external data;
    refused unless it holds ``GENAI_KEYS`` alone, each key once, each value by its rule, no
    provider, and a decoder that is an ONNX model of the artifact's ``paths`` beside it.
    Publishing checks it, and the generator again, then gives the engine this data written
    anew, never the file (``ort_genai_generator``)."""
    from pinbench.registry.onnx_files import OnnxRefused, check_onnx

    path = locate(name)
    if path.stat().st_size > MAX_CONFIG_BYTES:
        raise EngineFolderRefused(path=name, reason=f"larger than {MAX_CONFIG_BYTES} bytes")
    from pinbench.artifacts.jsonsafe import JsonRefused, load_json

    try:  # each key once: the engine applies every occurrence, a JSON reader keeps the last
        config = load_json(path.read_bytes())
    except JsonRefused as exc:
        raise EngineFolderRefused(path=name, reason=str(exc)) from None
    _check_keys(name, config, GENAI_KEYS, "")
    decoder = config.get("model", {}).get("decoder", {})
    filename = decoder.get("filename")
    if (
        not isinstance(filename, str)
        or PurePosixPath(filename).name != filename
        or (filename in {".", ".."})
    ):
        raise EngineFolderRefused(
            path=name, reason="model.decoder.filename must name a file beside it, by its name"
        )
    model = (PurePosixPath(name).parent / filename).as_posix()
    if model not in paths:
        raise EngineFolderRefused(path=name, reason=f"its decoder {model} is not among the files")
    try:
        sidecars = check_onnx(model, locate(model), list(paths))
    except OnnxRefused as exc:
        raise EngineFolderRefused(path=model, reason=exc.reason) from None
    return Genai(config, model, tuple(sidecars))


MAX_IR_BYTES = 256 << 20
RUNTIME_OPTIONS = re.compile(rb"<runtime_options>(.*?)</runtime_options>", re.DOTALL)
OPTION = re.compile(rb"<\s*([A-Za-z0-9_]+)")
KNOWN_OPTIONS = frozenset({"KV_CACHE_PRECISION", "ACTIVATIONS_SCALE_FACTOR"})
"""The ``rt_info`` runtime options an IR may carry (optimum-intel's export writes both):
``KV_CACHE_PRECISION``, which pinbench sets itself (f32, ``ov_generator``), and
``ACTIVATIONS_SCALE_FACTOR``, a scale for f16 activations, which float32 inference does not
use. Any other is refused: the engine takes it as a compile setting wherever pinbench sets
none."""


def check_openvino_ir(name: str, path: Path) -> None:
    """Refuse an OpenVINO IR (``.xml``) whose ``rt_info`` runtime options set anything but
    ``KNOWN_OPTIONS``: the model's file would set how it runs (KV cache grouping, precision
    hints, threads)."""
    size = path.stat().st_size
    if size > MAX_IR_BYTES:
        raise EngineFolderRefused(path=name, reason=f"larger than {MAX_IR_BYTES} bytes")
    text = path.read_bytes()
    blocks = RUNTIME_OPTIONS.findall(text)
    if text.count(b"<runtime_options") != len(blocks):
        raise EngineFolderRefused(
            path=name, reason="its rt_info runtime_options are not written as pinbench reads them"
        )
    for block in blocks:
        for option in OPTION.findall(block):
            key = option.decode("ascii")
            if key not in KNOWN_OPTIONS:
                raise EngineFolderRefused(
                    path=name,
                    reason=f"it carries rt_info runtime_options {key}, which the engine would "
                    "take as its compile settings: refused (pinbench sets how it runs; known: "
                    f"{', '.join(sorted(KNOWN_OPTIONS))})",
                )


@dataclass(frozen=True)
class Genai:
    config: dict[str, Any]
    """``genai_config.json`` as checked."""
    decoder: str
    """The decoder's artifact path."""
    data: tuple[str, ...]
    """The artifact paths of the files holding the decoder's external data."""


def _check_keys(name: str, data: Any, allowed: Mapping[str, Any], at: str) -> None:
    if not isinstance(data, dict):
        raise EngineFolderRefused(path=name, reason=f"{at or 'its top level'} is not an object")
    for key, value in data.items():
        where = f"{at}.{key}" if at else key
        if key not in allowed:
            raise EngineFolderRefused(
                path=name,
                reason=f"{where} is not a key pinbench loads (it accepts "
                f"{', '.join(sorted(allowed))} there): refused rather than passed to the engine",
            )
        rule = allowed[key]
        if isinstance(rule, Mapping):
            _check_keys(name, value, rule, where)
            continue
        problem = _leaf(rule, value)
        if problem is not None:
            raise EngineFolderRefused(path=name, reason=f"{where}: {problem}")


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MOST


def _leaf(rule: str, value: Any) -> str | None:
    """What is wrong with ``value`` by ``rule``, or None."""
    if rule in {"count", "whole"}:
        least = 1 if rule == "count" else 0
        return None if _whole(value) and value >= least else f"a whole number {least}..{MOST}"
    if rule == "ids":
        ids = value if isinstance(value, list) else [value]
        return None if 0 < len(ids) <= 64 and all(map(_whole, ids)) else "a token id, or ids"
    if rule == "one":
        return None if value == 1 and not isinstance(value, bool) else "1 (one answer each)"
    if rule == "bool":
        return None if isinstance(value, bool) else "true or false"
    if rule == "number":
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return None if ok and 0 <= value <= 1e6 else "a number 0..1e6"
    if rule == "name":
        return (
            None if isinstance(value, str) and NAME.match(value) else "a name (A-Z a-z 0-9 _.:/-)"
        )
    if rule == "empty":
        return (
            None
            if value == []
            else "names execution providers: pinbench runs the engine on the CPU's own, and a "
            "provider is a library the engine loads"
        )
    assert rule == "names"
    if not isinstance(value, dict) or len(value) > 64:
        return "an object of names"
    for key, text in value.items():
        if not NAME.match(str(key)) or not isinstance(text, str):
            return f"{key!r}: a name"
        pattern = TEMPLATE if str(key).endswith("_names") else NAME
        if not pattern.match(text):
            which = "one %d among name characters" if pattern is TEMPLATE else "name characters"
            return f"{key} {text!r}: {which} only (the engine formats these names)"
    return None
