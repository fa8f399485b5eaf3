"""A checkpoint's hyper-parameters handed to its builder as plain data (issue 86, item 4).

A ``torch-state-dict`` model's builder may name the checkpoint's key of the hyper-parameters
its module is made from (``builder.hyperparameters_key``); it is then called as
``build(files, hyperparameters)``, the value read as plain data (``artifacts.hyperparameters``).
The checkpoint here is Lightning's own, made as chemprop makes its models': a network that
saves its own hyper-parameters (Lightning's ``HyperparametersMixin``: an ``AttributeDict``), in
a ``LightningModule`` that saves its own and adds the network's under a key (chemprop's
``MPNN`` adds its message passing's, aggregation's and predictor's), trained for a few steps
by Lightning's ``Trainer`` and written by ``Trainer.save_checkpoint``. The reference is that
module's own forward on the same inputs. Anything in the hyper-parameters that is not plain
data is refused, naming it.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from pinbench.registry.processing_code import Builder
from pinbench.worker.predictors.base import ModelLoadError
from pinbench.worker.predictors.torch.state_dicts import _with_hyperparameters
from pinbench.workspace import Workspace
from tests.test_torch_state_dict import TOLERANCE, _publish_dataset, _publish_torch, _run

BUILDER = '''\
"""The network of the test's LightningModule, made from the checkpoint's hyper-parameters."""
from torch import nn

ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU}


class Net(nn.Module):
    def __init__(self, features, width, depth, activation, classes):
        super().__init__()
        layers, size = [], features
        for _ in range(depth):
            layers += [nn.Linear(size, width), ACTIVATIONS[activation]()]
            size = width
        self.net = nn.Sequential(*layers, nn.Linear(size, classes))

    def forward(self, x):
        return self.net(x)


def build(files, hparams):
    return Net(**hparams["network"])
'''
FEATURES, CLASSES = 6, 3
HPARAMS = {"features": FEATURES, "width": 16, "depth": 2, "activation": "tanh", "classes": CLASSES}


def _trained(folder: Path) -> tuple[Path, Any]:
    """A LightningModule trained for five steps by Lightning's Trainer, its checkpoint written
    by ``Trainer.save_checkpoint``; the checkpoint and the module."""
    import lightning as L
    from lightning.pytorch.core.mixins.hparams_mixin import HyperparametersMixin
    from torch import nn

    namespace: dict[str, Any] = {}
    exec(compile(BUILDER, "builder.py", "exec"), namespace)

    net: Any = namespace["Net"]

    class Network(net, HyperparametersMixin):  # type: ignore[misc]
        def __init__(self, **hparams: Any) -> None:
            super().__init__(**hparams)
            self.save_hyperparameters()

    class Classifier(L.LightningModule):
        def __init__(self, network: Any, lr: float) -> None:
            super().__init__()
            self.save_hyperparameters(ignore=["network"])
            self.hparams.update({"network": network.hparams})  # as chemprop's MPNN does
            self.net = network.net

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            out: torch.Tensor = self.net(x)
            return out

        def training_step(self, batch: Any, _: int) -> torch.Tensor:
            x, y = batch
            loss: torch.Tensor = nn.functional.cross_entropy(self(x), y)
            return loss

        def configure_optimizers(self) -> torch.optim.Optimizer:
            return torch.optim.SGD(self.parameters(), lr=self.hparams["lr"])

    L.seed_everything(86, verbose=False)
    model = Classifier(Network(**HPARAMS), lr=0.1)
    x = torch.randn(64, FEATURES)
    y = torch.randint(0, CLASSES, (64,))
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=16)
    trainer = L.Trainer(
        max_steps=5,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=str(folder),
    )
    trainer.fit(model, data)
    path = folder / "classifier.ckpt"
    trainer.save_checkpoint(str(path))
    return path, model.eval()


def test_a_lightning_checkpoints_hyperparameters_make_its_module_equal_to_lightnings(
    ws: Workspace, tmp_path: Path
) -> None:
    checkpoint, module = _trained(tmp_path / "train")
    # Lightning wrote its own AttributeDict, which PyTorch's restricted unpickler refuses
    named = torch.serialization.get_unsafe_globals_in_checkpoint(str(checkpoint))
    assert any(n.endswith("AttributeDict") for n in named), named
    rng = np.random.default_rng(86)
    x = rng.standard_normal((24, FEATURES)).astype(np.float32)
    with torch.inference_mode():
        theirs = module(torch.from_numpy(x)).numpy()
    _publish_torch(ws, tmp_path / "framework")
    (tmp_path / "data").mkdir()
    _publish_dataset(ws, tmp_path / "data", x, theirs.argmax(axis=1), classes=CLASSES)
    ours = _run(
        ws,
        tmp_path / "model",
        {
            "name": "tabular/lightning-classifier",
            "license": "MIT",
            "inputs": [{"name": "x", "element_type": "float32", "shape": [FEATURES]}],
            "outputs": [{"name": "logits", "type": "classification"}],
            "builder": {
                "file": "builder.py",
                "function": "build",
                "state_dict_key": "state_dict",
                "hyperparameters_key": "hyper_parameters",
            },
        },
        {"classifier.ckpt": checkpoint.read_bytes(), "builder.py": BUILDER.encode()},
    )
    assert ours.shape == theirs.shape
    assert float(np.max(np.abs(ours - theirs))) <= TOLERANCE


def _checkpoint(tmp_path: Path, hyper: Any) -> Path:
    path = tmp_path / "model.ckpt"
    torch.save({"state_dict": {"w": torch.zeros(2)}, "hyper_parameters": hyper}, str(path))
    return path


BUILDER_KEYS = Builder(
    file="b.py",
    function="build",
    state_dict_key="state_dict",
    hyperparameters_key="hyper_parameters",
)


def test_plain_hyperparameters_are_handed_as_they_are_and_a_namespace_as_a_dict(
    tmp_path: Path,
) -> None:
    hyper = {
        "width": 3,
        "rate": 0.5,
        "name": "x",
        "flags": [True, None, (1, 2)],
        "nested": argparse.Namespace(depth=2, sizes=[4, 5]),
        "table": torch.arange(3),
    }
    state, given = _with_hyperparameters("model.ckpt", _checkpoint(tmp_path, hyper), BUILDER_KEYS)
    assert set(state) == {"w"}
    table = given.pop("table")
    assert torch.equal(table, torch.arange(3))
    assert given == {
        "width": 3,
        "rate": 0.5,
        "name": "x",
        "flags": [True, None, (1, 2)],
        "nested": {"depth": 2, "sizes": [4, 5]},
    }


@pytest.mark.parametrize(
    ("hyper", "said"),
    [
        # a class a pickle names (chemprop keeps its modules' classes as `cls`): PyTorch's
        # restricted unpickler refuses it by name, before any builder runs
        ({"cls": torch.nn.Linear}, "torch.nn.modules.linear.Linear"),
        # an object of a class: the same
        ({"criterion": torch.nn.MSELoss()}, "torch.nn.modules.loss.MSELoss"),
        # data PyTorch reads, but not plain data
        ({"seen": {1, 2}}, "hyper_parameters['seen'] is a builtins.set"),
        ({"when": {(1, 2): 3}}, "a mapping with a key of type tuple"),
    ],
)
def test_hyperparameters_that_are_not_plain_data_are_refused_naming_them(
    tmp_path: Path, hyper: dict[str, Any], said: str
) -> None:
    with pytest.raises(ModelLoadError, match=said.replace("[", r"\[").replace("(", r"\(")):
        _with_hyperparameters("model.ckpt", _checkpoint(tmp_path, hyper), BUILDER_KEYS)


def test_a_missing_hyperparameters_key_is_refused_naming_the_keys(tmp_path: Path) -> None:
    path = tmp_path / "model.ckpt"
    torch.save({"state_dict": {"w": torch.zeros(2)}, "hparams": {}}, str(path))
    with pytest.raises(ModelLoadError, match=r"no key 'hyper_parameters' .* its keys: "):
        _with_hyperparameters("model.ckpt", path, BUILDER_KEYS)


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"hyperparameters_key": "hp"}, "needs state_dict_key"),
        ({"hyperparameters_key": "k", "state_dict_key": "k"}, "name the same key"),
        ({"hyperparameters_key": "", "state_dict_key": "k"}, "1 to 256 printable"),
    ],
)
def test_a_builders_hyperparameters_key_is_checked_where_it_is_declared(
    fields: dict[str, str], said: str
) -> None:
    with pytest.raises(ValueError, match=said):
        Builder(file="b.py", function="build", **fields)


def test_a_builder_that_names_no_hyperparameters_key_digests_as_before_the_field() -> None:
    """A late field: left out of the stored data while unset, so a manifest published before
    it keeps its digest (computed at 36fe694, before ``hyperparameters_key`` existed)."""
    from pinbench.registry.manifest import manifest_digest, parse_manifest

    doc = {
        "kind": "model",
        "name": "x/y",
        "version": "1.0.0",
        "format": "torch-state-dict",
        "framework": {"name": "torch", "range": ">=2 <3"},
        "builder": {"file": "net.py", "function": "build", "state_dict_key": "sd"},
        "files": [{"path": "w.pt", "sha256": "0" * 64}, {"path": "net.py", "sha256": "1" * 64}],
        "inputs": [{"name": "x", "shape": [3]}],
        "outputs": [{"name": "y"}],
    }
    before = "45ecd399ecb02d044d4827fb3fb54e2118b0ba456822949854b56e6da47a2116"
    assert str(manifest_digest(parse_manifest(doc))) == before


def test_a_tensor_is_handed_without_what_unpickling_set_on_it() -> None:
    """A tensor's Python attributes come back from its pickle too: the builder gets its data
    alone, never an object a stand-in read."""
    from pinbench.artifacts.hyperparameters import plain

    tensor = torch.arange(3)
    tensor.extra = argparse.Namespace(a=1)  # type: ignore[attr-defined]
    given = plain({"t": tensor}, torch.is_tensor)["t"]
    assert torch.equal(given, torch.arange(3)) and not hasattr(given, "extra")
