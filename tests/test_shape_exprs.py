"""A ``torch.export`` archive's shape expressions are data, never code. ``torch.export.load``
evaluates each with ``sympy.sympify`` (Python's ``eval``), so pinbench checks every one
(``artifacts.shape_exprs``) at ``manifest``, at publish and again before a run loads the
archive: an expression that could do more than describe a size is refused, naming it, and
nothing in it runs. Pickles were refused before; this closes the same door for ``.pt2``."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import yaml

from pinbench.artifacts.digest import hash_file
from pinbench.artifacts.shape_exprs import (
    ArchiveRefused,
    ShapeExprRefused,
    check_archive,
    check_expression,
)
from pinbench.worker.predictors.base import ModelLoadError
from pinbench.worker.predictors.config import ModelFiles, PredictorOptions
from tests.helpers import Cli
from tests.torch_archives import Tiny, export_to, hostile_archive

#   expression                                                         why it is a size
ACCEPTED = [
    ("Symbol('s74', positive=True, integer=True)", "what torch 2.13 writes for a batch"),
    ("Add(Symbol('s74', positive=True, integer=True), Integer(1))", "srepr arithmetic"),
    ("Mul(Integer(12), Symbol('s74', positive=True, integer=True))", "a stride"),
    ("s0 + 1", "the older text form"),
    ("FloorDiv(s0, 2) + Mod(s1, 3)", "torch's own functions"),
    ("Max(1, s0) <= 2*s0", "a comparison"),
    ("Pow(Symbol('s0', integer=True), Integer(2))", "a small literal exponent"),
    ("s0**2", "the same, as text"),
    ("Float('1.5', precision=53)", "a decimal"),
    ("Pow(Mul(Integer(9223372036854775807), s0), 64)", "a product raised (no power inside)"),
    ("LShift(LShift(s0, 64), 64) ** 2", "shifts grow linearly, so a shift may be raised"),
    ("And(Eq(s0, 1), Ne(s1, 0))", "logic"),
]  # fmt: skip

#   expression                                                        what the refusal says
REFUSED = [
    ("__import__('os').system('id')", "not a sympy shape function"),
    ("exec(chr(105)+chr(100))", "not a sympy shape function"),
    ("Symbol('s0').__class__", "Attribute is not allowed"),
    ("Symbol('__import__(\"os\")')", "neither a symbol name nor a decimal"),
    ("[s0][0]", "is not allowed"),
    ("(lambda: 1)()", "not a sympy shape function"),
    ("s0 ^ 2", "BitXor is not allowed"),  # sympify reads ^ as **
    ("Pow(Integer(2), Pow(Integer(10), Integer(10)))", "exponent must be a literal"),
    ("2**10**10", "literal exponent"),
    ("LShift(1, s0)", "exponent must be a literal"),
    ("Integer(99999999999999999999999)", "past int64"),
    ("Symbol('s0', evaluate=exec)", "not a sympy assumption"),
    ("s0 if s0 else s1", "IfExp is not allowed"),
    ("open", "neither a shape symbol nor a shape function"),
    ("s0 +", "not an expression"),
    ("(" * 300 + "s0" + ")" * 300, "not an expression"),
    # sympy computes integer powers at once: six nested ** 64 are 2**36 bits (8 GB)
    ("Pow(" * 6 + "Integer(2)" + ", Integer(64))" * 6, "a power of a power"),
    ("((((((2)**64)**64)**64)**64)**64)**64", "a power of a power"),
    ("Pow(Mul(s0, FloatPow(Integer(2), 64)), 64)", "a power of a power"),
    ("Float('0.1', precision=100000000)", "precision 100000000 is not between"),
    ("Float('0.1', precision=0)", "precision 0 is not between"),
]  # fmt: skip


@pytest.mark.parametrize("text", [a[0] for a in ACCEPTED], ids=[a[1] for a in ACCEPTED])
def test_a_size_expression_is_accepted(text: str) -> None:
    check_expression(text)


@pytest.mark.parametrize(("text", "says"), REFUSED, ids=[r[1] + ":" + r[0][:30] for r in REFUSED])
def test_an_expression_that_could_do_more_is_refused(text: str, says: str) -> None:
    with pytest.raises(ShapeExprRefused) as refused:
        check_expression(text)
    assert says in str(refused.value)


def test_every_expression_torch_writes_for_a_dynamic_model_is_accepted(tmp_path: Path) -> None:
    """The check is measured against what PyTorch itself writes: a model with a dynamic batch
    and one derived from it (a concatenation doubles it) passes whole."""
    import torch

    class Doubling(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.cat([x, x]).reshape(-1) * 2

    batch = torch.export.Dim("batch", min=1, max=4096)
    program = torch.export.export(
        Doubling(), (torch.zeros(3, 4),), dynamic_shapes={"x": {0: batch}}
    )
    path = tmp_path / "doubling.pt2"
    torch.export.save(program, str(path))
    text = _program_text(path)
    assert '"expr_str"' in text and "Mul(Integer(" in text, "the archive has derived sizes"
    check_archive(path)


def _program_text(path: Path) -> str:
    import zipfile

    with zipfile.ZipFile(path) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith("/models/model.json")]
        return archive.read(name).decode()


def test_the_hostile_archive_runs_its_code_when_torch_loads_it(tmp_path: Path) -> None:
    """What the checks stand in front of: PyTorch's own loading (pickles refused, as
    pinbench's predictor loads) writes the file. In a child, so nothing here is touched."""
    model, target = hostile_archive(tmp_path)
    code = (
        "import sys, warnings; warnings.simplefilter('ignore');"
        "from pinbench.worker.predictors.torch.predictor import _no_unpickling;"
        "import torch\n"
        f"with _no_unpickling('m'): torch.export.load({str(model)!r})"
    )
    subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=300, check=False)
    assert target.exists()


