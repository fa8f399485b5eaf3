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


def _built(name: str, files: list[Path], inputs: Any, outputs: Any) -> dict[str, Any]:
    """A ``torch-state-dict`` manifest of ``files`` (the weights, then ``net.py``'s builder)."""
    return {
        "kind": "model",
        "name": name,
        "version": "1.0.0",
        "format": "torch-state-dict",
        "framework": {"name": "torch", "range": ">=2 <3"},
        "builder": {"file": "net.py", "function": "build"},
        "files": [
            {"path": p.name, "sha256": sha(p.read_bytes()), "size": p.stat().st_size} for p in files
        ],
        "inputs": inputs,
        "outputs": outputs,
    }


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
    refused = cli("publish", "model.yaml")  # as written: no outputs (issue 83, item 3e)
    assert refused.code == 1 and "declares no outputs" in refused.err, refused.err
    dump(Path("model.yaml"), manifest | {"outputs": [{"name": "y"}]})
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
        ("an object in the checkpoint", "would import and call datetime.timedelta"),
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


# ------------------------------------------- a pickle's refusal names its globals and routes

CHEMPROP_GLOBALS = ("chemprop.nn.metrics.MSE", "chemprop.nn.transforms.UnscaleTransform")
"""What a chemprop Lightning checkpoint's hyper-parameters hold beside its weights (objects of
the package's classes), as the checkpoint made here names them."""


def _chemprop_checkpoint(path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Lightning checkpoint as chemprop saves one: its weights beside hyper-parameters that
    are objects of chemprop's classes (stand-in modules of that name: chemprop is not needed)."""
    import types

    made = {}
    for dotted in CHEMPROP_GLOBALS:
        module, _, name = dotted.rpartition(".")
        parts = module.split(".")
        for i in range(1, len(parts) + 1):
            prefix = ".".join(parts[:i])
            if prefix not in made:
                made[prefix] = types.ModuleType(prefix)
                monkeypatch.setitem(__import__("sys").modules, prefix, made[prefix])
        cls = type(name, (), {"__module__": module})
        setattr(made[module], name, cls)
    metrics, transforms = (
        getattr(made[d.rpartition(".")[0]], d.rpartition(".")[2]) for d in CHEMPROP_GLOBALS
    )
    torch.save(
        {
            "epoch": 3,
            "state_dict": {f"fc.{k}": v for k, v in _weights().items()},
            "hyper_parameters": {"metrics": [metrics(), metrics()], "transform": transforms()},
        },
        path,
    )
    return path


def _refusals(tmp_path: Path, checkpoint: Path) -> dict[str, str]:
    """Each place a pickled object is refused to an author, and what it says."""
    from pinbench.authoring.model import model_manifest
    from pinbench.errors import PinbenchError
    from pinbench.registry.declared_format import DeclaredFormatMismatch, check_declared_format
    from pinbench.registry.manifest import ModelManifest, parse_manifest

    said: dict[str, str] = {}
    try:
        model_manifest([checkpoint], base=tmp_path)
    except PinbenchError as exc:
        said["manifest model"] = str(exc)
    (tmp_path / "net.py").write_text(BUILDER)
    doc = _built(
        "trial/chemprop",
        [checkpoint, tmp_path / "net.py"],
        inputs=[{"name": "x", "element_type": "float32"}],
        outputs=[{"name": "y"}],
    )
    manifest = parse_manifest(doc)
    assert isinstance(manifest, ModelManifest)
    try:
        check_declared_format(manifest, lambda f: tmp_path / f.path)
    except DeclaredFormatMismatch as exc:
        said["publish, declared torch-state-dict"] = str(exc)
    return said


@pytest.mark.parametrize(
    "said",
    [
        *CHEMPROP_GLOBALS,  # every global it would load, not only the first
        "nothing was run",
        "torch.save(checkpoint['state_dict'], 'weights.pt')",  # the builder route
        "pinbench manifest model weights.pt builder.py (format: torch-state-dict",
        "--allow-pickle",  # the trusted route
        "name the file .pt, .pth, .pt.tar or .pth.tar",  # not where a torch-pickle run looks
    ],
)
def test_a_pickles_refusal_names_its_globals_and_the_routes_everywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, said: str
) -> None:
    """A chemprop Lightning checkpoint (issue 83, item 3a): each refusal names the globals
    unpickling it would load (read from its opcodes) and the routes that publish it, never
    "not described"."""
    checkpoint = _chemprop_checkpoint(tmp_path / "model.ckpt", monkeypatch)
    refusals = _refusals(tmp_path, checkpoint)
    assert set(refusals) == {"manifest model", "publish, declared torch-state-dict"}
    for where, text in refusals.items():
        assert said in text, (where, text)
        assert "not describe" not in text, where


