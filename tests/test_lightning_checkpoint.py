"""A Lightning checkpoint runs from its own bytes (issue 73, item 3): its tensors read as data,
the omegaconf hyper-parameters beside them as inert stand-ins, never as their classes.

pesto-pitch 2.0.1 (LGPL-3.0) ships ``pesto/weights/mir-1k_g7.ckpt``: a dict of ``state_dict``,
Lightning's ``epoch``/``global_step``/``loops`` and ``hparams`` holding omegaconf
``DictConfig``/``ListConfig`` nodes, which ``torch.load(weights_only=True)`` refuses. The
model runs with a builder that executes the wheel's own ``pesto/model.py`` (and the two
``pesto/utils`` files it imports) byte for byte and makes PESTO's network after its CQT
preprocessor (crop, encoder, the checkpoint's pitch shift); its input is the log-magnitude CQT
frames pesto's own ``Preprocessor`` computes. The reference is the package's own
``load_model`` and forward on the same audio (seeded sines), imported from the wheel's files
(its ``core.py`` imports torchaudio, which has no wheel for this torch: an empty stand-in).
The activations agree to 2.5e-4 (measured 1.35e-5 and 1.08e-4: float32 sums in another order)
and pick the same pitch bin on every frame.
"""

from __future__ import annotations

import importlib
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from pinbench.worker.predictors.base import ModelLoadError
from pinbench.worker.predictors.torch.state_dicts import read_checkpoint, read_state
from pinbench.workspace import Workspace
from tests.package_models import package_file, package_tree
from tests.test_torch_state_dict import (
    TOLERANCE,
    Runs,
    _forget,
    _publish_dataset,
    _publish_torch,
    _run,
)

CHECKPOINT = "pesto/weights/mir-1k_g7.ckpt"
RUN_FILES = ["pesto/model.py", "pesto/utils/crop_cqt.py", "pesto/utils/reduce_activations.py"]

PESTO_BUILDER = '''\
"""pesto-pitch 2.0.1's network after its CQT preprocessor, from its own model.py and the two
utils files it imports (files of this model, byte for byte): PESTO.forward's crop, encoder
and pitch shift, on the log-magnitude CQT frames its Preprocessor gives."""
import math
import sys
import types

import torch
from torch import nn

BINS_PER_SEMITONE = 3  # hcqt_params["bins_per_semitone"]


def _module(files, member, name, package):
    namespace = {"__name__": name, "__package__": package}
    exec(compile(files[member].read_bytes(), member, "exec"), namespace)
    return namespace


class Pitch(nn.Module):
    def __init__(self, model, hparams):
        super().__init__()
        self.encoder = model["Resnet1d"](**hparams["encoder"])  # as pesto's loader reads them
        self.confidence = model["ConfidenceClassifier"]()
        self.crop_cqt = model["CropCQT"](**hparams["pitch_shift"])
        self.register_buffer("shift", torch.zeros((), dtype=torch.float), persistent=True)

    def forward(self, cqt):
        x = cqt * (math.log(10) / 10.0)  # PESTO.forward scales the dB frames in place
        activations = self.encoder(self.crop_cqt(x))
        return activations.roll(-round(self.shift.item() * BINS_PER_SEMITONE), -1)


def build(files, hparams):
    utils = types.ModuleType("pesto.utils")
    crop = _module(files, "pesto/utils/crop_cqt.py", "pesto.utils.crop_cqt", "pesto.utils")
    reduce = "pesto/utils/reduce_activations.py"
    utils.CropCQT = crop["CropCQT"]
    utils.reduce_activations = _module(files, reduce, "pesto.utils.r", "pesto.utils")[
        "reduce_activations"
    ]
    package = types.ModuleType("pesto")
    package.__path__ = []
    package.utils = utils
    saved = {n: sys.modules.get(n) for n in ("pesto", "pesto.utils")}
    sys.modules.update({"pesto": package, "pesto.utils": utils})
    try:
        model = _module(files, "pesto/model.py", "pesto.model", "pesto")
    finally:
        for name, module in saved.items():
            if module is None:
                del sys.modules[name]
            else:
                sys.modules[name] = module
    return Pitch(model, hparams)
'''


