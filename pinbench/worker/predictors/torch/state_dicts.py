"""``torch-state-dict``: weights as PyTorch research code ships them (a state dict, or a checkpoint
dict holding one under a key the manifest names; ``.pt``/``.pth``, or safetensors) loaded into the
module the model's own ``builder`` makes (TorchServe's model file beside its serialized file).

The weights are read first, with ``torch.load(weights_only=True)``: PyTorch's restricted
unpickler, which rebuilds tensors and plain containers and refuses any other global, so no
pickle code ever runs; a checkpoint that needs more is refused naming what it needs. The plain
data beside a checkpoint's tensors (a Lightning ``.ckpt``'s omegaconf hyper-parameters) reads
as inert stand-ins (``artifacts.pickle_data``), never as its classes. Then the
builder, the publisher's code, runs as a manifest's processing code does (``processing.loading``:
only with the run's consent, from bytes checked against their pinned sha256), is called as
``function(files)``, and must give a ``torch.nn.Module`` into which every tensor loads with
PyTorch's own ``load_state_dict(strict=True)`` (its compatibility hooks first): no key missing,
none left over, every shape equal.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from pinbench.worker.predictors.base import ModelLoadError
from pinbench.worker.predictors.config import ModelFiles

if TYPE_CHECKING:
    from pinbench.registry.processing_code import Builder

_SHOWN = 5
"""Keys named in a message, at most."""


def _keys(keys: Any) -> str:
    """Up to ``_SHOWN`` keys, each at most 80 characters as repr gives it, and how many more."""
    names = [repr(k)[:80] for k in list(keys)[:_SHOWN]]
    more = len(keys) - len(names)
    return "[" + ", ".join(names) + (f", ... {more} more" if more > 0 else "") + "]"


def _refused_global(exc: Exception) -> str:
    """What ``weights_only`` refused, from PyTorch's message (its ``WeightsUnpickler error``
    line: ``Unsupported global: GLOBAL numpy.core.multiarray.scalar was not an allowed ...``)."""
    text = str(exc)
    if "WeightsUnpickler error:" in text:
        found = text.split("WeightsUnpickler error:", 1)[1].split("Check the documentation")[0]
        return " ".join(found.split(" was not an allowed global")[0].split())[:300]
    return " ".join(text.split())[:300] or type(exc).__name__


def check_archive(name: str, path: Path) -> None:
    """A ``torch.save`` zip as torch.save writes it, its central directory read alone: every
    member stored uncompressed and within the file. PyTorch's reader allocates a member's
    declared size and inflates into it, so a deflated member could expand far past the file
    (a few MiB of zeros to GiBs); torch.save never compresses."""
    import zipfile

    size = path.stat().st_size
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise ModelLoadError(model=name, reason=f"not a readable zip archive: {exc}") from None
    for info in members:
        if info.compress_type != zipfile.ZIP_STORED or info.file_size > size:
            raise ModelLoadError(
                model=name,
                reason=f"member {info.filename[:200]!r} is compressed or declares "
                f"{info.file_size} bytes in a file of {size}: torch.save stores its members "
                "uncompressed, and a compressed one could expand far past the file's size",
            )


def read_state(
    name: str, path: Path, key: str | None, read: object = None
) -> dict[str, torch.Tensor]:
    """The state dict of weights file ``name`` (its blob ``path``): the file itself, or its
    value under ``key`` (a checkpoint's ``model_state``). Refused, naming why, when it needs more
    than ``weights_only`` allows, is not a mapping of names to tensors, or lacks ``key``.
    ``read``: the checkpoint already read from ``path`` (``read_checkpoint``)."""
    if name.endswith(".safetensors"):
        from safetensors.torch import load_file

        try:
            return dict(load_file(str(path), device="cpu"))
        except Exception as exc:  # safetensors raises its own error types for a bad header
            raise ModelLoadError(model=name, reason=f"not safetensors: {exc}"[:400]) from None
    loaded = read if read is not None else read_checkpoint(name, path)
    if key is not None:
        if not isinstance(loaded, Mapping):
            raise ModelLoadError(
                model=name,
                reason=f"builder.state_dict_key {key!r} names a key of a checkpoint dict, but "
                f"the file holds a {type(loaded).__name__}",
            )
        if key not in loaded:
            raise ModelLoadError(
                model=name,
                reason=f"the checkpoint has no key {key!r} (builder.state_dict_key); its keys: "
                f"{_keys(loaded)}",
            )
        loaded = loaded[key]
    return _state(name, loaded, key)


def _with_hyperparameters(
    name: str, path: Path, builder: Builder
) -> tuple[dict[str, torch.Tensor], Any]:
    """A checkpoint's state dict and its hyper-parameters as plain data (``Builder``'s two
    keys), read in one pass; refused naming the key that is missing or the value that is not
    plain data."""
    from pinbench.artifacts.hyperparameters import NotPlain, plain

    key, hyper = builder.state_dict_key, builder.hyperparameters_key
    assert key is not None and hyper is not None  # Builder checks both are given
    loaded = read_checkpoint(name, path)
    if not isinstance(loaded, Mapping) or hyper not in loaded:
        found = _keys(loaded) if isinstance(loaded, Mapping) else type(loaded).__name__
        raise ModelLoadError(
            model=name,
            reason=f"the checkpoint has no key {hyper!r} (builder.hyperparameters_key); its "
            f"keys: {found}",
        )
    try:
        hyperparameters = plain(loaded[hyper], torch.is_tensor, hyper)
    except NotPlain as exc:
        raise ModelLoadError(
            model=name,
            reason=f"its hyper-parameters are not plain data: {exc.where} is {exc.what}; a "
            "builder is handed only dicts, lists, numbers, strings and tensors",
        ) from None
    return read_state(name, path, key, loaded), hyperparameters


def read_checkpoint(name: str, path: Path) -> object:
    """What ``torch.save`` wrote to weights file ``name`` (its blob ``path``), read with
    ``torch.load(weights_only=True)``; in a zip archive, the plain data beside the tensors that
    PyTorch's allowlist lacks (a Lightning checkpoint's omegaconf hyper-parameters:
    ``artifacts.pickle_data``) reads as inert stand-ins, never as its classes. Refused, naming
    why, when it is not a PyTorch file or needs any other global."""
    with path.open("rb") as f:
        head = f.read(4)
    if head != b"PK\x03\x04" and head[:1] != b"\x80":
        raise ModelLoadError(
            model=name,
            reason="not a PyTorch weights file: neither torch.save's zip archive nor a pickle "
            f"(it starts {head!r})",
        )
    stand_ins: list[Callable[..., Any] | tuple[Callable[..., Any], str]] = []
    if head == b"PK\x03\x04":
        check_archive(name, path)
        stand_ins = _plain_data(name, path)
    try:
        with torch.serialization.safe_globals(stand_ins):
            return torch.load(str(path), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        raise ModelLoadError(model=name, reason=_pickled_object(name, path, exc)) from None
    except Exception as exc:  # not a torch file at all: torch raises many types
        first = (str(exc).splitlines() or [""])[0][:300]
        raise ModelLoadError(
            model=name, reason=f"not a PyTorch weights file: {type(exc).__name__}: {first}"
        ) from None


def _pickled_object(name: str, path: Path, exc: pickle.UnpicklingError) -> str:
    """Why a file ``torch.load(weights_only=True)`` refused is refused, as every refusal of a
    pickle says it (``model_formats.pickle_refusal``): the globals its opcodes name, read
    without unpickling, or else the one PyTorch names."""
    from pinbench.artifacts.model_formats import Found, identify, pickle_refusal

    found = identify(path, name)
    if found is None or found.format != "torch-pickle" or not found.globals:
        refused = _refused_global(exc)
        found = Found("torch-pickle", f"torch.load(weights_only=True) refuses {refused}")
    return (
        "the file needs more than torch.load(weights_only=True) allows, and pinbench never "
        f"runs pickle code from a torch-state-dict model: it is {pickle_refusal(found, None)}"
    )


def _plain_data(name: str, path: Path) -> list[Callable[..., Any] | tuple[Callable[..., Any], str]]:
    """Stand-ins for the globals of the archive's pickle that PyTorch's allowlist lacks and
    that are plain data (``artifacts.pickle_data``), found by reading its opcodes (PyTorch's
    ``get_unsafe_globals_in_checkpoint``: nothing is unpickled); the others are left for the
    restricted unpickler to refuse by name."""
    from pinbench.artifacts.pickle_data import plain_data, stand_ins

    try:
        needed = torch.serialization.get_unsafe_globals_in_checkpoint(str(path))
    except Exception as exc:  # a TorchScript archive, a pickle the scan cannot parse
        first = (str(exc).splitlines() or [""])[0][:300]
        raise ModelLoadError(
            model=name, reason=f"not a torch.save checkpoint: {type(exc).__name__}: {first}"
        ) from None
    return stand_ins(sorted(n for n in needed if plain_data(n)))


def _state(name: str, loaded: object, key: str | None) -> dict[str, torch.Tensor]:
    where = f"its {key!r}" if key is not None else "the file"
    if not isinstance(loaded, Mapping):
        raise ModelLoadError(
            model=name, reason=f"{where} holds a {type(loaded).__name__}, not a state dict"
        )
    others = [k for k, v in loaded.items() if not isinstance(k, str) or not torch.is_tensor(v)]
    if others:
        nested = [k for k in others if isinstance(loaded[k], Mapping)]
        hint = (
            f": a checkpoint? name the key that holds the weights as `builder.state_dict_key` "
            f"(keys holding dicts: {_keys(nested)})"
            if nested and key is None
            else ""
        )
        raise ModelLoadError(
            model=name,
            reason=f"{where} is not a state dict (names to tensors): {_keys(others)} are not{hint}",
        )
    return {str(k): v for k, v in loaded.items()}


def fit(module: torch.nn.Module, state: dict[str, torch.Tensor], name: str, where: str) -> None:
    """``state`` loaded into ``module`` by PyTorch's own ``load_state_dict(strict=True)``, whose
    compatibility hooks run first (an old ``weight_norm``'s ``weight_g``/``weight_v`` read into
    today's parametrization); a mismatch is refused with every line PyTorch gives (missing,
    unexpected and misshapen keys), the builder ``where`` named."""
    try:
        module.load_state_dict(state, strict=True)
    except Exception as exc:  # keys or shapes that do not fit, a dtype the module refuses
        lines = [" ".join(line.split()) for line in str(exc).splitlines() if line.strip()]
        said = "; ".join(lines)
        if len(said) > MESSAGE_CHARS:
            said = said[:MESSAGE_CHARS] + " ..."
        raise ModelLoadError(
            model=name,
            reason=f"the weights do not fit the module {where} builds "
            f"(load_state_dict(strict=True)): {said}",
        ) from None


MESSAGE_CHARS = 1200
"""PyTorch's message, at most (it names every missing key of a large model)."""


