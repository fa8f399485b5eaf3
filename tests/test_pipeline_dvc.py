"""The DVC pipeline (dvc.yaml): ``dvc repro`` on a fresh copy of the repository rebuilds the
catalog with the digests the committed dvc.lock pins, and the same accuracy; the stage
commands one by one: deterministic, and clear about bad input."""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from pinbench import catalog as builtin
from pinbench.catalog import numerics
from pinbench.catalog.digits import MODEL_VERSIONS
from tests.helpers import Cli

ROOT = Path(__file__).parent.parent
BIN = Path(sys.executable).parent
PIPELINE = "build/pipeline"
REPRODUCED = [
    # (output, why it must come out byte for byte)
    ("data", "the digits split (fixed seed) and the synthetic images"),
    ("weights", "training: fixed seeds, one thread, deterministic algorithms"),
    ("catalog", "ONNX, safetensors, Keras (fixed zip timestamps) and every manifest"),
    ("published.json", "the manifest digests the registry recorded"),
    ("eval/locks", "a lockfile pins digests, never hosts or times"),
    ("report/accuracy.json", "accuracy of the same bytes on the same frameworks"),
]
NOT_REPRODUCED = [
    # (output, why it differs run to run)
    ("registry", "publish times in SQL"),
    ("eval/home", "run ids, times, latencies"),
    ("eval/runs.json", "the same"),
    ("report/benchmark.md", "latencies"),
    ("report/benchmark.json", "latencies"),
    ("report/report.html", "latencies and the report's own time"),
]
# Correct predictions of 450 test digits, per framework and model.
EXPECTED_CORRECT = {
    ("onnxruntime", "vision/digits-logreg@1.0.0"): 425,
    ("onnxruntime", "vision/digits-logreg@1.1.0"): 436,
    ("onnxruntime", "vision/digits-logreg@1.2.0"): 436,
    ("onnxruntime", "vision/digits-logreg@2.0.0-rc.1"): 433,
    # the same weights in three frameworks: the same predictions
    ("onnxruntime", "vision/digits-cnn-onnx@1.0.0"): 444,
    ("torch", "vision/digits-cnn-torch@1.0.0"): 444,
    ("tensorflow", "vision/digits-cnn-keras@1.0.0"): 444,
}


def _outs(lock: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        out["path"]: {k: out.get(k) for k in ("md5", "size", "nfiles")}
        for stage in lock["stages"].values()
        for out in stage.get("outs", [])
    }


AMX_OUTS: dict[str, dict[str, Any]] = {
    # What `dvc repro` writes on an Intel CPU with AMX (Sapphire Rapids, where the lock was made
    # in commit a65cae9): its training's weights differ in their last bits from those of the
    # AVX2 machines the committed lock comes from, and so do the outputs made from them; the
    # data and every model's predictions (accuracy.json) are the same (decisions 141, 153).
    "weights": {"md5": "437c2b709609accd8d38ef09b1b7e2ca.dir", "size": 102506128, "nfiles": 10},
    "catalog": {"md5": "9e1786ddd395c8ff8e2c57b3719665f6.dir", "size": 204668101, "nfiles": 21},
    "published.json": {"md5": "414fcee83f0a751da17b32f2dea6282d", "size": 2209, "nfiles": None},
    "eval/locks": {"md5": "1a7415272bfe10a4d1772e2d26aa5a37.dir", "size": 108814, "nfiles": 17},
}


