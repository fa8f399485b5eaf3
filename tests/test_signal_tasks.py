"""Tasks whose answers are signals (issue 86, item 2): ``audio-to-audio`` (SI-SDR and SNR as
torchmetrics defines them) and ``image-to-image`` (PSNR and SSIM as scikit-image defines them),
each equal to its reference library on random cases the implementation did not choose, and a
run of each end to end, its metrics equal to the library's on the model's own answers.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from pinbench.registry.manifest import parse_manifest
from pinbench.registry.manifest_parts import ManifestError
from pinbench.tasks.signals import metrics as m
from pinbench.worker.undefined import UndefinedMetric
from tests.helpers import accuracy_run, write_files

# ---------------------------------------------------------------- the metrics, case by case


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("shape", [(5, 400), (3, 2, 257)])
def test_si_sdr_and_snr_are_torchmetrics(seed: int, shape: tuple[int, ...]) -> None:
    from torchmetrics.audio import ScaleInvariantSignalDistortionRatio, SignalNoiseRatio

    rng = np.random.default_rng(seed)
    target = rng.standard_normal(shape).astype(np.float32)
    preds = rng.uniform(0.2, 2.0) * target + rng.standard_normal(shape) * rng.uniform(0.01, 1)
    preds = preds.astype(np.float32)
    ours_sdr = m.si_sdr(preds.astype(np.float64), target.astype(np.float64), preds.dtype).mean()
    ours_snr = m.snr(preds.astype(np.float64), target.astype(np.float64), preds.dtype).mean()
    theirs_sdr = ScaleInvariantSignalDistortionRatio()(
        torch.from_numpy(preds), torch.from_numpy(target)
    )
    theirs_snr = SignalNoiseRatio()(torch.from_numpy(preds), torch.from_numpy(target))
    # torchmetrics sums in float32; these sums are float64
    assert ours_sdr == pytest.approx(float(theirs_sdr), abs=1e-3)
    assert ours_snr == pytest.approx(float(theirs_snr), abs=1e-3)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(
    ("shape", "channel_axis", "data_range"),
    [((4, 32, 24), None, 1.0), ((3, 16, 20, 3), -1, 255.0), ((2, 3, 11, 9), 0, 1.0)],
)
def test_psnr_and_ssim_are_scikit_images(
    seed: int, shape: tuple[int, ...], channel_axis: int | None, data_range: float
) -> None:
    from skimage import metrics

    sk: Any = metrics  # untyped

    rng = np.random.default_rng(100 + seed)
    target = rng.uniform(0, data_range, size=shape)
    preds = np.clip(target + rng.normal(0, 0.1 * data_range, size=shape), 0, data_range)
    psnr = m.psnr(preds, target, data_range)
    ssim = m.ssim(preds, target, data_range, channel_axis)
    for i in range(shape[0]):
        assert psnr[i] == pytest.approx(
            sk.peak_signal_noise_ratio(target[i], preds[i], data_range=data_range), rel=1e-12
        )
        assert ssim[i] == pytest.approx(
            sk.structural_similarity(
                target[i], preds[i], data_range=data_range, channel_axis=channel_axis
            ),
            abs=1e-12,
        )


def test_a_silent_reference_and_an_exact_image_are_undefined_not_a_number() -> None:
    target = np.ones((3, 50))
    target[1] = 0.0
    with pytest.raises(UndefinedMetric, match="reference of sample 1 is silent"):
        m.si_sdr(target, target, np.dtype(np.float32))
    images = np.random.default_rng(0).uniform(size=(2, 8, 8))
    with pytest.raises(UndefinedMetric, match=r"sample 0 equals its reference: .* infinite"):
        m.psnr(images, images, 1.0)


# ---------------------------------------------------------------- a run of each, end to end


def _npy(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


def _affine_model(root: Path, name: str, shape: list[int], gain: float, bias: float) -> Any:
    """An ONNX model answering ``x * gain + bias``: a signal of its input's shape."""
    from onnx import TensorProto, helper

    consts = [
        helper.make_tensor("g", TensorProto.FLOAT, [], [gain]),
        helper.make_tensor("b", TensorProto.FLOAT, [], [bias]),
    ]
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "g"], ["s"]), helper.make_node("Add", ["s", "b"], ["y"])],
        "affine",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", *shape])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", *shape])],
        consts,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    files = write_files(root, {"affine.onnx": model.SerializeToString()})
    return {
        "kind": "model",
        "name": name,
        "version": "1.0.0",
        "format": "onnx",
        "framework": {"name": "onnxruntime", "range": "^1"},
        "files": files,
        "inputs": [{"name": "x", "shape": shape}],
        "outputs": [{"name": "y"}],
    }


