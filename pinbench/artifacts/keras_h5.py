"""A Keras 2 HDF5 model's (``.h5``/``.hdf5``) signature read from its ``model_config``
attribute with h5py: the model is not built, no layer is deserialised.

``model.save("x.h5")`` in Keras 2 (and Keras 3's legacy writer) stores the architecture as
JSON in the file's root attribute ``model_config`` (beside ``keras_version`` and
``backend``), the weights in the group ``model_weights``. The JSON is the same
``{"class_name": ..., "config": ...}`` a ``.keras`` file's ``config.json`` holds, read by
the same code (``artifacts.keras.keras_signature``: functional and Sequential models,
``Lambda`` layers refused: Keras 2 writes their functions as marshalled bytecode, or as a
module function's name, either of them code). Only the root attributes are opened: the
attribute must be one string (stored in the file, so at most its size) and is refused past
``MAX_CONFIG_BYTES``; the JSON is parsed with a depth limit. h5py (TensorFlow's dependency,
the ``tensorflow`` extra) parses the HDF5 structure: HDF5's C library reads the superblock
and the root object's header, nothing more.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pinbench.artifacts.jsonsafe import JsonRefused, load_json
from pinbench.artifacts.keras import MAX_CONFIG_BYTES, MAX_DEPTH, KerasConfigError, layer_objects

CONFIG = "model_config"


def read_h5_config(path: Path) -> Any:
    """The parsed ``model_config`` of the Keras HDF5 file at ``path``."""
    import h5py

    try:
        with h5py.File(path, "r") as f:
            if CONFIG not in f.attrs:
                raise KerasConfigError(
                    f"an HDF5 file without the attribute {CONFIG!r}: weights alone "
                    "(save_weights) or not a Keras model; save the whole model"
                )
            attr = f.attrs.get_id(CONFIG)
            if attr.shape != () or attr.get_type().get_class() != h5py.h5t.STRING:
                raise KerasConfigError(
                    f"its {CONFIG} is not one string (shape {attr.shape}): not Keras' config"
                )
            raw = f.attrs[CONFIG]  # a string stored in the file: at most the file's size
    except KerasConfigError:
        raise
    except (OSError, ValueError, TypeError, KeyError, RuntimeError) as exc:
        raise KerasConfigError(f"h5py cannot read it as HDF5 with {CONFIG} ({exc})") from None
    data = raw.encode("utf-8") if isinstance(raw, str) else raw
    if not isinstance(data, bytes):
        raise KerasConfigError(f"its {CONFIG} is {type(raw).__name__}, not JSON text")
    if len(data) > MAX_CONFIG_BYTES:
        raise KerasConfigError(f"its {CONFIG} holds {len(data)} bytes, over {MAX_CONFIG_BYTES}")
    try:
        config = load_json(data, max_depth=MAX_DEPTH)
    except JsonRefused as exc:
        raise KerasConfigError(f"{CONFIG}: {exc.reason}") from None
    for layer in layer_objects(config):
        if layer.get("class_name") == "Lambda":
            raise KerasConfigError(
                f"Lambda layer {layer.get('name')!r}: Keras 2 stores its function as marshalled "
                "Python bytecode or a module's function by name, code pinbench never runs; "
                "replace it with built-in layers"
            )
    return config