def _pestos_own(checkpoint: Path, audio: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """pesto's own model (its ``load_model``, which unpickles the checkpoint with omegaconf):
    the CQT frames its preprocessor gives and the activations of its forward."""
    _forget("pesto")
    root = package_tree("pesto-pitch", "pesto")  # its modules and what they read
    sys.path.insert(0, str(root))
    saved = {n: sys.modules.get(n) for n in ("torchaudio",)}
    try:
        sys.modules["torchaudio"] = types.ModuleType("torchaudio")
        pesto = importlib.import_module("pesto")
        assert Path(str(pesto.__file__)).resolve() == root / "pesto" / "__init__.py"
        model = pesto.load_model(str(checkpoint), step_size=10.0, sampling_rate=16000)
        wave = torch.from_numpy(audio)
        with torch.inference_mode():
            frames = model.preprocessor(wave.clone(), sr=16000).flatten(0, 1).clone()
            _, _, _, activations = model(wave, sr=16000)
    finally:
        sys.path.pop(0)
        _forget("pesto")
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module
    return frames.numpy(), activations.numpy()


def test_pestos_lightning_checkpoint_runs_from_its_wheel_equal_to_its_own_forward(
    ws: Workspace, tmp_path: Path
) -> None:
    checkpoint = package_file("pesto-pitch", CHECKPOINT)
    rng = np.random.default_rng(73)
    t = np.arange(16000) / 16000.0  # one second at 16 kHz: ~100 frames of 10 ms
    hz = rng.uniform(80.0, 800.0, size=3)
    audio = sum(np.sin(2 * np.pi * f * t + rng.uniform(0, 6.28)) for f in hz) / 3.0
    audio = (audio + rng.normal(0, 0.01, size=t.shape)).astype(np.float32)
    frames, theirs = _pestos_own(checkpoint, audio)
    assert frames.shape[1:] == (1, 251) and theirs.shape == (frames.shape[0], 384)

    _publish_torch(ws, tmp_path / "framework")
    (tmp_path / "data").mkdir()
    labels = theirs.argmax(axis=1).astype(np.int64)
    _publish_dataset(ws, tmp_path / "data", frames, labels, classes=384)
    files = {"mir-1k_g7.ckpt": checkpoint.read_bytes(), "pesto_builder.py": PESTO_BUILDER.encode()}
    files |= {m: package_file("pesto-pitch", m).read_bytes() for m in RUN_FILES}
    ours = _run(
        ws,
        tmp_path / "model",
        {
            "name": "audio/pesto-mir-1k-g7",
            "license": "LGPL-3.0",
            "inputs": [{"name": "cqt", "element_type": "float32", "shape": [1, 251]}],
            "outputs": [{"name": "activations", "type": "classification"}],
            "builder": {"file": "pesto_builder.py", "function": "build"}
            | {"state_dict_key": "state_dict", "hyperparameters_key": "hparams"},
        },
        files,
    )
    assert ours.shape == theirs.shape
    # float32 sums in another order (batches of 4 here, one of 101 frames there): measured
    # 1.35e-5 on softmax activations on a quiet machine, 1.08e-4 in a fresh clone's full suite
    # (3 workers on 2 cores); every frame's class below must agree exactly all the same
    assert float(np.max(np.abs(ours - theirs))) <= 25 * TOLERANCE
    assert (ours.argmax(axis=1) == labels).all()


def test_the_checkpoint_is_read_as_data_without_omegaconf(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The hyper-parameters read as inert stand-ins: omegaconf is never imported (an import of
    it fails here), and the tensors equal what unpickling with omegaconf gives."""
    from omegaconf import OmegaConf

    from pinbench.artifacts.hyperparameters import plain
    from pinbench.artifacts.model_formats import identify
    from pinbench.authoring.state_dict_model import checkpoint_key

    checkpoint = package_file("pesto-pitch", CHECKPOINT)
    unpickled = torch.load(str(checkpoint), map_location="cpu", weights_only=False)
    reference = unpickled["state_dict"]

    # the hyper-parameters as omegaconf itself makes them plain (issue 86, item 4)
    def as_omegaconf_gives(value: Any) -> Any:
        if OmegaConf.is_config(value):
            configs.append(type(value).__name__)
            return OmegaConf.to_container(value, resolve=False)
        if isinstance(value, dict):
            return {k: as_omegaconf_gives(v) for k, v in value.items()}
        return value

    configs: list[str] = []
    hparams = as_omegaconf_gives(unpickled["hparams"])
    assert configs  # omegaconf's containers are there
    _forget("omegaconf")
    monkeypatch.setitem(sys.modules, "omegaconf", None)  # importing it raises ImportError
    loaded = read_checkpoint("mir-1k_g7.ckpt", checkpoint)
    assert isinstance(loaded, dict) and loaded["epoch"] == unpickled["epoch"]
    assert loaded["hparams"]["reduction"] == "alwa"
    # omegaconf's containers and nodes, read from their pickled state, are what omegaconf gives
    assert plain(loaded["hparams"], torch.is_tensor) == hparams
    assert hparams["encoder"]["n_chan_layers"] == [40, 30, 30, 10, 3]
    state = read_state("mir-1k_g7.ckpt", checkpoint, "state_dict")
    assert set(state) == set(reference)
    assert all(torch.equal(state[k], reference[k]) for k in reference)
    # publish and manifest model name it as what it is: a state dict's checkpoint
    found = identify(checkpoint, "mir-1k_g7.ckpt")
    assert found is not None and found.format == "torch-state-dict"
    assert checkpoint_key(checkpoint) == "state_dict"


def test_a_checkpoint_beside_omegaconf_data_that_would_run_code_is_refused(
    tmp_path: Path,
) -> None:
    """Plain data beside the tensors is read inert; a global that is not plain data (a function
    a pickle would call) is refused by name, and nothing runs."""
    from omegaconf import OmegaConf

    mark = tmp_path / "ran.txt"
    state = {"fc.weight": torch.ones(2, 2)}
    hparams = OmegaConf.create({"encoder": {"layers": [1, 2]}})
    path = tmp_path / "bad.ckpt"
    torch.save({"state_dict": state, "hparams": hparams, "hook": Runs(mark)}, str(path))
    with pytest.raises(ModelLoadError) as caught:
        read_state("bad.ckpt", path, "state_dict")
    # the hook's Path.write_text is pickled as getattr(Path, "write_text"): refused by name
    assert "would import and call builtins.getattr" in str(caught.value)
    assert not mark.exists()
    path.unlink()
    torch.save({"state_dict": state, "hparams": hparams}, str(path))
    assert torch.equal(read_state("bad.ckpt", path, "state_dict")["fc.weight"], torch.ones(2, 2))
