"""Every place a pickle is refused gives the same routes (issue 83, item 3a): ``manifest model``,
publish (a pickle declared as another format, a pickle beside safetensors weights), a run (a
``torch-state-dict`` checkpoint holding an object, a ``torch-pickle`` model without
``--allow-pickle``, one not ``trusted``) and a server that refuses pickles all end with
``model_formats.pickle_routes``; those that have the file name every global it would load.
A ``torch-pickle`` file is found under ``.pt.tar``/``.pth.tar`` too (item 3b), by one list."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
import torch

from pinbench.artifacts.model_formats import (
    PICKLE_SUFFIXES,
    identify,
    pickle_refusal,
    pickle_routes,
)
from pinbench.errors import PinbenchError
from tests.helpers import sha

OBJECT_GLOBAL = "datetime.timedelta"
"""What the checkpoint below holds beside its weights: an object no state dict names."""


def _weights() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    return {f"fc.{k}": v for k, v in torch.nn.Linear(4, 3).state_dict().items()}


def _checkpoint(folder: Path) -> Path:
    path = folder / "model.pt"
    torch.save({"state_dict": _weights(), "every": datetime.timedelta(days=1)}, path)
    return path


def _said(make: Callable[[], object]) -> str:
    try:
        make()
    except PinbenchError as exc:
        return str(exc)
    raise AssertionError("not refused")


def _model(fmt: str, folder: Path, paths: list[Path], **extra: Any) -> Any:
    from pinbench.registry.manifest import parse_manifest

    doc = {
        "kind": "model",
        "name": "trial/pickled",
        "version": "1.0.0",
        "format": fmt,
        "framework": {"name": "torch", "range": ">=2 <3"},
        "files": [{"path": p.name, "sha256": sha(p.read_bytes())} for p in paths],
        "inputs": [{"name": "x", "element_type": "float32"}],
        "outputs": [{"name": "y"}],
        **extra,
    }
    return parse_manifest(doc)


def _manifest_model(folder: Path) -> str:
    from pinbench.authoring.model import model_manifest

    return _said(lambda: model_manifest([_checkpoint(folder)], base=folder))


def _declared_state_dict(folder: Path) -> str:
    from pinbench.registry.declared_format import check_declared_format

    (folder / "net.py").write_text("def build(files):\n    return None\n")
    builder = {"file": "net.py", "function": "build"}
    model = _model(
        "torch-state-dict", folder, [_checkpoint(folder), folder / "net.py"], builder=builder
    )
    return _said(lambda: check_declared_format(model, lambda f: folder / f.path))


def _beside_safetensors(folder: Path) -> str:
    from safetensors.torch import save_file

    from pinbench.registry.formats import check_model_files

    save_file(_weights(), str(folder / "w.safetensors"))
    paths = [folder / "w.safetensors", _checkpoint(folder)]
    model = _model("safetensors", folder, paths, architecture="resnet50")
    return _said(lambda: check_model_files(model, lambda f: folder / f.path))


def _run_checkpoint(folder: Path) -> str:
    from pinbench.worker.predictors.torch.state_dicts import read_checkpoint

    return _said(lambda: read_checkpoint("model.pt", _checkpoint(folder)))


def _lock() -> Any:
    """What the run's pickle policy reads of a lockfile: a trusted torch-pickle model."""
    model = SimpleNamespace(name="trial/pickled", version="1.0.0", format="torch-pickle")
    model.trusted = True
    return cast(Any, SimpleNamespace(body=SimpleNamespace(model=model, chain=None)))


def _run_without_allow_pickle(folder: Path) -> str:
    from pinbench.evaluator.policy import check_pickle

    return _said(lambda: check_pickle(_lock(), allow=False))


def _server(folder: Path) -> str:
    from pinbench.evaluator.policy import check_server_pickle

    return _said(lambda: check_server_pickle(_lock(), server_allows=False))


def _run_untrusted(folder: Path) -> str:
    from pinbench.worker.predictors.config import ModelFiles, PredictorOptions
    from pinbench.worker.predictors.torch import TorchPredictor

    path = _checkpoint(folder)
    model = ModelFiles({"model.pt": path}, "torch-pickle", trusted=False)
    return _said(lambda: TorchPredictor().open(model, PredictorOptions()))


PLACES: list[tuple[str, Callable[[Path], str], bool]] = [
    # (where a pickle is refused, what it says, whether it had the file to name its globals)
    ("manifest model of a checkpoint holding an object", _manifest_model, True),
    ("publish of it declared torch-state-dict", _declared_state_dict, True),
    ("publish of it beside safetensors weights", _beside_safetensors, True),
    ("a torch-state-dict run reading it", _run_checkpoint, True),
    ("a run of a trusted torch-pickle without --allow-pickle", _run_without_allow_pickle, False),
    ("a server that never executes pickles", _server, False),
    ("a run of a torch-pickle model not trusted", _run_untrusted, False),
]