def _disguised(folder: Path) -> tuple[dict[str, Path], Path]:
    """The hostile program where only PyTorch reads it, not a check that takes zip names as
    Python does (case-sensitive, the last of equal names): ``model.JSON`` (miniz's lookup
    ignores case), and three ``model.json`` members of which only the last is clean (miniz's
    search over the sorted names takes the middle one). With the file each would write."""
    import zipfile

    (folder / "clean").mkdir()
    clean = export_to(Tiny(), folder / "clean" / "tiny.pt2")
    hostile, target = hostile_archive(folder)
    with zipfile.ZipFile(clean) as archive:
        program = {i.filename: archive.read(i) for i in archive.infolist()}
    with zipfile.ZipFile(hostile) as archive:
        members = [(i.filename, archive.read(i)) for i in archive.infolist()]
    made = {}
    for case in ("upper-case suffix", "three of one name"):
        path = made[case] = folder / (case.replace(" ", "-") + ".pt2")
        with zipfile.ZipFile(path, "w") as archive, warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Duplicate name", UserWarning)  # meant here
            for name, data in members:
                if not name.endswith("/models/model.json"):
                    archive.writestr(name, data)
                elif case == "upper-case suffix":
                    archive.writestr(name[: -len("json")] + "JSON", data)
                else:
                    archive.writestr(name, data)
                    archive.writestr(name, data)
                    archive.writestr(name, program[name])
    return made, target