@pytest.mark.parametrize(
    "name",
    [
        "checkpoint.pth.tar",  # the ImageNet example's name for torch.save's output
        "model.pt.tar",
        "last.ckpt.tar",
    ],
)
def test_a_state_dict_under_a_compound_suffix_is_taken(tmp_path: Path, name: str) -> None:
    """A state dict saved as ``.pth.tar`` (issue 83, item 3b) is what its bytes are: its
    manifest is written, publish's format check takes it, and the run finds it as the weights."""
    from pinbench.authoring.model import model_manifest
    from pinbench.registry.declared_format import check_declared_format
    from pinbench.registry.manifest import ModelManifest, parse_manifest
    from pinbench.worker.predictors.config import ModelFiles
    from pinbench.worker.predictors.torch.predictor import _SUFFIXES
    from pinbench.worker.predictors.torch.state_dicts import read_state

    weights = tmp_path / name
    torch.save({f"fc.{k}": v for k, v in _weights().items()}, weights)
    (tmp_path / "net.py").write_text(BUILDER)
    authored = model_manifest([weights, tmp_path / "net.py"], base=tmp_path)
    manifest = parse_manifest(authored.data | {"outputs": [{"name": "y"}]})
    assert isinstance(manifest, ModelManifest) and manifest.format == "torch-state-dict"
    check_declared_format(manifest, lambda f: tmp_path / f.path)
    files = ModelFiles(files={f.path: tmp_path / f.path for f in manifest.files}, format="x")
    found, blob = files.single(_SUFFIXES["torch-state-dict"])
    assert found == name and set(read_state(found, blob, None)) == {"fc.weight", "fc.bias"}


NET = """
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(x)
"""

MODULE_CASES = [
    # (case, the builder, the other files in its folder, the .py files listed beside it)
    (
        "a package's models.py it imports",
        "from models import Net\n\n\ndef build(files):\n    return Net()\n",
        {"models.py": NET, "unused.py": "X = 1\n"},
        {"models.py"},
    ),
    (
        "a package's module and its __init__, one importing the next",
        "from pkg.models import Net\n\n\ndef build(files):\n    return Net()\n",
        {
            "pkg/__init__.py": "",
            "pkg/models.py": "from .layers import Block\n" + NET,
            "pkg/layers.py": "import torch\nBlock = torch.nn.Identity\n",
        },
        {"pkg/__init__.py", "pkg/models.py", "pkg/layers.py"},
    ),
    (
        "a module it executes from its path (docs/processing.md's builder)",
        "def build(files):\n    ns = {}\n    exec(files['vendor/model.py'].read_bytes(), ns)\n"
        "    return ns['Net']()\n",
        {"vendor/model.py": NET},
        {"vendor/model.py"},
    ),
]