@pytest.mark.parametrize(("where", "refuse", "has_file"), PLACES, ids=[p[0] for p in PLACES])
def test_every_refusal_of_a_pickle_gives_the_same_routes(
    tmp_path: Path, where: str, refuse: Callable[[Path], str], has_file: bool
) -> None:
    said = refuse(tmp_path)
    assert pickle_routes() in said, (where, said)
    if has_file:  # read from its opcodes, nothing unpickled
        assert f"would import and call {OBJECT_GLOBAL}" in said, (where, said)


@pytest.mark.parametrize(
    ("name", "renamed"),
    [
        ("checkpoint.pth.tar", False),  # the ImageNet example's name for torch.save's output
        ("model.pt.tar", False),
        ("model.PTH", False),
        ("model.ckpt", True),  # a Lightning name: not where a torch-pickle run looks
        ("model.tar", True),
    ],
)
def test_a_pickles_name_is_one_of_the_one_list(name: str, renamed: bool, tmp_path: Path) -> None:
    found = identify(_checkpoint(tmp_path))
    assert found is not None and found.format == "torch-pickle"
    said = pickle_refusal(found, name)
    assert ("name the file" in said) == renamed, said
    assert not renamed or "name the file .pt, .pth, .pt.tar or .pth.tar" in said


class Doubler(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2


@pytest.mark.parametrize("name", ["checkpoint.pth.tar", "model.pt.tar"])
def test_a_torch_pickle_under_a_compound_suffix_publishes_and_runs(
    tmp_path: Path, name: str
) -> None:
    """Issue 83, item 3b: a trusted ``torch-pickle`` saved as ``.pth.tar`` is checked at
    publish as the file its run loads, and the run finds and loads it."""
    import numpy as np

    from pinbench.registry.declared_format import LOADS, check_declared_format
    from pinbench.worker.predictors.config import ModelFiles, PredictorOptions
    from pinbench.worker.predictors.torch import TorchPredictor
    from pinbench.worker.predictors.torch.predictor import _SUFFIXES

    assert LOADS["torch-pickle"][0] == _SUFFIXES["torch-pickle"] == PICKLE_SUFFIXES  # one list
    path = tmp_path / name
    torch.save(Doubler(), path)
    model = _model("torch-pickle", tmp_path, [path], trusted=True)
    check_declared_format(model, lambda f: tmp_path / f.path)
    predictor = TorchPredictor()
    predictor.open(ModelFiles({name: path}, "torch-pickle", trusted=True), PredictorOptions())
    out = predictor.predict(np.ones((1, 4), np.float32))
    assert np.array_equal(next(iter(out.values())), np.full((1, 4), 2, np.float32))


def _hostile(*ops: bytes) -> bytes:
    """A protocol-4 pickle of ``ops`` (never unpickled: only its opcodes are walked)."""
    return b"\x80\x04" + b"".join(ops) + b"."


def _short(text: str) -> bytes:
    raw = text.encode()
    return b"\x8c" + bytes([len(raw)]) + raw  # SHORT_BINUNICODE


@pytest.mark.parametrize(
    ("case", "data", "globals_"),
    [
        (  # two 1 KiB strings named by 20,000 STACK_GLOBALs: one name, not 20,000 of 2 KiB
            "long names again and again",
            _hostile(
                *(b"\x8d" + (1024).to_bytes(8, "little") + b"m" * 1024 for _ in range(2)),
                b"\x93" * 20_000,
            ),
            ["(long name).global"],
        ),
        (  # 1,500 distinct globals: the first 1,000 kept, then one that says there are more
            "more globals than kept",
            _hostile(*(_short("m") + _short(f"g{i}") + b"\x93" for i in range(1_500))),
            [f"m.g{i}" for i in range(1_000)] + ["(more).global"],
        ),
    ],
)
def test_a_hostile_pickles_globals_are_read_within_bounds(
    tmp_path: Path, case: str, data: bytes, globals_: list[str]
) -> None:
    """Reading what a pickle would load costs bounded memory and time whatever its opcodes
    (a crafted one took 41 MB for 22 KB, and would have taken gigabytes for 16 MiB)."""
    path = tmp_path / "model.pt"
    path.write_bytes(data)
    found = identify(path)
    assert found is not None and found.format == "torch-pickle"
    assert list(found.globals) == globals_


def test_a_pickle_read_past_its_opcode_budget_is_never_taken_as_weights(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pinbench.artifacts import model_formats

    monkeypatch.setattr(model_formats, "MAX_OPCODES", 50)
    path = tmp_path / "model.pt"
    path.write_bytes(_hostile(*(b"K\x01" for _ in range(200))))  # BININT1: plain data
    found = identify(path)
    assert found is not None and found.format == "torch-pickle"
    assert list(found.globals) == ["(not read past 50 opcodes).global"]
