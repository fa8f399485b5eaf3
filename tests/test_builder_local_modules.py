"""A ``torch-state-dict`` builder's own modules at run time (issue 83, item 3c): what ``pinbench
manifest model`` lists beside a builder (``from models import Net``, a package with its
``__init__.py`` and relative imports) is importable while the builder runs, from the pinned
files alone (``pinbench.processing.local_modules``), and gone from ``sys.modules`` afterwards;
a module not listed, one whose name another module answers for, and one that is not source are
refused naming it."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from pinbench.processing.local_modules import LocalModuleRefused, builder_modules, local_modules
from pinbench.registry.processing_code import Builder
from pinbench.worker.predictors.config import ModelFiles, PredictorOptions
from pinbench.worker.predictors.torch import TorchPredictor
from pinbench.workspace import Workspace
from tests.helpers import sha
from tests.test_torch_state_dict import _publish_dataset, _publish_torch, _run

NET = """
import torch

from {layers} import Block


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)
        self.block = Block()

    def forward(self, x):
        return self.block(self.fc(x))
"""
LAYERS = "import torch\n\n\nclass Block(torch.nn.Module):\n    def forward(self, x):\n" + (
    "        return torch.tanh(x) * 2\n"
)

PACKAGES = {
    # (a builder's import, its local files): the layouts ``manifest model`` lists
    "a package's models.py": (
        "from models import Net",
        {"models.py": NET.format(layers="layers"), "layers.py": LAYERS},
    ),
    "a package folder, its __init__ and a relative import": (
        "from pkg.models import Net",
        {
            "pkg/__init__.py": "",
            "pkg/models.py": NET.format(layers=".layers"),
            "pkg/layers.py": LAYERS,
        },
    ),
}


def _builder(imports: str) -> str:
    return f"{imports}\n\n\ndef build(files):\n    return Net()\n"


def _weights() -> dict[str, torch.Tensor]:
    torch.manual_seed(83)
    return {f"fc.{k}": v for k, v in torch.nn.Linear(4, 3).state_dict().items()}


def _direct(folder: Path, imports: str, state: dict[str, torch.Tensor]) -> torch.nn.Module:
    """The module built directly: the test's own import of the author's folder."""
    sys.path.insert(0, str(folder))
    tops = ("models", "layers", "pkg")
    try:
        module = importlib.import_module(imports.split()[1])
        net = module.Net()
    finally:
        sys.path.remove(str(folder))
        for name in [n for n in sys.modules if n.partition(".")[0] in tops]:
            del sys.modules[name]
    assert isinstance(net, torch.nn.Module)
    net.load_state_dict(state)
    return net.eval()


@pytest.mark.parametrize("case", list(PACKAGES))
def test_a_builder_importing_its_own_modules_runs_equal_to_the_module_built_directly(
    ws: Workspace, tmp_path: Path, case: str
) -> None:
    """Published, locked and run in the sandbox: the recorded outputs are the module's own."""
    imports, modules = PACKAGES[case]
    _publish_torch(ws, tmp_path / "framework")
    (tmp_path / "data").mkdir()
    x = np.random.default_rng(3).normal(size=(8, 4)).astype(np.float32)
    _publish_dataset(ws, tmp_path / "data", x, np.zeros(8, dtype=np.int64), classes=3)
    buffer = tmp_path / "w.pt"
    state = _weights()
    torch.save(state, buffer)
    files = {"net.pt": buffer.read_bytes(), "net.py": _builder(imports).encode()}
    files |= {path: text.encode() for path, text in modules.items()}
    ours = _run(
        ws,
        tmp_path / "model",
        {
            "name": "test/local-modules",
            "inputs": [{"name": "x", "element_type": "float32", "shape": [4]}],
            "outputs": [{"name": "y", "type": "classification"}],
            "builder": {"file": "net.py", "function": "build"},
        },
        files,
    )
    with torch.inference_mode():
        theirs = _direct(tmp_path / "model", imports, state)(torch.from_numpy(x)).numpy()
    assert ours.shape == theirs.shape == (8, 3)
    assert float(np.max(np.abs(ours - theirs))) <= 1e-6
    assert not {n for n in sys.modules if n.partition(".")[0] in ("models", "layers", "pkg")}