def _has_amx() -> bool:
    """An Intel x86-64 CPU with AVX-512 (``GenuineIntel`` and ``avx512f`` in /proc/cpuinfo):
    Sapphire Rapids with AMX tiles, where the AMX outputs were first seen, and an Intel Xeon
    with AVX-512 and no AMX (2026-11-27, at 29aa808: the same four digests). The AMD EPYC
    machines the committed lock comes from wrote the AVX2 outputs."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "GenuineIntel" in info and " avx512f" in info


def _fresh_copy(dest: Path) -> None:
    """What a clone of this working tree holds: tracked and untracked files git does not
    ignore (the pipeline's own files before they are committed), in a new git repository."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for rel in filter(None, listed.split("\0")):
        src = ROOT / rel
        if src.is_file():  # deleted but not yet staged: not in a clone of the next commit
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    subprocess.run(["git", "init", "-q"], cwd=dest, check=True)


def _dvc_env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PINBENCH_")}
    env.update(
        PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",
        DVC_NO_ANALYTICS="1",
        DVC_SITE_CACHE_DIR=str(tmp / "dvc-site"),
        DVC_GLOBAL_CONFIG_DIR=str(tmp / "dvc-global"),
        DVC_SYSTEM_CONFIG_DIR=str(tmp / "dvc-system"),
    )
    return env


def test_dvc_repro_on_a_fresh_copy_reproduces_the_committed_digests(tmp_path: Path) -> None:
    assert (BIN / "dvc").exists(), f"no dvc in {BIN}: install the `sources` extra (make test does)"
    assert shutil.which("git") and (ROOT / ".git").exists(), "needs a git checkout"
    committed = _outs(yaml.safe_load((ROOT / "dvc.lock").read_text()))
    repo = tmp_path / "repo"
    _fresh_copy(repo)
    env = _dvc_env(tmp_path)

    repro = subprocess.run(
        [str(BIN / "dvc"), "repro"], cwd=repo, env=env, capture_output=True, text=True
    )
    assert repro.returncode == 0, repro.stdout[-4000:] + repro.stderr[-4000:]

    rebuilt = _outs(yaml.safe_load((repo / "dvc.lock").read_text()))
    if _has_amx():  # decision 153: the weights these CPUs train, with everything after them
        committed |= {f"{PIPELINE}/{out}": digest for out, digest in AMX_OUTS.items()}
    named = {f"{PIPELINE}/{out}" for out, _ in REPRODUCED + NOT_REPRODUCED}
    assert set(rebuilt) == named == set(committed), "dvc.yaml's outputs changed: update this test"
    differ = [
        f"{out} ({why}): committed {committed[path]}, rebuilt {rebuilt[path]}"
        for out, why in REPRODUCED
        if committed[(path := f"{PIPELINE}/{out}")] != rebuilt[path]
    ]
    assert not differ, "run `dvc repro` and commit dvc.lock if this was meant:\n" + "\n".join(
        differ
    )

    metrics = json.loads((repo / PIPELINE / "report" / "accuracy.json").read_text())
    correct = {
        (framework, model): round(m["top1"] * m["samples"])
        for framework, models in metrics.items()
        for model, m in models.items()
    }
    assert correct == EXPECTED_CORRECT
    assert {m["samples"] for models in metrics.values() for m in models.values()} == {450}

    status = subprocess.run(
        [str(BIN / "dvc"), "status", "--json"], cwd=repo, env=env, capture_output=True, text=True
    )
    assert json.loads(status.stdout) == {}, "a stage changed what an earlier one wrote"
    shutil.rmtree(repo)  # about 1 GB (ResNet-50's files, the DVC cache); kept when a check fails


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_prepare_twice_gives_the_same_bytes(cli: Cli, tmp_path: Path) -> None:
    for name in ("a", "b"):
        result = cli("catalog", "prepare", str(tmp_path / name), "--parts", "digits")
        assert result.code == 0, result.err
    first = _files(tmp_path / "a")
    assert set(first) == {
        "digits-train/images.npy",
        "digits-train/labels.npy",
        "digits-test/images.npy",
        "digits-test/labels.npy",
        "dataset-digits-test.yaml",
    }
    assert first == _files(tmp_path / "b")


def test_the_stages_write_what_build_writes(cli: Cli, tmp_path: Path) -> None:
    """prepare -> train -> export through files gives build()'s files and manifests, byte for
    byte: the pipeline rebuilds the built-in catalog, not a look-alike."""
    data, weights, out = tmp_path / "data", tmp_path / "weights", tmp_path / "catalog"
    for args in (
        ("prepare", str(data)),
        ("train", str(data), str(weights)),
        ("export", str(weights), str(out)),
    ):
        result = cli("catalog", *args, "--parts", "digits")
        assert result.code == 0, result.err
    built = tmp_path / "built"
    builtin.build(built, ["digits"])
    staged = {k: v for k, v in _files(data).items() if not k.startswith("digits-train/")}
    assert {**staged, **_files(out)} == _files(built)
    assert sorted(_files(weights)) == sorted(
        f"digits-logreg-{version}/{name}"
        for version, _ in MODEL_VERSIONS
        for name in ("coef.npy", "intercept.npy")
    )


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        # a part the catalog does not have is named, with the parts there are
        ("prepare {tmp}/d --parts digits,nope", "unknown catalog parts ['nope']; parts: digits"),
        ("prepare {tmp}/d --parts ,", "no catalog parts named"),
        # each stage names the folder and what it lacks, and the stage that writes it
        ("train {tmp}/no {tmp}/w", "no does not exist: run `pinbench catalog prepare`"),
        ("export {tmp} {tmp}/w --parts cnn", "lacks digits-cnn.safetensors: run `pinbench"),
        ("publish {tmp}/reg {tmp} --record {tmp}/p.json", "lacks *.yaml manifests"),
        ("evaluate {tmp}/reg {tmp}/e", "reg does not exist: run `pinbench catalog publish`"),
        ("report {tmp}/e {tmp}/r", "e does not exist: run `pinbench catalog evaluate`"),
    ],
)  # fmt: skip
def test_stage_commands_refuse_bad_input(cli: Cli, tmp_path: Path, args: str, needle: str) -> None:
    result = cli("catalog", *args.format(tmp=tmp_path).split())
    assert result.code == 1, result.out + result.err
    assert needle in " ".join(result.err.split())
    assert not (tmp_path / "reg").exists() and not (tmp_path / "p.json").exists()


