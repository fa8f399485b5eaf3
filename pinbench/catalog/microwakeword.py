"""microWakeWord's four int8 wake-word models (``alexa``, ``hey_jarvis``, ``hey_mycroft``,
``okay_nabu``) from the PyPI package ``pymicro-wakeword`` 2.5.0, taken out of the pinned wheel as
data (their bytes unmodified; nothing of the package installed), run by TensorFlow's
``tf.lite.Interpreter``: each takes one stride of three 40-channel microfrontend feature frames
(quantized with the file's own scale and zero point) and answers the wake word's probability
(one uint8 step, 1/256).

There is no recorded speech offline to score them on, so their dataset (``wake-features``) is
performance only, like ResNet-50's: seeded random features on the microfrontend's grid
(multiples of 1/25.6 between 0 and 25), no labels. ``tests/test_catalog_wheels.py`` checks each
run's answers against the package's own inference (its ``libtensorflowlite_c``) on the same
features; ``tests/test_tflite_keras_h5.py`` the same on the package's own features of audio.

Licence: pymicro-wakeword is Apache-2.0 (its models are microWakeWord's, Apache-2.0).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pinbench.catalog.files import SUPPORTED, dataset_manifest, dump, entry, wheel_model

PACKAGE = "pymicro-wakeword"
VERSION = "1.0.0"
DATASET = "wake-features"
FAMILY = "microwakeword"
WORDS = ("alexa", "hey_jarvis", "hey_mycroft", "okay_nabu")
SAMPLES, SEED = 64, 74
INPUT, OUTPUT = "serving_default_input_audio:0", "StatefulPartitionedCall:0"
SCALE_IN = 0.10196078568696976
"""The models' input scale (float32 in the file); their zero point is -128."""
STEP_OUT = 0.00390625
"""The models' output scale: one uint8 step, zero point 0."""


def name(word: str) -> str:
    return f"audio/microwakeword-{word.replace('_', '-')}"


def member(word: str) -> str:
    return f"pymicro_wakeword/models/{word}.tflite"


def features() -> Any:
    """``(SAMPLES, 3, 40)`` float32: seeded multiples of 1/25.6 in [0, 25] (exact in float32)."""
    import numpy as np

    steps = np.random.default_rng(SEED).integers(0, 641, (SAMPLES, 3, 40))
    return (steps / 25.6).astype(np.float32)


def write_datasets(root: Path) -> list[Path]:
    """The features under ``root/wake-features/`` and their dataset manifest."""
    import numpy as np

    folder = root / DATASET
    folder.mkdir(exist_ok=True)
    np.save(folder / "features.npy", features(), allow_pickle=False)
    manifest = dataset_manifest(
        root,
        DATASET,
        version=VERSION,
        description=f"{SAMPLES} strides of 3 x 40 seeded random microfrontend-range features "
        f"(seed {SEED}), no labels: performance only",
        license="CC0-1.0",
        samples=SAMPLES,
        data={"format": "npy", "path": "features.npy"},
        labels={"format": "class-index-npy"},
        files=[entry(root, folder / "features.npy")],
    )
    return [manifest]


def export(root: Path) -> list[Path]:
    """Each word's model under ``root/microwakeword/`` and its manifest."""
    from pinbench.catalog.wheels import copy_member

    out = []
    for word in WORDS:
        path = copy_member(PACKAGE, member(word), root / "microwakeword")
        what = f"microWakeWord's '{word.replace('_', ' ')}' detector (int8 TensorFlow Lite)"
        document = wheel_model(
            name(word), VERSION, what=what, package=PACKAGE, license="Apache-2.0"
        ) | {
            "format": "tflite",
            "framework": {"name": "tensorflow", "range": SUPPORTED["tensorflow"]},
            "files": [entry(root, path)],
            "inputs": [
                {
                    "name": INPUT,
                    "element_type": "float32",
                    "shape": [3, 40],
                    "quantization": {"scale": SCALE_IN, "zero_point": -128},
                }
            ],
            "outputs": [
                {
                    "name": OUTPUT,
                    "quantization": {"scale": STEP_OUT, "zero_point": 0},
                    "type": "binary",
                    "binary": {"threshold": 0.5},
                }
            ],
        }
        out.append(dump(root / f"model-microwakeword-{word}.yaml", document))
    return out
