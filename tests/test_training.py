"""Training benchmarks (pinbench.training): the digits CNN trained in PyTorch and TensorFlow.

PyTorch runs in this process. TensorFlow fixes its thread pools the first time it runs in a
process (other tests may already have run it here), so its deterministic runs happen in a
fresh interpreter (``_TF_SCRIPT``) that writes each result as JSON; the tests then read both
frameworks' results from one table.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt
import pytest

from pinbench.errors import InvalidDocument, UserError
from pinbench.specs.training import TrainingSpec, parse_spec
from pinbench.training.data import TrainData, TrainModel
from pinbench.training.errors import (
    InvalidData,
    InvalidModel,
    InvalidThreads,
    TrainingDiverged,
    UnknownFramework,
)
from pinbench.training.result import TrainingResult
from pinbench.training.run import train

FRAMEWORKS = ["torch", "tensorflow"]
VALIDATION = "sklearn/digits@test"
TARGET = 0.9
DIVERGE_SCALE = 1e15
"""Inputs this large make the logits overflow after a step at the largest learning rate."""


def _spec(**changes: Any) -> TrainingSpec:
    """The runs' common spec: batch 32, Adam at 0.01, top-1 0.9 within 5 epochs."""
    base = {
        "validation": VALIDATION,
        "epochs": 5,
        "target_top1": TARGET,
        "batch_size": 32,
        "learning_rate": 0.01,
    }
    return TrainingSpec(**{**base, **changes})


# name -> spec changes; every framework runs each (``init_weights`` starts from "target"'s
# final weights, ``diverged`` uses inputs scaled by DIVERGE_SCALE).
RUNS: dict[str, dict[str, Any]] = {
    "target": {},
    "seed0_a": {"epochs": 1, "target_top1": None},
    "seed0_b": {"epochs": 1, "target_top1": None},
    "seed1": {"epochs": 1, "target_top1": None, "seed": 1},
    "unreached": {"epochs": 1, "target_top1": 1.0},
    "init_weights": {"epochs": 1, "target_top1": None, "init": "weights"},
    "diverged": {"optimizer": "sgd", "learning_rate": 10.0, "momentum": 0.9, "epochs": 2},
}


def digits_data(scale: float = 1.0) -> TrainData:
    from pinbench.catalog.digits import digits_split

    x_train, x_val, y_train, y_val = digits_split()

    def inputs(x: npt.NDArray[Any]) -> npt.NDArray[np.float32]:
        return (x.astype(np.float32) / 16.0 * np.float32(scale))[:, None, :, :]

    return TrainData(inputs(x_train), y_train, inputs(x_val), y_val)


def start_model(framework: str, folder: Path) -> TrainModel:
    """The untrained digits CNN written as the framework's model file under ``folder``."""
    if framework == "torch":
        import torch

        from pinbench.catalog.torch_files import save_safetensors
        from pinbench.worker.predictors.torch.architectures import digits_cnn

        torch.manual_seed(123)
        path = folder / "start.safetensors"
        save_safetensors(path, dict(digits_cnn().state_dict()), "digits-cnn")
        return TrainModel("safetensors", "digits-cnn", {"digits-cnn.safetensors": path})
    from pinbench.worker.predictors.tensorflow.architectures import digits_cnn_keras

    path = folder / "start.keras"
    digits_cnn_keras().save(path)
    return TrainModel("keras", None, {"digits-cnn.keras": path})


def run_all(framework: str, folder: Path) -> dict[str, TrainingResult | TrainingDiverged]:
    """Every run of RUNS on ``framework``, with the start model written under ``folder``."""
    model = start_model(framework, folder)
    data = digits_data()
    out: dict[str, TrainingResult | TrainingDiverged] = {}
    for name, changes in RUNS.items():
        used, start = data, model
        if name == "init_weights":
            target = out["target"]
            assert isinstance(target, TrainingResult)
            suffix = "." + target.weights_format
            path = folder / f"trained{suffix}"
            path.write_bytes(target.weights)
            start = TrainModel(model.format, model.architecture, {f"trained{suffix}": path})
        if name == "diverged":
            used = digits_data(DIVERGE_SCALE)
        try:
            out[name] = train(_spec(**changes), framework, start, used, say=lambda _: None)
        except TrainingDiverged as exc:
            out[name] = exc
    return out


_TF_SCRIPT = """
import sys
from pathlib import Path

import msgspec
import tensorflow as tf

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)

from pinbench.training.result import TrainingResult
from tests.test_training import run_all

folder = Path(sys.argv[1])
for name, got in run_all("tensorflow", folder).items():
    if isinstance(got, TrainingResult):
        data = msgspec.json.encode(got)
    else:
        data = msgspec.json.encode({"epoch": got.epoch, "step": got.step, "message": str(got)})
    (folder / f"{name}.json").write_bytes(data)
"""

