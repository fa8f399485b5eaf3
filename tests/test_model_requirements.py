"""A model's own requirements (issue 73, item 8: ``registry.model_requirements``): the packages
its code imports, hash-pinned, installed beside the framework's by the venv runner, refused
where they cannot be honoured, and a missing one named with where to declare it.

The model is a 4x3 MatMul in ONNX whose ``postprocess`` imports einops (0.8.1, MIT, a
pure-Python wheel the onnxruntime environment does not pin).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from pinbench.registry.manifest import ModelManifest
from tests.helpers import Cli, dump, sha
from tests.test_scenario_notes import _fast_model

EINOPS = {
    "name": "einops",
    "version": "0.8.1",
    "hashes": ["sha256:919387eb55330f5757c6bea9165c5ff5cfe63a642682ea788a6d472576d81737"],
}
PROC = """\
import einops


def finish(outputs, files):
    return {"logits": einops.rearrange(outputs["logits"], "n c -> n c")}
"""


def _manifest(**fields: Any) -> dict[str, Any]:
    return {
        "kind": "model",
        "name": "test/m",
        "version": "1.0.0",
        "format": "onnx",
        "framework": {"name": "onnxruntime", "range": ">=1.17 <2"},
        "files": [
            {"path": "m.onnx", "sha256": "a" * 64},
            {"path": "proc.py", "sha256": "b" * 64},
        ],
        "outputs": [{"name": "logits", "type": "classification"}],
        **fields,
    }


POST = {"postprocess": {"file": "proc.py", "function": "finish"}}


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"requirements": [EINOPS]}, "this model has none"),  # no code of its own
        ({**POST, "requirements": []}, "`requirements` is empty"),
        ({**POST, "requirements": [EINOPS, {**EINOPS, "name": "Einops"}]}, "named twice"),
        ({**POST, "requirements": [{**EINOPS, "name": "ein ops"}]}, "not a package name"),
        ({**POST, "requirements": [{**EINOPS, "hashes": []}]}, "at least one sha256"),
        # one token each in the requirements file uv reads: never a line or an option
        (
            {**POST, "requirements": [{**EINOPS, "version": "0.8.1\n--index-url=http://x"}]},
            "is not a version",
        ),
        (
            {**POST, "requirements": [{**EINOPS, "version": "0.8.1 --no-binary=:all:"}]},
            "is not a version",
        ),
        ({**POST, "requirements": [{**EINOPS, "name": "einops\n-e ."}]}, "not a package name"),
    ],
)
def test_a_models_requirements_that_cannot_be_honoured_are_refused(
    fields: dict[str, Any], said: str
) -> None:
    with pytest.raises((msgspec.ValidationError, ValueError), match=said):
        msgspec.convert(_manifest(**fields), ModelManifest)
    msgspec.convert(_manifest(**POST, requirements=[EINOPS]), ModelManifest)  # the fix


def _with_code(cli: Cli, root: Path, version: str, requirements: list[dict[str, Any]]) -> None:
    (root / "proc.py").write_text(PROC)
    manifest = yaml.safe_load((root / "m.yaml").read_text())
    manifest["version"] = version
    manifest["files"].append({"path": "proc.py", "sha256": sha(PROC.encode())})
    manifest.update(POST)
    if requirements:
        manifest["requirements"] = requirements
    published = cli("publish", str(dump(root / f"m-{version}.yaml", manifest)))
    assert published.code == 0, published.err
    model = f"test/fast@{version}"
    request = {"model": model, "dataset": "test/x@1", "scenario": {"mode": "accuracy"}}
    locked = cli("lock", str(dump(root / f"r-{version}.yaml", request)), "-o", f"{version}.lock")
    assert locked.code == 0, locked.err


def test_a_model_runs_with_its_own_requirements_in_the_venv_runner_and_nowhere_else(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _fast_model(cli, tmp_path)
    _with_code(cli, tmp_path, "2.0.0", [])
    _with_code(cli, tmp_path, "2.0.1", [EINOPS])
    # without them, the code's import fails, naming where to declare the package
    failed = cli("run", "2.0.0.lock", "--runner", "venv", "--allow-code")
    assert failed.code == 1
    assert "the run's environment lacks 'einops'" in failed.err
    assert "declare it in the model's `requirements`" in failed.err
    # with them, installed beside the framework's, by digest
    ran = cli("run", "2.0.1.lock", "--runner", "venv", "--allow-code", "--json")
    assert ran.code == 0, ran.err
    shown = json.loads(ran.out)
    assert shown["status"] == "succeeded" and 0.0 <= shown["top1"] <= 1.0
    # the local runner (pinbench's own environment) and docker cannot install them: refused
    # before anything is recorded; auto picks the venv runner
    listed = len(json.loads(cli("runs", "list", "--json").out))
    for runner in ("local", "docker"):
        refused = cli("run", "2.0.1.lock", "--runner", runner, "--allow-code")
        assert refused.code == 1 and "run with --runner venv" in refused.err, refused.err
        assert "einops==0.8.1" in refused.err and "Traceback" not in refused.err
    assert len(json.loads(cli("runs", "list", "--json").out)) == listed
    auto = cli("run", "2.0.1.lock", "--allow-code", "--json")
    assert auto.code == 0, auto.err
    assert json.loads(auto.out)["details"]["environment"]["runner"] == "venv"


def test_a_package_the_framework_pins_too_is_refused_at_lock(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _fast_model(cli, tmp_path)
    numpy = {"name": "NumPy", "version": "2.0.0", "hashes": ["sha256:" + "c" * 64]}
    (tmp_path / "proc.py").write_text(PROC)
    manifest = yaml.safe_load((tmp_path / "m.yaml").read_text())
    manifest["version"] = "3.0.0"
    manifest["files"].append({"path": "proc.py", "sha256": sha(PROC.encode())})
    manifest.update(POST, requirements=[EINOPS, numpy])
    assert cli("publish", str(dump(tmp_path / "m3.yaml", manifest))).code == 0
    request = {"model": "test/fast@3.0.0", "dataset": "test/x@1"}
    locked = cli("lock", str(dump(tmp_path / "r3.yaml", request)), "-o", "r3.lock")
    assert locked.code == 1 and "Traceback" not in locked.err
    assert "pins too: NumPy (2.4.6 there)" in locked.err
    assert not (tmp_path / "r3.lock").exists()


def _wheel(folder: Path, name: str, members: dict[str, str]) -> Path:
    """A wheel as a publisher may write one: ``members`` beside its ``.dist-info``."""
    import zipfile

    path = folder / f"{name}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for member, text in members.items():
            archive.writestr(member, text)
        info = f"{name}-1.0.dist-info"
        archive.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        archive.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        archive.writestr(f"{info}/RECORD", "")
    return path


@pytest.mark.parametrize(
    ("members", "said"),
    [
        ({"evil.pth": "import os"}, "is a .pth file, run at every start"),
        ({"sitecustomize.py": "import os"}, "is imported at every start"),
        ({"usercustomize/__init__.py": ""}, "is imported at every start"),
        ({"evil-1.0.data/data/pyvenv.cfg": "home = /x"}, "under its .data folder"),
        ({"evil-1.0.data/scripts/python": "#!/bin/sh"}, "under its .data folder"),
        ({"../outside.py": ""}, "is not a plain path"),
        ({"/etc/evil.py": ""}, "is not a plain path"),
        ({"json.py": "x = 1"}, "has the name of Python's own json"),
    ],
)
def test_a_model_wheel_that_would_run_at_start_or_write_outside_its_packages_is_refused(
    tmp_path: Path, members: dict[str, str], said: str
) -> None:
    """An attacker's review ran a wheel's .pth and sitecustomize.py while uv compiled the
    environment (on the host, outside the sandbox) and replaced pyvenv.cfg through .data: the
    model's wheels are now read before anything of them is installed."""
    from pinbench.environments.model_wheels import ModelWheelRefused, top_level

    with pytest.raises(ModelWheelRefused, match=re.escape(said)):
        top_level(_wheel(tmp_path, "evil", members))
    assert top_level(_wheel(tmp_path, "fine", {"fine/__init__.py": "", "fine.py": ""})) == {
        "fine",
        "fine.py",
    }


