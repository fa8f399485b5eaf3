"""An LLM engine's model artifact checked at publish, as data (issue 87, decision 318):
``ort-genai`` (ONNX Runtime GenAI's folder) and ``ctranslate2`` (CTranslate2's), each beside
the Hugging Face folder's ``config.json`` and ``tokenizer.json`` at the artifact's root, which
pinbench's generator reads (``worker.generation.engine_folder``).

``genai_config.json`` is the engine's instructions for loading its model: it can name a
library of custom operators to load (``custom_ops_library``: native code), execution providers
and their options, and other model files by any path. Only what the CPU engine needs to load
one decoder is accepted, key by key (``GENAI_KEYS``); its decoder's file must be an ONNX model
of the artifact beside it, with its external data inside the artifact (``onnx_files``). A
refusal names the key and the file.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from pinbench.registry.manifest import ModelManifest
from pinbench.registry.manifest_parts import FileEntry
from pinbench.registry.sourcing import FileProblem

GENAI = "genai_config.json"
MAX_CONFIG_BYTES = 1 << 20
ROOT_FILES = ("config.json", "tokenizer.json")
GENAI_KEYS: Mapping[str, Any] = {
    "model": {
        "bos_token_id": None,
        "context_length": None,
        "eos_token_id": None,
        "pad_token_id": None,
        "sep_token_id": None,
        "decoder_start_token_id": None,
        "type": None,
        "vocab_size": None,
        "decoder": {
            "session_options": {"log_id": None, "provider_options": None},
            "filename": None,
            "head_size": None,
            "hidden_size": None,
            "inputs": None,
            "outputs": None,
            "num_attention_heads": None,
            "num_hidden_layers": None,
            "num_key_value_heads": None,
        },
    },
    "search": {
        key: None
        for key in (
            "diversity_penalty", "do_sample", "early_stopping", "length_penalty", "max_length",
            "min_length", "no_repeat_ngram_size", "num_beams", "num_return_sequences",
            "past_present_share_buffer", "repetition_penalty", "temperature", "top_k", "top_p",
        )
    },
}  # fmt: skip
"""The keys a ``genai_config.json`` may hold, nested; None: any value of plain data. Its
``search`` section is the engine's own search's defaults, which pinbench's loop does not use
(``worker.generation.ort_genai_generator``)."""
ENGINE_FOLDER = {
    "ort-genai": (GENAI,),
    "ctranslate2": ("model.bin", "config.json"),
    "openvino": ("openvino_model.xml", "openvino_model.bin"),
}
"""Per format: the file that marks the engine's folder, then the others it must hold."""


class EngineFolderRefused(FileProblem):
    """An engine's model folder pinbench does not load."""


def check_engine_folder(manifest: ModelManifest, where: Callable[[FileEntry], Path]) -> None:
    """Refuse ``manifest`` (format ``ort-genai`` or ``ctranslate2``) unless its files are one
    engine folder and the root files pinbench's generator reads."""
    need = ENGINE_FOLDER.get(manifest.format)
    if need is None:
        return
    paths = {f.path: f for f in manifest.files}
    marker, *beside = need
    found = [p for p in paths if PurePosixPath(p).name == marker]
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


def check_genai(name: str, locate: Callable[[str], Path], paths: Collection[str]) -> None:
    """Refuse the ``genai_config.json`` at artifact path ``name`` (its bytes at
    ``locate(name)``) unless it holds ``GENAI_KEYS`` alone, no provider, and a decoder that is
    an ONNX model of the artifact's ``paths`` beside it. Publishing checks it, and the
    generator again before the engine reads it."""
    from pinbench.registry.onnx_files import OnnxRefused, check_onnx

    path = locate(name)
    if path.stat().st_size > MAX_CONFIG_BYTES:
        raise EngineFolderRefused(path=name, reason=f"larger than {MAX_CONFIG_BYTES} bytes")
    try:
        config = json.loads(path.read_bytes())
    except ValueError as exc:
        raise EngineFolderRefused(path=name, reason=f"not JSON ({exc})") from None
    _check_keys(name, config, GENAI_KEYS, "")
    decoder = config.get("model", {}).get("decoder", {})
    providers = decoder.get("session_options", {}).get("provider_options", [])
    if providers:
        raise EngineFolderRefused(
            path=name,
            reason="model.decoder.session_options.provider_options names execution providers: "
            "pinbench runs the engine on the CPU's own, and a provider is a library the engine "
            "loads",
        )
    filename = decoder.get("filename")
    if not isinstance(filename, str) or PurePosixPath(filename).name != filename or not filename:
        raise EngineFolderRefused(
            path=name, reason="model.decoder.filename must name a file beside it, by its name"
        )
    model = (PurePosixPath(name).parent / filename).as_posix()
    if model not in paths:
        raise EngineFolderRefused(path=name, reason=f"its decoder {model} is not among the files")
    try:
        check_onnx(model, locate(model), list(paths))
    except OnnxRefused as exc:
        raise EngineFolderRefused(path=model, reason=exc.reason) from None


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
        if allowed[key] is not None:
            _check_keys(name, value, allowed[key], where)