def _dataset(root: Path, task: str, x: np.ndarray, ref: np.ndarray, **labels: Any) -> Any:
    files = write_files(root, {"x.npy": _npy(x), "ref.npy": _npy(ref)})
    fmt = "reference-audio-npy" if task == "audio-to-audio" else "reference-image-npy"
    return {
        "kind": "dataset",
        "name": f"signals/{task}",
        "version": "1.0.0",
        "task": task,
        "files": files,
        "data": {"format": "npy", "path": "x.npy"},
        "labels": {"format": fmt, "path": "ref.npy", **labels},
    }


def _run(
    tmp_path: Path, catalog_dir: Path, model: Any, dataset: Any, **scenario: Any
) -> dict[str, Any]:
    return accuracy_run(tmp_path, catalog_dir, model, dataset, **scenario)


def test_an_enhancement_models_run_scores_si_sdr_and_snr_as_torchmetrics(
    tmp_path: Path, catalog_dir: Path
) -> None:
    from torchmetrics.functional.audio import (
        scale_invariant_signal_distortion_ratio,
        signal_noise_ratio,
    )

    rng = np.random.default_rng(86)
    clean = rng.standard_normal((6, 2, 300)).astype(np.float32)
    noisy = (clean + 0.3 * rng.standard_normal(clean.shape)).astype(np.float32)
    model = _affine_model(tmp_path / "m", "audio/affine", [2, 300], 0.7, 0.01)
    run = _run(
        tmp_path, catalog_dir, model, _dataset(tmp_path / "d", "audio-to-audio", noisy, clean)
    )
    assert run["status"] == "succeeded", run.get("error")
    answers = torch.from_numpy(noisy * np.float32(0.7) + np.float32(0.01))
    target = torch.from_numpy(clean)
    sdr = float(scale_invariant_signal_distortion_ratio(answers, target).mean())
    assert run["si_sdr_db"] == pytest.approx(sdr, abs=1e-3)
    assert run["snr_db"] == pytest.approx(
        float(signal_noise_ratio(answers, target).mean()), abs=1e-3
    )
    assert run["accuracy_samples_count"] == 6


def test_a_restoration_models_run_scores_psnr_and_ssim_as_scikit_image(
    tmp_path: Path, catalog_dir: Path
) -> None:
    from skimage import metrics

    sk: Any = metrics  # untyped

    rng = np.random.default_rng(87)
    clean = rng.uniform(0, 1, size=(4, 12, 10, 3)).astype(np.float32)
    degraded = np.clip(clean + rng.normal(0, 0.1, clean.shape), 0, 1).astype(np.float32)
    model = _affine_model(tmp_path / "m", "image/affine", [12, 10, 3], 0.9, 0.05)
    dataset = _dataset(
        tmp_path / "d", "image-to-image", degraded, clean, data_range=1.0, channel_axis=-1
    )
    run = _run(tmp_path, catalog_dir, model, dataset)
    assert run["status"] == "succeeded", run.get("error")
    answers = (degraded * np.float32(0.9) + np.float32(0.05)).astype(np.float64)
    psnr = [
        sk.peak_signal_noise_ratio(c, a, data_range=1.0)
        for c, a in zip(clean, answers, strict=True)
    ]
    ssim = [
        sk.structural_similarity(c, a, data_range=1.0, channel_axis=-1)
        for c, a in zip(clean.astype(np.float64), answers, strict=True)
    ]
    assert run["psnr_db"] == pytest.approx(float(np.mean(psnr)), rel=1e-6)
    assert run["ssim"] == pytest.approx(float(np.mean(ssim)), rel=1e-6)