def test_torch_reads_a_program_under_another_case_or_among_copies(tmp_path: Path) -> None:
    """What the member-name check stands in front of (in a child: nothing here is touched)."""
    made, target = _disguised(tmp_path)
    code = (
        "import sys, warnings; warnings.simplefilter('ignore');"
        "from pinbench.worker.predictors.torch.predictor import _no_unpickling;"
        "import torch\n"
        f"for path in {[str(p) for p in made.values()]!r}:\n"
        f"    with _no_unpickling('m'): torch.export.load(path)\n"
        f"    print(path, __import__('os').path.exists({str(target)!r}), flush=True)\n"
        f"    __import__('pathlib').Path({str(target)!r}).unlink(missing_ok=True)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.stdout.split() == [w for p in made.values() for w in (str(p), "True")], done.stderr


@pytest.mark.parametrize("case", ["upper-case suffix", "three of one name"])
def test_an_archive_whose_member_names_hide_a_program_is_refused(case: str, tmp_path: Path) -> None:
    made, target = _disguised(tmp_path)
    with pytest.raises(ArchiveRefused) as refused:
        check_archive(made[case])
    assert "shape expression" in str(refused.value) or "two members" in str(refused.value)
    assert not target.exists()


def test_publish_refuses_the_archive_and_keeps_nothing(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "clean").mkdir()
    clean = export_to(Tiny(), tmp_path / "clean" / "tiny.pt2")
    manifest_path = tmp_path / "clean" / "model.yaml"
    made = cli("manifest", "model", str(clean), "--name", "test/tiny", "-o", str(manifest_path))
    assert made.code == 0, made.err
    hostile, target = hostile_archive(tmp_path)
    clean.write_bytes(hostile.read_bytes())  # the manifest now names the hostile bytes
    manifest = yaml.safe_load(manifest_path.read_text())
    (entry,) = [f for f in manifest["files"] if f["path"] == "tiny.pt2"]
    digest, size = hash_file(clean)
    entry["sha256"], entry["size"] = digest.hex, size
    manifest_path.write_text(yaml.safe_dump(manifest))
    assert cli("init").code == 0
    blobs = tmp_path / "home" / "blobs"
    before = sorted(p.name for p in blobs.rglob("*") if p.is_file())

    result = cli("publish", str(manifest_path))
    assert result.code == 1, result.out
    assert "tiny.pt2" in result.err and "shape expression" in result.err
    assert "Traceback" not in result.err
    assert not target.exists()
    assert sorted(p.name for p in blobs.rglob("*") if p.is_file()) == before
    listed = cli("list", "model", "--json")
    assert json.loads(listed.out) == []


def test_a_run_refuses_the_archive_before_torch_reads_it(tmp_path: Path) -> None:
    """Forced past publish (a lockfile cannot do it: the registry re-derives files), the
    predictor itself refuses, in every runner, since every runner opens it."""
    from pinbench.worker.predictors.torch.predictor import TorchPredictor

    folder = tmp_path / "model"
    folder.mkdir()
    hostile, target = hostile_archive(tmp_path)
    (folder / "tiny.pt2").write_bytes(hostile.read_bytes())
    files = ModelFiles({"tiny.pt2": folder / "tiny.pt2"}, "torch-export")
    with warnings.catch_warnings(), pytest.raises(ModelLoadError) as refused:
        warnings.simplefilter("ignore")
        TorchPredictor().open(files, PredictorOptions())
    assert "shape expression" in str(refused.value)
    assert not target.exists()


def test_the_run_time_guard_checks_what_sympify_is_handed(tmp_path: Path) -> None:
    """Past the archive check (here, switched off), every text ``sympify`` is handed while
    the archive loads is checked: a member or field the walk did not read runs nothing."""
    from unittest import mock

    from pinbench.worker.predictors.torch import predictor as torch_predictor

    folder = tmp_path / "model"
    folder.mkdir()
    hostile, target = hostile_archive(tmp_path)
    (folder / "tiny.pt2").write_bytes(hostile.read_bytes())
    files = ModelFiles({"tiny.pt2": folder / "tiny.pt2"}, "torch-export")
    with (
        mock.patch("pinbench.artifacts.shape_exprs.check_archive", lambda path: None),
        warnings.catch_warnings(),
        pytest.raises(ModelLoadError) as refused,
    ):
        warnings.simplefilter("ignore")
        torch_predictor.TorchPredictor().open(files, PredictorOptions())
    assert "shape expression" in str(refused.value)
    assert not target.exists()


def test_a_clean_dynamic_archive_still_loads_and_predicts(tmp_path: Path) -> None:
    import numpy as np
    import torch

    from pinbench.worker.predictors.torch.predictor import TorchPredictor

    module = Tiny().eval()
    model = export_to(module, tmp_path / "tiny.pt2")
    predictor = TorchPredictor()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        predictor.open(ModelFiles({"tiny.pt2": model}, "torch-export"), PredictorOptions())
    x = np.random.default_rng(0).standard_normal((3, 1, 8, 8)).astype(np.float32)
    try:
        (got,) = predictor.predict(x).values()
    finally:
        predictor.close()
    with torch.no_grad():
        want = module(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)