def test_evaluate_refuses_a_used_folder(cli: Cli, tmp_path: Path) -> None:
    registry = tmp_path / "reg"
    (registry / "blobs").mkdir(parents=True)
    (registry / "pinbench.db").write_bytes(b"")
    (tmp_path / "e" / "home").mkdir(parents=True)
    result = cli("catalog", "evaluate", str(registry), str(tmp_path / "e"))
    assert result.code == 1
    assert "exists: remove it first" in result.err


def test_mkl_runs_the_pinned_branch_on_this_cpu() -> None:
    """MKL keeps branches other than AUTO and COMPATIBLE on Intel CPUs only and elsewhere falls
    back to AUTO without a word (``MKL_CBWR=AVX2`` on an AMD EPYC: ``CNR:AUTO``, other CNN
    weights): in the pinned environment the branch MKL reports for PyTorch's matmul is the
    pinned one."""
    matmul = "import torch; torch.ones(64, 100) @ torch.ones(100, 10)"
    result = subprocess.run(
        [sys.executable, "-c", matmul],
        env={**os.environ, **numerics.PINNED, "MKL_VERBOSE": "1"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert "SGEMM" in result.stdout, result.stdout + result.stderr
    assert f"CNR:{numerics.PINNED['MKL_CBWR']} " in result.stdout, result.stdout


@pytest.mark.parametrize(
    ("environ", "pinned"),
    [
        (numerics.PINNED, True),
        # one variable missing or otherwise: the libraries may pick other kernels
        ({k: v for k, v in numerics.PINNED.items() if k != "MKL_CBWR"}, False),
        ({**numerics.PINNED, "OPENBLAS_NUM_THREADS": "2"}, False),
        ({}, False),
    ],
)
def test_training_is_pinned_only_with_every_variable(
    environ: dict[str, str], pinned: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    assert numerics.pinned(environ) is pinned
    monkeypatch.setattr(platform, "machine", lambda: "aarch64")
    assert numerics.pinned(environ)  # off x86-64 the variables would name absent instructions