_TF_LATE = """
import tensorflow as tf

tf.constant(1.0) + 1  # TensorFlow has run with its default thread pools
from pathlib import Path
import sys
from pinbench.training.run import train
from tests.test_training import _spec, digits_data, start_model

try:
    train(_spec(epochs=1), "tensorflow", start_model("tensorflow", Path(sys.argv[1])),
          digits_data())
except Exception as exc:
    print(type(exc).__name__, exc)
"""


def _python(code: str, folder: Path) -> str:
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-c", code, str(folder)],
        capture_output=True,
        text=True,
        cwd=root,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.fixture(scope="module")
def runs(
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, dict[str, TrainingResult | dict[str, Any]]]:
    """framework -> run name -> result (a TrainingDiverged as {epoch, step, message})."""
    torch_runs: dict[str, TrainingResult | dict[str, Any]] = {}
    for name, got in run_all("torch", tmp_path_factory.mktemp("torch")).items():
        torch_runs[name] = (
            got
            if isinstance(got, TrainingResult)
            else {"epoch": got.epoch, "step": got.step, "message": str(got)}
        )
    folder = tmp_path_factory.mktemp("tensorflow")
    _python(_TF_SCRIPT, folder)
    tf_runs: dict[str, TrainingResult | dict[str, Any]] = {}
    for name in RUNS:
        raw = (folder / f"{name}.json").read_bytes()
        tf_runs[name] = (
            msgspec.json.decode(raw)
            if name == "diverged"
            else msgspec.json.decode(raw, type=TrainingResult)
        )
    return {"torch": torch_runs, "tensorflow": tf_runs}


def _result(runs: dict[str, dict[str, Any]], framework: str, name: str) -> TrainingResult:
    got = runs[framework][name]
    assert isinstance(got, TrainingResult), got
    return got


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_reaches_the_target_and_times_only_the_training_steps(
    runs: dict[str, dict[str, Any]], framework: str
) -> None:
    r = _result(runs, framework, "target")
    assert r.framework == framework
    assert r.reached_epoch is not None
    reached = r.epochs[r.reached_epoch - 1]
    assert reached.val_top1 >= TARGET
    assert all(e.val_top1 < TARGET for e in r.epochs[: r.reached_epoch - 1])
    assert len(r.epochs) == r.reached_epoch  # training stops at the reaching epoch
    assert [e.epoch for e in r.epochs] == list(range(1, r.reached_epoch + 1))
    assert r.time_to_accuracy_s == sum(e.train_s for e in r.epochs[: r.reached_epoch])
    assert r.eval_time_s == sum(e.eval_s for e in r.epochs) > 0  # measured, and apart
    assert r.final_top1 == reached.val_top1 and r.best_top1 == max(e.val_top1 for e in r.epochs)
    for e in r.epochs:
        assert e.samples_per_s == pytest.approx(1347 / e.train_s)  # the digits train split
        assert e.train_loss > 0 and e.val_loss > 0
    metrics = r.metrics()
    assert set(metrics) == {
        "time_to_accuracy_s", "train_time_s", "eval_time_s", "throughput_sps",
        "final_top1", "best_top1", "epochs_count", "final_loss",
    }  # fmt: skip
    assert metrics["epochs_count"] == r.reached_epoch
    assert metrics["final_loss"] == r.epochs[-1].val_loss
    details = r.details()
    assert details["framework"] == framework
    assert details["weights_format"] == ("safetensors" if framework == "torch" else "keras")
    assert details["reached_epoch"] == r.reached_epoch and details["deterministic"] is True
    assert details["epochs"][0] == msgspec.to_builtins(r.epochs[0])
    assert "weights" not in details
    assert r.unmet_target() is None


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_deterministic_runs_give_the_same_weights_and_a_new_seed_others(
    runs: dict[str, dict[str, Any]], framework: str
) -> None:
    a, b, other = (_result(runs, framework, n) for n in ("seed0_a", "seed0_b", "seed1"))
    assert a.weights_sha256 == b.weights_sha256
    assert a.weights == b.weights
    assert a.epochs[0].train_loss == b.epochs[0].train_loss
    assert other.weights_sha256 != a.weights_sha256


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_target_not_reached_has_no_time_to_accuracy(
    runs: dict[str, dict[str, Any]], framework: str
) -> None:
    r = _result(runs, framework, "unreached")
    assert r.reached_epoch is None and r.time_to_accuracy_s is None
    assert "time_to_accuracy_s" not in r.metrics()
    assert r.details()["reached_epoch"] is None
    assert r.unmet_target() == (
        f"target top1 1 not reached after 1 epochs (best {round(r.best_top1, 4):g})"
    )


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_diverging_loss_is_an_error_naming_the_epoch_and_step(
    runs: dict[str, dict[str, Any]], framework: str
) -> None:
    got = runs[framework]["diverged"]
    assert isinstance(got, dict), "training with overflowing logits did not diverge"
    assert got["epoch"] == 1 and got["step"] is not None
    assert f"loss became NaN at epoch 1, step {got['step']}" in got["message"]
    assert "lower the learning rate" in got["message"]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_init_weights_starts_from_the_artifacts_weights(
    runs: dict[str, dict[str, Any]], framework: str
) -> None:
    fresh = _result(runs, framework, "seed0_a")  # same spec, init: seed
    trained = _result(runs, framework, "init_weights")
    assert trained.epochs[0].train_loss < fresh.epochs[0].train_loss / 2
    assert trained.epochs[0].val_top1 >= TARGET