@pytest.mark.parametrize(
    ("case", "builder", "others", "listed"), MODULE_CASES, ids=[c[0] for c in MODULE_CASES]
)
@pytest.mark.parametrize("given", ["the builder alone", "with its modules listed by hand"])
def test_manifest_model_lists_the_local_modules_its_builder_imports(
    tmp_path: Path, case: str, builder: str, others: dict[str, str], listed: set[str], given: str
) -> None:
    """``manifest model weights.pt net.py`` (issue 83, item 3c): the modules the builder needs
    beside it are found by reading its source, never running it, and listed with their sha256;
    given by hand as well, they are taken as its modules, not as other builders."""
    from pinbench.authoring.model import model_manifest

    weights = _state(tmp_path, {f"fc.{k}": v for k, v in _weights().items()})
    (tmp_path / "net.py").write_text(builder)
    for name, text in others.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    extra = [tmp_path / n for n in sorted(listed)] if given != "the builder alone" else []
    authored = model_manifest([weights, tmp_path / "net.py", *extra], base=tmp_path)
    files = {f["path"]: f["sha256"] for f in authored.data["files"]}
    assert set(files) == {"net.pt", "net.py", *listed}, case
    assert all(files[n] == sha((tmp_path / n).read_bytes()) for n in listed)
    assert authored.data["builder"]["file"] == "net.py"
    if "execute" not in case:  # the class its function returns, read from the module
        assert authored.data["inputs"] == [{"name": "x", "element_type": "float32"}]
    said = [n for n in authored.notes if "local modules are listed among the files" in n]
    assert len(said) == 1 and all(n in said[0] for n in listed), authored.notes


@pytest.mark.parametrize(
    ("inputs", "outputs", "missing"),
    [
        ([], [{"name": "y"}], "inputs"),
        ([{"name": "x", "element_type": "float32"}], [], "outputs"),
        ([], [], "inputs"),  # what publish once accepted
    ],
    ids=["no inputs", "no outputs", "neither"],
)
def test_a_state_dict_model_without_inputs_or_outputs_is_refused_at_publish(
    ws: Any, tmp_path: Path, inputs: list[Any], outputs: list[Any], missing: str
) -> None:
    """Issue 83, item 3e: a torch-state-dict model's signature is its manifest's alone (its
    files are weights and code), so one that declares no input or no output is refused, naming
    what to declare, and nothing is stored."""
    from pinbench.registry.formats import UndeclaredSignature
    from pinbench.registry.manifest import parse_manifest
    from pinbench.registry.publish import publish

    weights = _state(tmp_path, {f"fc.{k}": v for k, v in _weights().items()})
    doc = _built("trial/no-signature", [weights, tmp_path / "net.py"], inputs, outputs)
    with pytest.raises(UndeclaredSignature) as refused:
        publish(ws, parse_manifest(doc), manifest_dir=tmp_path, publisher="test")
    assert refused.value.missing == missing and refused.value.path == "net.py"
    assert f"declares no {missing}: list the inputs forward takes" in str(refused.value)
    assert not list(ws.store.iter_digests())


@pytest.mark.parametrize(
    ("case", "builder", "module", "said"),
    [
        # deeper than Python's parser goes: RecursionError, once a traceback
        ("a builder nested too deeply", "x = 1" + "+1" * 200_000 + "\n", None, "not Python source"),
        # a module nested too deeply is not followed; the builder is still read
        ("a module nested too deeply", "import deep\n" + BUILDER, "x = 1" + "+1" * 200_000, None),
        # a module of 9 MiB is refused, never read whole
        ("a module over 8 MiB", "import huge\n" + BUILDER, "#" * (9 << 20), "over 8 MiB of source"),
    ],
)
def test_a_hostile_builder_or_module_is_refused_in_one_line(
    tmp_path: Path, case: str, builder: str, module: str | None, said: str | None
) -> None:
    from pinbench.authoring.model import model_manifest
    from pinbench.errors import PinbenchError

    weights = _state(tmp_path, {f"fc.{k}": v for k, v in _weights().items()})
    (tmp_path / "net.py").write_text(builder)
    if module is not None:
        name = "deep" if "deep" in builder else "huge"
        (tmp_path / f"{name}.py").write_text(module)
    if said is None:
        model_manifest([weights, tmp_path / "net.py"], base=tmp_path)
        return
    with pytest.raises(PinbenchError, match=said):
        model_manifest([weights, tmp_path / "net.py"], base=tmp_path)
