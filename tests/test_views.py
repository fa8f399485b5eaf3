"""Several rows per sample (issue 86, item 3): an input's ``take`` and ``reshape`` steps read
parts of one row of features, a ``views`` step makes each sample ``k`` rows (test-time
augmentation), and each output says how its ``k`` rows become one answer: ``mean``, ``max``
or ``model`` (the model reduces them itself, as ICLabel's network does)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest

from pinbench.evaluator.runners.process import EvaluationFailed
from pinbench.registry.manifest import parse_manifest
from pinbench.registry.manifest_parts import ManifestError
from pinbench.registry.ports import Input
from pinbench.worker.pipeline import preprocess
from pinbench.worker.pipeline_errors import PipelineError
from tests.helpers import accuracy_run, write_files
from tests.package_models import package_file

ICLABEL = "mne_icalabel/iclabel/network/assets/ICLabelNet.onnx"
FLIPS = [[], [{"negate": {}}], [{"flip": {"axis": -1}}], [{"negate": {}}, {"flip": {"axis": -1}}]]
"""ICLabel's four views of a topographic map (``iclabel.network.utils._format_input``)."""


def _input(steps: list[dict[str, Any]], shape: list[int] | None = None) -> Input:
    return msgspec.convert({"name": "x", "shape": shape or [], "steps": steps}, Input)


# ---------------------------------------------------------------- the steps, on arrays


def test_take_and_reshape_read_a_part_of_each_row_as_numpy_slices_it() -> None:
    x = np.random.default_rng(1).standard_normal((5, 30)).astype(np.float32)
    spec = _input([{"take": {"start": 6, "stop": 18}}, {"reshape": {"shape": [2, 3, 2]}}])
    np.testing.assert_array_equal(preprocess(x, spec), x[:, 6:18].reshape(5, 2, 3, 2))


def test_views_are_each_samples_rows_in_the_order_of_their_transforms() -> None:
    x = np.random.default_rng(2).standard_normal((3, 1, 4, 5)).astype(np.float32)
    spec = _input([{"views": {"transforms": FLIPS, "order": "view-major"}}])
    got = preprocess(x, spec)
    assert got.shape == (3, 4, 1, 4, 5)
    for s in range(3):
        want = [x[s], -x[s], x[s][..., ::-1], -x[s][..., ::-1]]
        for v in range(4):
            np.testing.assert_array_equal(got[s, v], want[v])


@pytest.mark.parametrize(
    ("at", "top", "left"),
    [("center", 2, 1), ("top_left", 0, 0), ("top_right", 0, 3), ("bottom_left", 3, 0),
     ("bottom_right", 3, 3)],
)  # fmt: skip
def test_crop_views_are_torchvisions_five_crop_positions(at: str, top: int, left: int) -> None:
    # a 3x6 window of 6x9: torchvision's CenterCrop puts its top at round(3 / 2) = 2 and its
    # left at round(3 / 2) = 2 ... round half to even: round(1.5) = 2, round(2.5) = 2
    x = np.arange(2 * 1 * 6 * 9, dtype=np.float32).reshape(2, 1, 6, 9)
    spec = _input([{"views": {"transforms": [[], [{"crop": {"size": [3, 6], "at": at}}]],
                              "order": "sample-major"}}])  # fmt: skip
    with pytest.raises(PipelineError, match=r"views must all have one shape"):
        preprocess(x, spec)  # the first view is the whole 6x9
    crops = [[{"crop": {"size": [3, 6], "at": at}}], [{"crop": {"size": [3, 6]}}]]
    got = preprocess(x, _input([{"views": {"transforms": crops, "order": "sample-major"}}]))
    left = 2 if at == "center" else left
    np.testing.assert_array_equal(got[:, 0], x[..., top : top + 3, left : left + 6])
    np.testing.assert_array_equal(got[:, 1], x[..., 2:5, 2:8])


