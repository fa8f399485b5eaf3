"""openWakeWord's six pre-trained classifiers and the silero-vad v4 it ships, from the PyPI
package ``openwakeword`` 0.4.0, taken out of the pinned wheel as data (their bytes unmodified;
nothing of the package installed), all ONNX:

- ``alexa``, ``hey_jarvis``, ``hey_marvin``, ``hey_mycroft`` (16 frames of the package's
  96-wide speech embeddings each), ``weather`` (22) and ``timer`` (34 frames, 7 classes: no
  timer and six durations). There is no recorded speech offline to score them on, so their
  datasets (``wake-embeddings-16``, ``-22``, ``-34``) are performance only, like ResNet-50's:
  seeded random embeddings, no labels;
- silero-vad v4 (``silero_vad.onnx``, an older network than the ``silero`` part's: two carried
  states ``h`` and ``c``, no context) on ``speech-clips`` in chunks of 480 samples (30 ms), as
  the package's ``VAD.predict`` feeds it: scored by frame F1 and ROC AUC.

``tests/test_catalog_wheels.py`` checks every run against ONNX Runtime called as the package
calls it (``Model.predict``'s ``session.run``, ``VAD.predict``'s loop).

Licences: openwakeword's code is Apache-2.0, its pre-trained models CC BY-NC-SA 4.0 (its
README): the catalog fetches them from PyPI onto the machine that builds it, unmodified, to
benchmark them there; it never redistributes them. silero-vad is MIT.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pinbench.catalog.files import SUPPORTED, dataset_manifest, dump, entry, wheel_model

PACKAGE = "openwakeword"
VERSION = "1.0.0"
FOLDER = "openwakeword/resources/models/"
SAMPLES, SEED = 32, 74
CLASSIFIERS: dict[str, tuple[str, str, int, dict[str, Any]]] = {
    # word -> (input, output, frames, output port)
    "alexa": ("onnx::Flatten_0", "13", 16, {"type": "binary", "binary": {"threshold": 0.5}}),
    "hey_jarvis": ("x.1", "53", 16, {"type": "binary", "binary": {"threshold": 0.5}}),
    "hey_marvin": ("onnx::Flatten_0", "39", 16, {"type": "binary", "binary": {"threshold": 0.5}}),
    "hey_mycroft": ("input_1", "dense", 16, {"type": "binary", "binary": {"threshold": 0.5}}),
    "weather": ("onnx::Flatten_0", "13", 22, {"type": "binary", "binary": {"threshold": 0.5}}),
    "timer": (
        "onnx::Flatten_0",
        '{"1": "1_minute_timer", "2": "5_minute_timer", "3": "10_minute_timer", '
        '"4": "20_minute_timer", "5": "30_minute_timer", "6": "1_hour_timer"}',
        34,
        {"type": "classification"},
    ),
}
VAD = "audio/silero-vad-v4"
VAD_MEMBER = FOLDER + "silero_vad.onnx"
VAD_CHUNK = 480


def name(word: str) -> str:
    return f"audio/openwakeword-{word.replace('_', '-')}"


def member(word: str) -> str:
    return f"{FOLDER}{word}_v0.1.onnx"


def dataset(frames: int) -> str:
    return f"wake-embeddings-{frames}"


def embeddings(frames: int) -> Any:
    """``(SAMPLES, frames, 96)`` float32: seeded standard normal values."""
    import numpy as np

    rng = np.random.default_rng(SEED + frames)
    return rng.standard_normal((SAMPLES, frames, 96)).astype(np.float32)


def write_datasets(root: Path) -> list[Path]:
    """The embeddings for each input length under ``root/wake-embeddings/``, with manifests
    (the VAD's ``speech-clips`` is the ``silero`` part's: ``packaged`` writes it with this
    part's)."""
    import numpy as np

    folder = root / "wake-embeddings"
    folder.mkdir(exist_ok=True)
    out = []
    for frames in sorted({f for _, _, f, _ in CLASSIFIERS.values()}):
        path = folder / f"embeddings-{frames}.npy"
        np.save(path, embeddings(frames), allow_pickle=False)
        out.append(
            dataset_manifest(
                root,
                dataset(frames),
                version=VERSION,
                description=f"{SAMPLES} windows of {frames} seeded random 96-wide embeddings "
                f"(seed {SEED + frames}), no labels: performance only",
                license="CC0-1.0",
                samples=SAMPLES,
                data={"format": "npy", "path": path.name},
                labels={"format": "class-index-npy"},
                files=[entry(root, path)],
            )
        )
    return out


def _document(key: str, path: Path, root: Path, what: str) -> dict[str, Any]:
    licence = "CC-BY-NC-SA-4.0" if key != VAD else "MIT"
    return wheel_model(key, VERSION, what=what, package=PACKAGE, license=licence) | {
        "format": "onnx",
        "framework": {"name": "onnxruntime", "range": SUPPORTED["onnxruntime"]},
        "files": [entry(root, path)],
    }


def export(root: Path) -> list[Path]:
    """Each classifier and the VAD under ``root/openwakeword/`` with their manifests."""
    from pinbench.catalog import silero
    from pinbench.catalog.wheels import copy_member

    folder = root / "openwakeword"
    out = []
    for word, (inp, output, frames, port) in CLASSIFIERS.items():
        path = copy_member(PACKAGE, member(word), folder)
        what = f"openWakeWord's '{word.replace('_', ' ')}' model"
        document = _document(name(word), path, root, what)
        document["inputs"] = [{"name": inp, "shape": [frames, 96]}]
        document["outputs"] = [{"name": output, **port}]
        out.append(dump(root / f"model-openwakeword-{word}.yaml", document))
    path = copy_member(PACKAGE, VAD_MEMBER, folder)
    document = _document(VAD, path, root, "silero-vad v4 (voice activity)")
    document["inputs"] = [
        {
            "name": "input",
            "shape": [VAD_CHUNK],
            "steps": [{"decode_audio": {"channel": "mix", "rate": silero.RATE}}],
            "stream": {"chunk": VAD_CHUNK},
        },
        {"name": "h", "shape": [2, 64], "state": {"batch_axis": 1, "next": "hn"}},
        {"name": "c", "shape": [2, 64], "state": {"batch_axis": 1, "next": "cn"}},
        {"name": "sr", "element_type": "int64", "value": silero.RATE},
    ]
    document["outputs"] = [{"name": "output", "type": "binary", "binary": {"threshold": 0.5}}]
    out.append(dump(root / "model-silero-vad-v4.yaml", document))
    return out