def _open(
    tmp_path: Path, builder: str, others: dict[str, bytes], pinned: dict[str, str] | None = None
) -> TorchPredictor:
    """The predictor opened on ``net.py``'s builder, its weights and ``others``, each a file of
    the model (pinned by its own bytes unless ``pinned`` says otherwise)."""
    files = {"net.py": tmp_path / "net.py", "net.pt": tmp_path / "net.pt"}
    (tmp_path / "net.py").write_text(builder)
    torch.save(_weights(), tmp_path / "net.pt")
    for name, data in others.items():
        path = tmp_path / "blobs" / sha(data)  # stored by digest, as the blob store keeps them
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(data)
        files[name] = path
    digests = {p: sha(f.read_bytes()) for p, f in files.items()} | (pinned or {})
    predictor = TorchPredictor()
    model = ModelFiles(
        files,
        "torch-state-dict",
        builder=Builder(file="net.py", function="build"),
        allow_code=True,
        sha256=digests,
    )
    predictor.open(model, PredictorOptions())
    return predictor


def test_the_modules_are_gone_after_the_build(tmp_path: Path) -> None:
    """Nothing of one run's modules is left for the next: neither the finders nor a module."""
    imports, modules = PACKAGES["a package folder, its __init__ and a relative import"]
    finders = list(sys.meta_path)
    predictor = _open(tmp_path, _builder(imports), {p: t.encode() for p, t in modules.items()})
    x = np.ones((1, 4), np.float32)
    assert predictor.predict(x)["0"].shape == (1, 3)
    assert sys.meta_path == finders
    assert not [n for n in sys.modules if n == "pkg" or n.startswith("pkg.")]


MARK = "import pathlib\npathlib.Path({mark!r}).write_text('ran')\n"

REFUSED = [
    # (case, the builder's import, its files beside it, the module named, what is said)
    (
        "a module imported but not listed",
        "from net_helpers import Net",
        {"models.py": NET.format(layers="layers"), "layers.py": LAYERS},
        "net_helpers",
        "is neither among the model's files",
    ),
    (
        "a module of a local package that is not listed",
        "from pkg.helpers import Net",
        {"pkg/__init__.py": "", "pkg/models.py": NET.format(layers=".layers")},
        "pkg.helpers",
        "neither pkg/helpers.py nor pkg/helpers/__init__.py",
    ),
    (
        "a listed module shadowing Python's own",
        "from copy import Net",
        {"copy.py": NET.format(layers="layers"), "layers.py": LAYERS},
        "copy",
        "shadows Python's own module copy: rename it",
    ),
    (
        "a listed package shadowing an installed one",
        "from numpy import Net",
        {"numpy/__init__.py": NET.format(layers="layers"), "layers.py": LAYERS},
        "numpy",
        "shadows the module numpy this run has already imported",
    ),
    (
        "a local module importing a shadowing one",
        "from models import Net",
        {"models.py": NET.format(layers="json"), "json.py": LAYERS},
        "json",
        "shadows Python's own module json",
    ),
    (
        "a listed file that is not source",
        "from models import Net",
        {"models.pyc": "not source", "layers.py": LAYERS},
        "models",
        "is models.pyc among the model's files, which is not Python source",
    ),
]


@pytest.mark.parametrize(
    ("case", "imports", "files", "module", "says"), REFUSED, ids=[c[0] for c in REFUSED]
)
def test_a_module_the_builder_cannot_have_is_refused_naming_it(
    tmp_path: Path, case: str, imports: str, files: dict[str, str], module: str, says: str
) -> None:
    mark = tmp_path / "ran.txt"
    builder = MARK.format(mark=str(mark)) + _builder(imports)
    with pytest.raises(LocalModuleRefused) as refused:
        _open(tmp_path, builder, {p: t.encode() for p, t in files.items()})
    assert refused.value.module == module, case
    assert says in str(refused.value), str(refused.value)
    if "shadow" in says:  # refused from the code's imports, before any of it ran
        assert not mark.exists()
    assert not [n for n in sys.modules if n.partition(".")[0] in ("models", "pkg", "layers")]


def test_only_the_pinned_bytes_of_a_module_are_executed(tmp_path: Path) -> None:
    """A module whose file is not what the lockfile pins is refused, naming both digests."""
    imports, modules = PACKAGES["a package's models.py"]
    others = {p: t.encode() for p, t in modules.items()}
    with pytest.raises(LocalModuleRefused) as refused:
        _open(tmp_path, _builder(imports), others, pinned={"models.py": "ab" * 32})
    assert refused.value.module == "models" and "the lockfile pins abababababab" in str(
        refused.value
    )