def test_views_past_what_a_run_keeps_are_refused_before_they_are_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pinbench.worker import row_steps

    monkeypatch.setattr(row_steps, "MAX_VIEW_VALUES", 1000)
    spec = _input([{"views": {"transforms": FLIPS, "order": "view-major"}}])
    preprocess(np.zeros((10, 25), np.float32), spec)  # 4 x 250 values: at the bound
    with pytest.raises(PipelineError, match=r"the views of 10 samples hold 1040 values or"):
        preprocess(np.zeros((10, 26), np.float32), spec)


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ([{"take": {"start": 0, "stop": 31}}], r"takes \[0, 31\) of each sample's last axis"),
        ([{"reshape": {"shape": [7, 4]}}], r"\[30\] per sample \(30 values\) cannot be \[7, 4\]"),
        ([{"views": {"transforms": [[], [{"flip": {"axis": 1}}]], "order": "view-major"}}],
         r"view 1 flips axis 1 of a sample of 1 axes"),
        ([{"views": {"transforms": [[], [{"crop": {"size": [2, 2]}}]], "order": "view-major"}}],
         r"view 1 crops a sample's last two axes; it has 1"),
        ([{"dtype": {"to": "int8"}}, {"views": {"transforms": [[], [{"negate": {}}]],
                                                "order": "view-major"}}],
         r"view 1 negates -128, which int8 cannot hold negated"),
    ],
)  # fmt: skip
def test_a_step_that_does_not_fit_the_samples_is_refused_naming_both(
    steps: list[dict[str, Any]], message: str
) -> None:
    x = np.zeros((2, 30), np.float32)
    x[1, 3] = -128
    with pytest.raises(PipelineError, match=message):
        preprocess(x, _input(steps))


# ---------------------------------------------------------------- the manifest's rules