def test_a_model_wheel_may_not_replace_the_frameworks_files(tmp_path: Path) -> None:
    """A wheel named otherwise (``shadow``) held ``fakefw/__init__.py`` and replaced the
    framework's package: distribution names differed, so the lock's check passed."""
    from pinbench.environments.model_wheels import ModelWheelRefused, check_beside

    site = tmp_path / "site-packages"
    (site / "onnxruntime").mkdir(parents=True)
    (site / "numpy").mkdir()
    shadow = _wheel(tmp_path, "shadow", {"onnxruntime/__init__.py": "WHO = 'model'"})
    with pytest.raises(ModelWheelRefused, match="installs onnxruntime, which the framework"):
        check_beside([shadow], site)
    check_beside([_wheel(tmp_path, "own", {"own/__init__.py": ""})], site)


def test_uv_and_pip_see_none_of_this_processs_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    from pinbench.environments.uv_tools import build_env

    monkeypatch.setenv("PINBENCH_DB_SECRET", "hunter2")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "k")
    monkeypatch.setenv("PIP_INDEX_URL", "https://index.example/simple")
    kept = build_env()
    assert "PINBENCH_DB_SECRET" not in kept and "AWS_SECRET_ACCESS_KEY" not in kept
    assert kept["PIP_INDEX_URL"] == "https://index.example/simple" and "PATH" in kept