def test_a_folder_on_pythons_path_never_answers_for_a_listed_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``models.py`` elsewhere on disk, on Python's path, is never taken for the manifest's:
    the name is refused as shadowed, naming where the other one is."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "models.py").write_text("raise SystemExit('the wrong models.py')\n")
    monkeypatch.syspath_prepend(str(elsewhere))
    imports, modules = PACKAGES["a package's models.py"]
    with pytest.raises(LocalModuleRefused) as refused:
        _open(tmp_path, _builder(imports), {p: t.encode() for p, t in modules.items()})
    assert str(elsewhere / "models.py") in str(refused.value)


@pytest.mark.parametrize(
    ("files", "builder", "sources", "others"),
    [
        (["net.py", "models.py"], "net.py", {"net", "models"}, set()),
        (["pkg/__init__.py", "pkg/m.py"], "net.py", {"pkg", "pkg.m"}, set()),
        (["src/net.py", "src/m.py", "m2.py"], "src/net.py", {"net", "m"}, set()),  # its folder
        (["my-pkg/m.py", "a.b.py", "../up.py", "x/../y.py"], "net.py", set(), set()),  # no name
        (["models.pyc", "ext.cpython-311-x86_64-linux-gnu.so"], "net.py", set(), {"models"}),
        (["README.md", "weights.pt"], "net.py", set(), set()),
    ],
)
def test_which_files_are_modules(
    files: list[str], builder: str, sources: set[str], others: set[str]
) -> None:
    """A module is a ``.py`` file under the builder's folder whose every part is a Python name;
    a file Python could import that is not source is named, never imported."""
    found, not_source = local_modules(files, builder)
    assert set(found) == sources
    assert others <= set(not_source)
    assert all(found[n].path in files for n in found)


def test_the_context_takes_its_finders_away_when_the_builder_fails(tmp_path: Path) -> None:
    code = Builder(code="import models\n", function="build")
    models = tmp_path / "models.py"
    models.write_text("raise ValueError('at import')\n")
    pinned = {"models.py": sha(models.read_bytes())}
    finders = list(sys.meta_path)
    with pytest.raises(ValueError), builder_modules(code, {"models.py": models}, pinned):
        importlib.import_module("models")
    assert sys.meta_path == finders and "models" not in sys.modules


def test_a_listed_file_shadowing_a_library_the_builder_does_not_import_leaves_it_alone(
    tmp_path: Path,
) -> None:
    """A model's files may hold a ``colorsys.py`` its builder never imports by name: a library
    that imports ``colorsys`` while the builder runs gets Python's own (it got a refusal naming
    the builder), and a local module's ``__file__`` is where its pinned bytes are."""
    models = (
        "import torch\nimport json\n\nWHERE = __file__\nDUMPED = json.dumps([1])\n\n\n"
        "class Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.fc = torch.nn.Linear(4, 3)\n\n    def forward(self, x):\n"
        "        return self.fc(x)\n"
    )
    builder = (
        "import importlib\nimport sys\n\nfrom models import Net\n\n\ndef build(files):\n"
        "    import models\n    assert models.DUMPED == '[1]', models.DUMPED\n"
        "    sys.modules.pop('colorsys', None)  # a library's first import of it, while building\n"
        "    found = importlib.import_module('colorsys').__file__\n"
        "    assert found.endswith('/colorsys.py') and 'blobs' not in found, found\n"
        "    assert models.WHERE == str(files['models.py']), (models.WHERE, files['models.py'])\n"
        "    return Net()\n"
    )
    # models.py imports json itself: a local module's imports are the builder's, so refused
    with pytest.raises(LocalModuleRefused, match="shadows Python's own module json"):
        _open(tmp_path, builder, {"models.py": models.encode(), "json.py": b"X = 1\n"})
    unused = models.replace("import json\n", "").replace("json.dumps([1])", "'[1]'")
    shipped = {"models.py": unused.encode(), "json.py": b"X = 1\n", "colorsys.py": b"X = 1\n"}
    predictor = _open(tmp_path, builder, shipped)
    predictor.close()