def _npy(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    return buf.getvalue()


def _model_doc(root: Path, inputs: list[Any], outputs: list[Any]) -> dict[str, Any]:
    return {
        "kind": "model", "name": "test/viewed", "version": "1.0.0", "format": "onnx",
        "framework": {"name": "onnxruntime", "range": "^1"},
        "files": write_files(root, {"m.onnx": b"not read"}),
        "inputs": inputs, "outputs": outputs,
    }  # fmt: skip


VIEWS = {"views": {"transforms": [[], [{"negate": {}}]], "order": "view-major"}}


@pytest.mark.parametrize(
    ("inputs", "outputs", "message"),
    [
        ([{"name": "x", "steps": [VIEWS, {"dtype": {"to": "float32"}}]}],
         [{"name": "y", "views": "mean"}], "views is step 1 of 2; it must be the last"),
        ([{"name": "x", "steps": [VIEWS]}], [{"name": "y"}],
         "inputs have views (2 rows per sample); say how its rows become one answer"),
        ([{"name": "x", "steps": [VIEWS]}], [],
         "inputs have views: declare the outputs"),
        ([{"name": "x"}], [{"name": "y", "views": "max"}],
         "output 'y' declares views: max, but no input has a views step"),
        ([{"name": "x", "steps": [VIEWS]},
          {"name": "z", "steps": [{"views": {"transforms": [[], [], []], "order": "view-major"}}]}],
         [{"name": "y", "views": "mean"}], "inputs' views disagree ('x': 2 view-major, 'z': 3"),
        ([{"name": "x", "steps": [VIEWS]}, {"name": "s", "shape": [4], "state": {"batch_axis": 0}}],
         [{"name": "y", "views": "mean"}], "input 's' is streamed or a state"),
        ([{"name": "x", "steps": [{"views": {"transforms": [[]], "order": "view-major"}}]}],
         [{"name": "y", "views": "mean"}], "length >= 2"),
        ([{"name": "x", "steps": [{"take": {"start": 4, "stop": 4}}]}], [],
         "take: stop 4 must be above start 4"),
        ([{"name": "x", "steps": [VIEWS]}],
         [{"name": "y", "views": "mean", "steps": [{"transpose": {"perm": [1, 0]}}]}],
         "output 'y' has a transpose step: views reduce an output's rows along its first axis"),
        ([{"name": "x", "steps": [{"views": {"transforms": [[{"negate": {}, "flip": {"axis": 0}}],
                                                            []], "order": "view-major"}}]}],
         [{"name": "y", "views": "mean"}], "a view's transform has exactly one of"),
    ],
)  # fmt: skip
def test_views_that_do_not_say_what_they_mean_are_refused_at_publish(
    tmp_path: Path, inputs: list[Any], outputs: list[Any], message: str
) -> None:
    with pytest.raises(ManifestError) as info:
        parse_manifest(_model_doc(tmp_path, inputs, outputs))
    assert message in str(info.value)


# ---------------------------------------------------------------- runs


def _weighted_model(root: Path, name: str, d: int) -> dict[str, Any]:
    """An ONNX model answering ``x * w`` with ``w = 1..d``: a flipped row answers otherwise."""
    from onnx import TensorProto, helper

    w = helper.make_tensor("w", TensorProto.FLOAT, [d], [float(i + 1) for i in range(d)])
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "w"], ["y"])],
        "weighted",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", d])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", d])],
        [w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return {
        "kind": "model", "name": name, "version": "1.0.0", "format": "onnx",
        "framework": {"name": "onnxruntime", "range": "^1"},
        "files": write_files(root, {"weighted.onnx": model.SerializeToString()}),
    }  # fmt: skip


def _labelled(root: Path, name: str, x: np.ndarray, classes: int) -> dict[str, Any]:
    labels = (np.arange(len(x)) % classes).astype(np.int64)
    return {
        "kind": "dataset", "name": name, "version": "1.0.0",
        "data": {"format": "npy", "path": "x.npy"},
        "labels": {"format": "class-index-npy", "path": "labels.npy", "classes": classes},
        "files": write_files(root, {"x.npy": _npy(x), "labels.npy": _npy(labels)}),
    }  # fmt: skip


def _answers(
    tmp_path: Path, catalog_dir: Path, model: Any, dataset: Any, batch_size: int
) -> tuple[dict[str, Any], np.ndarray]:
    out = tmp_path / "outputs.npy"  # Offline: LoadGen issues every sample, cut in batches
    shown = accuracy_run(
        tmp_path, catalog_dir, model, dataset, batch_size=batch_size, outputs=out, name="Offline"
    )
    return shown, np.load(out, allow_pickle=False)


@pytest.mark.parametrize("order", ["view-major", "sample-major"])
@pytest.mark.parametrize("reduce", ["mean", "max"])
def test_a_models_rows_per_sample_are_reduced_as_declared(
    tmp_path: Path, catalog_dir: Path, order: str, reduce: str
) -> None:
    x = np.random.default_rng(86).standard_normal((5, 6)).astype(np.float32)
    model = _weighted_model(tmp_path / "m", "test/weighted", 6)
    views = [[], [{"flip": {"axis": -1}}], [{"negate": {}}]]
    model["inputs"] = [{"name": "x", "shape": [6],
                        "steps": [{"views": {"transforms": views, "order": order}}]}]  # fmt: skip
    model["outputs"] = [{"name": "y", "type": "classification", "views": reduce}]
    shown, got = _answers(tmp_path, catalog_dir, model, _labelled(tmp_path / "d", "t/x", x, 6), 2)
    assert shown["status"] == "succeeded", shown.get("error")
    w = np.arange(1, 7, dtype=np.float32)
    rows = np.stack([x * w, x[:, ::-1] * w, -x * w])  # each view's answers, (3, 5, 6)
    want = rows.mean(0) if reduce == "mean" else rows.max(0)
    np.testing.assert_allclose(got.reshape(5, 6), want, rtol=1e-6)


def test_a_model_said_to_reduce_its_rows_that_does_not_is_refused_naming_the_output(
    tmp_path: Path, catalog_dir: Path
) -> None:
    x = np.zeros((4, 6), np.float32)
    model = _weighted_model(tmp_path / "m", "test/weighted", 6)
    model["inputs"] = [{"name": "x", "shape": [6], "steps": [VIEWS]}]
    model["outputs"] = [{"name": "y", "type": "classification", "views": "model"}]
    dataset = _labelled(tmp_path / "d", "t/x", x, 6)
    with pytest.raises(EvaluationFailed) as info:
        _answers(tmp_path, catalog_dir, model, dataset, 2)
    assert (
        "output 'y': `views: model` says the model answers one row per sample, but it answered "
        "[4, 6] for 2 samples (4 rows)"
    ) in str(info.value)


# ---------------------------------------------------------------- ICLabel, as its package runs it


def _iclabel_features(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Features in the package's own layout (``get_iclabel_features``): maps ``(32, 32, 1, n)``,
    spectra and autocorrelations ``(1, 100, 1, n)``."""
    rng = np.random.default_rng(2019)
    topo = rng.standard_normal((32, 32, 1, n)).astype(np.float32)
    psd = rng.uniform(-0.5, 1.0, (1, 100, 1, n)).astype(np.float32)
    autocorr = rng.uniform(-1.0, 1.0, (1, 100, 1, n)).astype(np.float32)
    return topo, psd, autocorr


def test_iclabel_runs_four_views_a_component_equal_to_its_package(
    tmp_path: Path, catalog_dir: Path
) -> None:
    from mne_icalabel.iclabel.network import run_iclabel  # type: ignore[import-untyped]

    n = 7
    topo, psd, autocorr = _iclabel_features(n)
    # one row of features per component: the map (NCHW, 1024 values), spectrum, autocorrelation
    rows = np.concatenate(
        [a.transpose(3, 2, 0, 1).reshape(n, -1) for a in (topo, psd, autocorr)], axis=1
    )
    onnx = package_file("mne-icalabel", ICLABEL)
    part = [("topo", 0, 1024, [1, 32, 32]), ("psds", 1024, 1124, [1, 1, 100]),
            ("autocorr", 1124, 1224, [1, 1, 100])]  # fmt: skip
    inputs: list[dict[str, Any]] = [
        {"name": name, "shape": shape,
         "steps": [{"take": {"start": start, "stop": stop}}, {"reshape": {"shape": shape}}]}
        for name, start, stop, shape in part
    ]  # fmt: skip
    inputs[0]["steps"].append({"views": {"transforms": FLIPS, "order": "view-major"}})
    model = {
        "kind": "model", "name": "eeg/iclabel", "version": "1.0.0", "format": "onnx",
        "framework": {"name": "onnxruntime", "range": "^1"},
        "files": write_files(tmp_path / "m", {"ICLabelNet.onnx": onnx.read_bytes()}),
        "inputs": inputs,
        "outputs": [{"name": "labels", "type": "classification", "views": "model"}],
    }  # fmt: skip
    dataset = _labelled(tmp_path / "d", "eeg/components", rows, 7)
    shown, got = _answers(tmp_path, catalog_dir, model, dataset, 3)  # batches of 3, 3 and 1
    assert shown["status"] == "succeeded", shown.get("error")
    package = run_iclabel(topo, psd, autocorr, backend="onnx")
    assert got.shape == package.shape == (n, 7)
    np.testing.assert_allclose(got, package, rtol=0, atol=1e-6)
    np.testing.assert_allclose(got, run_iclabel(topo, psd, autocorr, backend="torch"), atol=1e-5)


def _pngs(folder: Path, count: int) -> list[tuple[str, Path]]:
    from PIL import Image

    rng = np.random.default_rng(5)
    out = []
    for i in range(count):
        path = folder / f"{i}.png"
        Image.fromarray(rng.integers(0, 255, (4, 6, 3), dtype=np.uint8)).save(path)
        out.append((path.name, path))
    return out


def test_views_of_image_files_are_bounded_over_the_whole_dataset_and_crop_channels_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files are preprocessed one at a time: the bound on what views keep counts them all; and
    a crop view of images before a channels-first layout would cut width and channels."""
    from pinbench.worker import row_steps
    from pinbench.worker.pipeline import preprocess_files

    files = _pngs(tmp_path, 5)
    crop = [[{"crop": {"size": [2, 2]}}], [{"crop": {"size": [2, 2], "at": "top_left"}}]]
    views: dict[str, Any] = {"views": {"transforms": crop, "order": "view-major"}}
    steps: list[dict[str, Any]] = [{"decode": {}}, {"layout": {"to": "NCHW"}}, views]
    got = preprocess_files(files, "images", _input(steps))
    assert got.shape == (5, 2, 3, 2, 2)  # channels kept, 2x2 of the 4x6 height and width
    with pytest.raises(PipelineError, match=r"images are \(H, W, C\) until a `layout: NCHW`"):
        preprocess_files(files, "images", _input([{"decode": {}}, views]))
    monkeypatch.setattr(row_steps, "MAX_VIEW_VALUES", 100)  # 2 views x 12 values a file
    with pytest.raises(PipelineError, match=r"the views of 5 samples hold 120 values or more"):
        preprocess_files(files, "images", _input(steps))
