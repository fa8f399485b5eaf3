"""``pinbench manifest model weights.pt builder.py`` writes a state dict's manifest (issue 73,
item 6): the files hashed, ``format: torch-state-dict``, the builder's function, a checkpoint's
``state_dict_key``, the inputs ``forward`` takes; it publishes and runs as written. The weights
are read with ``torch.load(weights_only=True)`` and the builder parsed, never run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import yaml

from pinbench.catalog import frameworks
from tests.helpers import Cli, dump, sha

BUILDER = """
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x, scale=1.0):
        return self.fc(x) * scale


def build(files):
    return Net()
"""


def _weights() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    return dict(torch.nn.Linear(4, 3).state_dict())


def _state(tmp_path: Path, saved: Any) -> Path:
    path = tmp_path / "net.pt"
    torch.save(saved, path)
    (tmp_path / "net.py").write_text(BUILDER)
    return path


@pytest.mark.parametrize(
    ("saved", "key"),
    [
        ({f"fc.{k}": v for k, v in _weights().items()}, None),
        ({"epoch": 3, "model_state": {f"fc.{k}": v for k, v in _weights().items()}}, "model_state"),
        (  # two dicts of tensors: the field's name for the weights
            {"model": {f"fc.{k}": v for k, v in _weights().items()}, "ema": {"a": torch.ones(1)}},
            "model",
        ),
    ],
    ids=["a state dict", "a checkpoint", "a checkpoint with an EMA copy"],
)
def test_a_state_dicts_manifest_is_written_and_runs(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, saved: Any, key: str | None
) -> None:
    monkeypatch.chdir(tmp_path)
    weights = _state(tmp_path, saved)
    made = cli("manifest", "model", str(weights), "net.py", "-o", "model.yaml")
    assert made.code == 0, made.err
    manifest = yaml.safe_load(Path("model.yaml").read_text())
    assert manifest["format"] == "torch-state-dict"
    assert manifest["builder"] == {"file": "net.py", "function": "build"} | (
        {"state_dict_key": key} if key else {}
    )
    assert {f["path"]: f["sha256"] for f in manifest["files"]} == {
        "net.pt": sha(weights.read_bytes()),
        "net.py": sha(Path("net.py").read_bytes()),
    }
    assert manifest["inputs"] == [{"name": "x", "element_type": "float32"}]  # scale has a default
    assert "declare the outputs" in made.err
    # publishes and runs as written
    np.save("x.npy", np.random.default_rng(0).normal(size=(16, 4)).astype(np.float32))
    assert cli("init").code == 0
    assert cli("publish", str(frameworks.write(tmp_path, "torch"))).code == 0
    assert cli("manifest", "dataset", "x.npy", "--name", "test/x", "-o", "x.yaml").code == 0
    assert cli("publish", "x.yaml").code == 0
    published = cli("publish", "model.yaml")
    assert published.code == 0, published.err
    request = {
        "model": f"{manifest['name']}@1",
        "dataset": "test/x@1",
        "scenario": {"min_duration_ms": 0, "min_query_count": 16},
    }
    assert cli("lock", str(dump(Path("r.yaml"), request)), "-o", "r.lock").code == 0
    ran = cli("run", "r.lock", "--runner", "local", "--allow-code", "--json")
    assert ran.code == 0, ran.err
    shown = json.loads(ran.out)
    assert shown["status"] == "succeeded"
    # TEST01 needs an accuracy run to answer as; a dataset without labels has none: said
    test01 = shown["details"]["audits"]["TEST01"]
    assert test01["passed"] is None and "the dataset has no labels" in test01["reason"]
    assert "audit_test01_passed_bool" not in shown


@pytest.mark.parametrize(
    ("case", "said"),
    [
        ("no builder", "give one of each (found 1 state dicts, 0 .py files)"),
        ("an object in the checkpoint", "this is a pickle"),  # a global no state dict names
        ("two functions, none build", "name it `build`"),
    ],
)
def test_what_cannot_be_written_is_refused_naming_why(
    cli: Cli, tmp_path: Path, case: str, said: str
) -> None:
    saved: Any = {f"fc.{k}": v for k, v in _weights().items()}
    if case == "an object in the checkpoint":
        import datetime

        saved = {"state_dict": saved, "trained": datetime.timedelta(hours=1)}
    weights = _state(tmp_path, saved)
    args = [str(weights)] if case == "no builder" else [str(weights), str(tmp_path / "net.py")]
    if case == "two functions, none build":
        (tmp_path / "net.py").write_text("def make(files):\n    pass\n\n\ndef other():\n    pass\n")
    made = cli("manifest", "model", *args, "-o", str(tmp_path / "m.yaml"))
    assert made.code == 1 and said in made.err and "Traceback" not in made.err
    assert not (tmp_path / "m.yaml").exists()