def test_the_saved_weights_load_in_the_predictors_with_the_same_top1(
    runs: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    from pinbench.worker.predictors.config import ModelFiles, PredictorOptions
    from pinbench.worker.predictors.tensorflow.predictor import TensorFlowPredictor
    from pinbench.worker.predictors.torch.predictor import TorchPredictor

    data = digits_data()
    for framework, predictor, fmt, arch in (
        ("torch", TorchPredictor(), "safetensors", "digits-cnn"),
        ("tensorflow", TensorFlowPredictor(), "keras", None),
    ):
        r = _result(runs, framework, "target")
        path = tmp_path / f"trained.{fmt}"
        path.write_bytes(r.weights)
        predictor.open(
            ModelFiles(files={path.name: path}, format=fmt, architecture=arch),
            PredictorOptions(),
        )
        try:
            (logits,) = predictor.predict(data.x_val).values()
        finally:
            predictor.close()
        assert float(np.mean(logits.argmax(1) == data.y_val)) == r.final_top1, framework


def test_tensorflow_refuses_determinism_once_its_threads_are_fixed(tmp_path: Path) -> None:
    out = _python(_TF_LATE, tmp_path)
    assert out.startswith("ThreadsFixed tensorflow has already run in this process"), out
    assert "run the training in a fresh process" in out


# --- bad input -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"momentum": 0.9}, "momentum is an sgd setting"),  # adam takes no momentum
        ({"learning_rate": 0.0}, "learning_rate must be between 0 (exclusive) and 10, got 0.0"),
        ({"learning_rate": -1.0}, "learning_rate must be between 0 (exclusive) and 10"),
        ({"learning_rate": 11.0}, "learning_rate must be between 0 (exclusive) and 10, got 11.0"),
        ({"optimizer": "sgd", "momentum": 1.0}, "momentum must be between 0 and 1 (exclusive)"),
        ({"weight_decay": -0.1}, "weight_decay must be between 0 and 1 (exclusive), got -0.1"),
        ({"batch_size": 0}, "batch_size must be between 1 and 65536, got 0"),
        ({"epochs": 1001}, "epochs must be between 1 and 1000, got 1001"),
        ({"target_top1": 0.0}, "target_top1 must be between 0 (exclusive) and 1, got 0.0"),
        ({"target_top1": 1.5}, "target_top1 must be between 0 (exclusive) and 1, got 1.5"),
        ({"seed": -1}, "seed must be between 0 and 2147483647, got -1"),
        ({"validation": " "}, "validation must name the validation split"),
    ],
)
def test_a_bad_spec_names_the_field(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        _spec(**changes)
    with pytest.raises(InvalidDocument, match=message.split(" must")[0].split(" is")[0]):
        parse_spec({"validation": VALIDATION, "target_top1": 0.9, **changes})


def test_parse_spec_refuses_unknown_fields_and_wrong_types() -> None:
    assert parse_spec({"validation": VALIDATION}) == TrainingSpec(validation=VALIDATION)
    with pytest.raises(InvalidDocument, match="lr"):
        parse_spec({"validation": VALIDATION, "lr": 0.1})
    with pytest.raises(InvalidDocument, match="optimizer"):
        parse_spec({"validation": VALIDATION, "optimizer": "rmsprop"})
    with pytest.raises(InvalidDocument, match="init"):
        parse_spec({"validation": VALIDATION, "init": "zeros"})


@pytest.fixture(scope="module")
def torch_start(tmp_path_factory: pytest.TempPathFactory) -> TrainModel:
    return start_model("torch", tmp_path_factory.mktemp("start"))


def _shorter(data: TrainData) -> TrainData:
    return TrainData(data.x_train, data.y_train[:-1], data.x_val, data.y_val)


def _labels_beyond(data: TrainData) -> TrainData:
    y = data.y_train.copy()
    y[0] = 10
    return TrainData(data.x_train, y, data.x_val, data.y_val)


def _float64(data: TrainData) -> TrainData:
    return TrainData(data.x_train.astype(np.float64), data.y_train, data.x_val, data.y_val)


def _small_images(data: TrainData) -> TrainData:
    return TrainData(
        data.x_train[:, :, :4, :4].copy(), data.y_train, data.x_val[:, :, :4, :4].copy(),
        data.y_val,
    )  # fmt: skip


def _pickle(model: TrainModel) -> TrainModel:
    return TrainModel("torch-pickle", None, {"model.pt": next(iter(model.paths.values()))})


def _unknown_architecture(model: TrainModel) -> TrainModel:
    return TrainModel("safetensors", "lenet", model.paths)


def _no_file(model: TrainModel) -> TrainModel:
    return TrainModel("safetensors", "digits-cnn", {})


def _same(x: Any) -> Any:
    return x


_ModelChange = Callable[[TrainModel], TrainModel]
_DataChange = Callable[[TrainData], TrainData]
BAD_INPUT: list[
    tuple[str, str, _ModelChange, _DataChange, dict[str, Any], type[UserError], str]
] = [
    # (why, framework, model change, data change, train() options, error, message)
    ("pickles are never loaded", "torch", _pickle, _same, {}, InvalidModel,
     "got format 'torch-pickle' (pickled modules are never loaded)"),
    ("architecture not shipped", "torch", _unknown_architecture, _same, {}, InvalidModel,
     "unknown architecture 'lenet'; known: digits-cnn, resnet50"),
    ("no weights file", "torch", _no_file, _same, {}, InvalidModel,
     "expected exactly one .safetensors file"),
    ("safetensors is not a Keras model", "tensorflow", _same, _same, {}, InvalidModel,
     "training takes a .keras model, got format 'safetensors'"),
    ("labels beyond the model's classes", "torch", _same, _labels_beyond, {}, InvalidData,
     "y_train labels run from 0 to 10, but the model has 10 output classes"),
    ("one label short", "torch", _same, _shorter, {}, InvalidData,
     "y_train has 1346 labels but x_train has 1347 samples"),
    ("float64 inputs", "torch", _same, _float64, {}, InvalidData, "x_train must be float32"),
    ("inputs the architecture cannot take", "torch", _same, _small_images, {}, InvalidData,
     "x_train samples of shape (1, 4, 4) do not fit digits-cnn"),
    ("unknown framework", "jax", _same, _same, {}, UnknownFramework,
     "no training benchmarks for framework 'jax'; known: tensorflow, torch"),
    ("deterministic means one thread", "torch", _same, _same, {"threads": 2}, InvalidThreads,
     "threads = 2 is not allowed: a deterministic run uses one thread"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("why", "framework", "model_change", "data_change", "options", "error", "message"),
    BAD_INPUT,
    ids=[case[0] for case in BAD_INPUT],
)
def test_bad_input_is_a_clear_error_before_any_step(
    torch_start: TrainModel,
    why: str,
    framework: str,
    model_change: Callable[[TrainModel], TrainModel],
    data_change: Callable[[TrainData], TrainData],
    options: dict[str, Any],
    error: type[UserError],
    message: str,
) -> None:
    steps: list[None] = []
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        train(
            _spec(),
            framework,
            model_change(torch_start),
            data_change(digits_data()),
            check=lambda: steps.append(None),
            **options,
        )
    assert steps == []


def test_weights_that_do_not_fit_the_architecture_are_refused(
    torch_start: TrainModel, tmp_path: Path
) -> None:
    import torch

    from pinbench.catalog.torch_files import save_safetensors

    path = tmp_path / "other.safetensors"
    save_safetensors(path, {"0.weight": torch.zeros(3)}, "digits-cnn")
    model = TrainModel("safetensors", "digits-cnn", {"w.safetensors": path})
    with pytest.raises(InvalidModel, match="weights do not load"):
        train(_spec(init="weights"), "torch", model, digits_data())


def test_check_stops_training_and_torch_settings_are_restored(torch_start: TrainModel) -> None:
    import torch

    threads = torch.get_num_threads()
    calls: list[None] = []
    lines: list[str] = []

    def check() -> None:
        calls.append(None)
        if len(calls) == 50:  # 43 steps per epoch at batch 32: stops in epoch 2
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(_spec(target_top1=None), "torch", torch_start, digits_data(), check=check,
              say=lines.append)  # fmt: skip
    assert len(calls) == 50
    assert len(lines) == 1 and lines[0].startswith("epoch 1/5: train loss ")
    assert torch.get_num_threads() == threads
    assert not torch.are_deterministic_algorithms_enabled()