def test_an_answer_not_of_its_references_shape_is_refused_naming_both(
    tmp_path: Path, catalog_dir: Path
) -> None:
    """Checked on the first answer, before anything is timed or scored."""
    from pinbench.tasks.signals.task import NotASignal

    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 300)).astype(np.float32)
    ref = rng.standard_normal((4, 299)).astype(np.float32)
    model = _affine_model(tmp_path / "m", "audio/affine", [300], 1.0, 0.0)
    dataset = _dataset(tmp_path / "d", "audio-to-audio", x, ref)
    with pytest.raises(NotASignal, match=r"shape \(1, 300\) for a batch of 1: want \(1, 299\)"):
        _run(tmp_path, catalog_dir, model, dataset)


@pytest.mark.parametrize(
    ("labels", "said"),
    [
        ({"format": "reference-image-npy", "path": "ref.npy"}, "need `data_range`"),
        (
            {"format": "reference-audio-npy", "path": "ref.npy", "data_range": 1.0},
            "data_range says",
        ),
        ({"format": "class-index-npy", "path": "ref.npy", "channel_axis": -1}, "channel_axis says"),
        ({"format": "reference-image-npy", "path": "ref.npy", "data_range": 0}, "data_range"),
        (
            {
                "format": "reference-image-npy",
                "path": "ref.npy",
                "data_range": 1,
                "channel_axis": 2,
            },
            "channel_axis",
        ),
        ({"format": "reference-audio-npy"}, "need `path`"),
        ({"format": "reference-audio-npy", "path": "ref.npy", "classes": 3}, "`classes` does not"),
    ],
)
def test_a_reference_datasets_labels_are_checked_where_declared(
    tmp_path: Path, labels: dict[str, Any], said: str
) -> None:
    x = np.zeros((2, 8, 8), np.float32)
    task = "image-to-image" if "image" in labels["format"] else "audio-to-audio"
    if labels["format"] == "class-index-npy":
        task = "classification"
    doc = _dataset(tmp_path, task, x, x)
    with pytest.raises(ManifestError, match=said):
        parse_manifest({**doc, "labels": labels})


def test_pinbench_manifest_dataset_writes_a_reference_dataset_that_publish_checks(
    tmp_path: Path, catalog_dir: Path
) -> None:
    """``--labels-format reference-image-npy --data-range 1 --channel-axis -1`` writes what a
    run reads; references that are not one per sample are refused at publish, naming them."""
    from pinbench.authoring.dataset import dataset_manifest
    from pinbench.tasks.signals.task import NotASignal

    np.save(tmp_path / "low.npy", np.zeros((3, 8, 8, 3), np.float32))
    np.save(tmp_path / "high.npy", np.ones((3, 8, 8, 3), np.float32))
    np.save(tmp_path / "two.npy", np.ones((2, 8, 8, 3), np.float32))
    authored = dataset_manifest(
        tmp_path / "low.npy",
        base=tmp_path,
        name="signals/sr",
        version="1.0.0",
        labels=str(tmp_path / "high.npy"),
        names=None,
        label_format="reference-image-npy",
        images={"data_range": 1.0, "channel_axis": -1},
    )
    labels = authored.data["labels"]
    assert authored.data["task"] == "image-to-image"
    assert (labels["data_range"], labels["channel_axis"]) == (1.0, -1)
    with pytest.raises(NotASignal, match=r"shape \(2, 8, 8, 3\): want one reference per sample"):
        dataset_manifest(
            tmp_path / "low.npy",
            base=tmp_path,
            name="signals/sr",
            version="1.0.0",
            labels=str(tmp_path / "two.npy"),
            names=None,
            label_format="reference-image-npy",
            images={"data_range": 1.0, "channel_axis": -1},
        )


def test_an_accuracy_run_over_part_of_the_references_is_refused_before_it_runs(
    tmp_path: Path, catalog_dir: Path
) -> None:
    from pinbench.tasks.signals.task import NotASignal

    x = np.random.default_rng(2).standard_normal((4, 100)).astype(np.float32)
    model = _affine_model(tmp_path / "m", "audio/affine", [100], 1.0, 0.0)
    dataset = _dataset(tmp_path / "d", "audio-to-audio", x, x)
    with pytest.raises(NotASignal, match="sample_count 2 of a dataset of 4"):
        _run(tmp_path, catalog_dir, model, dataset, sample_count=2)