def build(model: ModelFiles, name: str, path: Path) -> torch.nn.Module:
    """The module of a ``torch-state-dict`` model, its weights (file ``name``, blob ``path``)
    loaded. The weights are read before the builder runs: a file that is refused runs no code.
    The builder's own modules are importable while it is loaded and called, from their pinned
    files only (``processing.local_modules``). Without the run's consent
    (``ModelFiles.allow_code``) nothing runs (``CodeRefused``)."""
    from pinbench.processing.consent import CodeRefused
    from pinbench.processing.loading import load
    from pinbench.processing.local_modules import builder_modules

    builder = model.builder
    if builder is None:
        raise ModelLoadError(
            model=name, reason="a torch-state-dict model needs the `builder` that makes it"
        )
    if not model.allow_code:
        raise CodeRefused(
            model=name,
            roles=["builder"],
            reason="This evaluation was not allowed to run it (pinbench run --allow-code)",
        )
    if builder.hyperparameters_key is None:
        state = read_state(name, path, builder.state_dict_key)
        given: tuple[Any, ...] = (model.files,)
    else:
        state, hyperparameters = _with_hyperparameters(name, path, builder)
        given = (model.files, hyperparameters)
    with builder_modules(builder, model.files, model.sha256) as local:
        loaded = load({"builder": builder}, model.files, model.sha256, local=local)["builder"]
        module = loaded.call(*given)
    if not isinstance(module, torch.nn.Module):
        raise ModelLoadError(
            model=name,
            reason=f"the builder {builder.where} returned a {type(module).__name__}, not a "
            "torch.nn.Module",
        )
    fit(module, state, name, builder.where)
    return module.eval()
