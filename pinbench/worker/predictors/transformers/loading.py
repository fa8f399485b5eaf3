"""Loading a Hugging Face folder with transformers, offline, from its verified files only.

The folder was read as data first (``artifacts.hf_folder``: no custom code, no pickles unless
trusted); the class is the one ``config.json`` names, looked up among transformers' own
exports (never a module path), and ``from_pretrained`` runs with ``local_files_only`` and
``trust_remote_code=False`` on the run's own folder.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pinbench.artifacts.hf_folder import HfFolder, HfFolderRefused, describe
from pinbench.worker.predictors.base import ModelLoadError
from pinbench.worker.predictors.config import ModelFiles

OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}


def import_transformers() -> Any:
    """transformers, told it is offline and quiet before it is imported."""
    os.environ.update(OFFLINE)
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    import transformers

    transformers.utils.logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    transformers.utils.logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    return transformers


def folder_of(model: ModelFiles) -> tuple[HfFolder, Path]:
    """The folder's description and where its files are (the run's own folder)."""
    try:
        folder = describe(model.files)
    except HfFolderRefused as exc:
        raise ModelLoadError(model=model.format, reason=str(exc)) from None
    config = model.files[folder.path("config.json")]
    root = config.parent
    for name, path in model.files.items():
        if folder.root and not name.startswith(folder.root + "/"):
            continue  # a file of the artifact beside the folder (a labels file)
        inside = name[len(folder.root) + 1 :] if folder.root else name
        if path.parent != (root / inside).parent:
            raise ModelLoadError(
                model=folder.path("config.json"),
                reason=f"{name} is not at its path in the model's folder",
            )
    return folder, root


def _takes_decoder_inputs(cls: Any) -> bool:
    """An encoder-decoder class: its ``forward`` takes the decoder's own ids (whatever the
    folder's config.json says; ``artifacts.hf_folder`` refuses those that say so)."""
    import inspect

    return "decoder_input_ids" in inspect.signature(cls.forward).parameters


def _generates(transformers: Any, cls: Any, folder: HfFolder) -> None:
    """A class that generates text: a decoder-only model, or an encoder-decoder whose folder
    says it is one and names its decoder's start (``HfFolder.decoder_start``)."""
    if not issubclass(cls, transformers.GenerationMixin):
        why = "does not generate text"
    elif _takes_decoder_inputs(cls) and folder.decoder_start is None:
        why = (
            "is an encoder-decoder (its forward takes decoder_input_ids) whose config.json does "
            "not say `is_encoder_decoder: true`, so its decoder's start was not read"
        )
    else:
        return
    raise ModelLoadError(
        model=folder.path("config.json"),
        reason=f"{folder.architecture} {why} (a text-generation run needs a causal language "
        "model, *ForCausalLM / *LMHeadModel, or an encoder-decoder's generating head, "
        "*ForConditionalGeneration)",
    )


def load_model(model: ModelFiles, *, generation: bool = False) -> tuple[Any, HfFolder]:
    """The model in eval mode (``ModelLoadError`` with the reason)."""
    folder, root = folder_of(model)
    if model.architecture is not None and model.architecture != folder.architecture:
        raise ModelLoadError(
            model=folder.path("config.json"),
            reason=f"the manifest's architecture {model.architecture!r} is not config.json's "
            f"{folder.architecture!r}",
        )
    if folder.pickled and not model.trusted:
        raise ModelLoadError(
            model=folder.weights[0],
            reason="pickled weights run arbitrary code when loaded; pinbench unpickles them "
            "only when the manifest says `trusted: true` and the run allows it "
            "(`pinbench run --allow-pickle`); prefer safetensors",
        )
    transformers = import_transformers()
    cls: Any = getattr(transformers, folder.architecture, None)
    if not isinstance(cls, type) or not issubclass(cls, transformers.PreTrainedModel):
        raise ModelLoadError(
            model=folder.path("config.json"),
            reason=f"transformers {transformers.__version__} has no model class "
            f"{folder.architecture!r}",
        )
    if generation:
        _generates(transformers, cls, folder)
    try:
        loader: Any = cls
        loaded = loader.from_pretrained(
            str(root),
            local_files_only=True,
            trust_remote_code=False,
            use_safetensors=not folder.pickled,
        )
    except Exception as exc:  # transformers raises many types for a bad folder
        reason = f"{type(exc).__name__}: {exc}".replace(str(root), "<model folder>")
        raise ModelLoadError(model=folder.path("config.json"), reason=reason.strip()) from None
    return loaded.eval(), folder
