"""An ONNX model reads its own artifact's bytes and nothing else (issue 34, items 4, 7, 8).

Two walls, each tested alone. The external-data walk (``pinbench.artifacts.onnx_proto``)
visits every place ONNX can hold a tensor, and publishing and the run refuse with one check
(``pinbench.registry.onnx_files``). And every runner loads a model from a folder that holds its
own files and nothing else (``pinbench.worker.model_folder``), so a reference the walk did
not see still finds nothing of another artifact.

The models are built here with ``onnx.helper``. The foreign file is another artifact's blob in
the store, in the model's own shard folder (the model's bytes are varied until its digest
shares the blob's first two hex digits), named by its digest: what the attack did.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from onnx import AttributeProto, GraphProto, ModelProto, NodeProto, TensorProto, helper
from onnx import numpy_helper as nh
from sqlalchemy import func, select

from pinbench import catalog as builtin
from pinbench.artifacts.digest import Digest
from pinbench.artifacts.onnx_proto import external_locations, read_onnx
from pinbench.db.models import Artifact
from pinbench.errors import UserError
from pinbench.evaluator.records.run_list import list_runs
from pinbench.evaluator.records.run_view import show_run
from pinbench.evaluator.run import run_lockfile
from pinbench.evaluator.runners import docker_parts
from pinbench.evaluator.runners.process import EvaluationFailed, write_job
from pinbench.evaluator.runners.store_files import store_paths
from pinbench.evaluator.warm import WarmPool
from pinbench.registry import service
from pinbench.registry.formats import FormatMismatch
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.manifest import parse_manifest
from pinbench.registry.names import Kind
from pinbench.registry.publish import publish
from pinbench.registry.request import parse_request
from pinbench.worker.main import main as worker_main
from pinbench.worker.model_folder import confined, materialise
from pinbench.worker.predictors import predictor_class
from pinbench.worker.predictors.base import ModelLoadError
from pinbench.worker.predictors.config import ModelFiles, PredictorOptions
from pinbench.workspace import Workspace
from tests.helpers import Cli, published_workspace, sha, write_files

NAME = "vision/confined"
X = {"name": "x", "element_type": "float32", "shape": [1, 8, 8]}
STEPS = [{"normalize": {"mean": [0.0], "std": [16.0]}}, {"layout": {"to": "NCHW"}}]
OPSETS = [helper.make_opsetid("", 17)]
LOCAL = "local.functions"


def quiet(text: str) -> None:
    pass


# ---------------------------------------------------------------- models


def _external(name: str, location: str, dtype: int = TensorProto.FLOAT) -> TensorProto:
    """Ten values of ``dtype`` kept at offset 0 of the file ``location``."""
    size = 8 if dtype == TensorProto.INT64 else 4
    tensor = TensorProto(name=name, data_type=dtype, dims=[10])
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"), ("length", str(10 * size))):
        tensor.external_data.add(key=key, value=value)
    return tensor


def _model(nodes: list[NodeProto], inits: tuple[TensorProto, ...] = (), **extra: Any) -> ModelProto:
    """``x (N, 1, 8, 8) -> Flatten -> Gemm (zeros) -> z (N, 10)``, then ``nodes`` make
    ``logits (N, 10)`` from ``z``."""
    head = [
        helper.make_node("Flatten", ["x"], ["flat"], axis=1),
        helper.make_node("Gemm", ["flat", "W", "b"], ["z"], transB=1),
    ]
    weights = [
        nh.from_array(np.zeros((10, 64), np.float32), "W"),
        nh.from_array(np.zeros(10, np.float32), "b"),
    ]
    graph = helper.make_graph(
        head + nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 8, 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])],
        initializer=weights + list(inits),
        sparse_initializer=extra.pop("sparse", None),
    )
    model = helper.make_model(graph, opset_imports=OPSETS + extra.pop("opsets", []), **extra)
    model.ir_version = 8
    return model


def _add(c: str = "c", **attributes: Any) -> NodeProto:
    return helper.make_node("Add", ["z", c], ["logits"], **attributes)


def _indices() -> TensorProto:
    return nh.from_array(np.arange(10, dtype=np.int64), "indices")


def _sparse(values: TensorProto, indices: TensorProto | None = None) -> Any:
    return helper.make_sparse_tensor(values, indices or _indices(), [10])


def _branch(name: str, location: str) -> GraphProto:
    """A graph with no inputs whose output ``name`` is an external initializer."""
    return helper.make_graph(
        [helper.make_node("Identity", [f"{name}_data"], [name])],
        name,
        [],
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, [10])],
        initializer=[_external(f"{name}_data", location)],
    )


def _zeros_branch(name: str) -> GraphProto:
    zeros = nh.from_array(np.zeros(10, np.float32), f"{name}_zeros")
    return helper.make_graph(
        [helper.make_node("Constant", [], [name], value=zeros)],
        name,
        [],
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, [10])],
    )


def _if(output: str, then: GraphProto, otherwise: GraphProto) -> NodeProto:
    return helper.make_node("If", ["cond"], [output], then_branch=then, else_branch=otherwise)


COND = nh.from_array(np.array(True), "cond")
ONES = np.ones(10, np.float32)


def _initializer(location: str) -> ModelProto:
    return _model([_add()], (_external("c", location),))


def _function(nodes: list[NodeProto], defaults: tuple[AttributeProto, ...] = ()) -> Any:
    """``F(X) -> Y`` in domain ``local.functions``, Y = X + c where ``nodes`` make ``c``;
    ``defaults``: attributes with their default values (``attribute_proto``)."""
    function = helper.make_function(
        LOCAL, "F", ["X"], ["Y"], [*nodes, helper.make_node("Add", ["X", "c"], ["Y"])], OPSETS
    )
    function.attribute_proto.extend(defaults)
    return function


def _calling(function: Any) -> ModelProto:
    return _model(
        [helper.make_node("F", ["z"], ["logits"], domain=LOCAL)],
        functions=[function],
        opsets=[helper.make_opsetid(LOCAL, 1)],
    )


def _function_default(location: str) -> ModelProto:
    """The attack: a function's default attribute (``attribute_proto``) is a tensor with
    external data; the call does not set it, so ONNX Runtime loads the default."""
    ref = AttributeProto(name="value", ref_attr_name="w", type=AttributeProto.TENSOR)
    constant = helper.make_node("Constant", [], ["c"])
    constant.attribute.append(ref)
    return _calling(_function([constant], (helper.make_attribute("w", _external("w", location)),)))


def _training(field: str) -> Callable[[str], ModelProto]:
    def build(location: str) -> ModelProto:
        model = _model([_add("c")], (nh.from_array(np.zeros(10, np.float32), "c"),))
        info = model.training_info.add()
        getattr(info, field).CopyFrom(_branch("t", location))
        return model

    return build


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        out.append((value & 0x7F) | (0x80 if value > 0x7F else 0))
        value >>= 7
        if not value:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _split_tensor(location: str) -> bytes:
    """One Constant whose ``value`` attribute occurs twice in the node's bytes: protobuf
    merges the two, so the tensor is EXTERNAL (first part, location ``good.bin``) with a
    second location (second part, no flag) that every parser reads last."""
    first = helper.make_attribute("value", _external("c", "good.bin"))
    second = AttributeProto()
    second.t.external_data.add(key="location", value=location)
    node = NodeProto(op_type="Constant", output=["c"]).SerializeToString()
    node += _field(5, first.SerializeToString() + second.SerializeToString())
    model = _model([_add("c")]).SerializeToString()
    return bytes(model) + _field(7, _field(1, node))  # a second `graph`: merged into the first


def _bytes(build: Callable[[str], ModelProto]) -> Callable[[str], bytes]:
    return lambda location: bytes(build(location).SerializeToString())


# (place, the model's bytes given the location, other files it lists, run in the run tests:
# a place ONNX Runtime 1.31 loads external data from, checked in test_onnx_runtime_reads_...)
PLACES: list[tuple[str, Callable[[str], bytes], list[str], bool]] = [
    ("graph initializer", _bytes(_initializer), [], True),
    (
        "sparse initializer values",
        _bytes(lambda loc: _model([_add()], sparse=[_sparse(_external("c", loc))])),
        [],
        True,
    ),
    (
        "sparse initializer indices",
        _bytes(
            lambda loc: _model(
                [_add()],
                sparse=[
                    _sparse(
                        nh.from_array(ONES, "c"),
                        _external("i", loc, TensorProto.INT64),
                    )
                ],
            )
        ),
        [],
        False,
    ),
    (
        "node attribute t (Constant value)",
        _bytes(
            lambda loc: _model(
                [helper.make_node("Constant", [], ["c"], value=_external("c", loc)), _add()]
            )
        ),
        [],
        True,
    ),
    (
        "node attribute sparse_tensor (Constant sparse_value)",
        _bytes(
            lambda loc: _model(
                [
                    helper.make_node(
                        "Constant", [], ["c"], sparse_value=_sparse(_external("v", loc))
                    ),
                    _add(),
                ]
            )
        ),
        [],
        True,
    ),
    (
        "node attribute tensors",
        _bytes(
            lambda loc: _model(
                [_add("b", extra=[_external("e", loc)])]  # an attribute no operator reads
            )
        ),
        [],
        False,
    ),
    (
        "node attribute sparse_tensors",
        _bytes(lambda loc: _model([_add("b", extra=[_sparse(_external("e", loc))])])),
        [],
        False,
    ),
    (
        "subgraph g (an If branch)",
        _bytes(
            lambda loc: _model(
                [_if("c", _branch("then", loc), _zeros_branch("else")), _add()], (COND,)
            )
        ),
        [],
        True,
    ),
    (
        "subgraph in a subgraph (If in an If branch)",
        _bytes(
            lambda loc: _model(
                [
                    _if(
                        "c",
                        helper.make_graph(
                            [_if("inner", _branch("deep", loc), _zeros_branch("e2"))],
                            "outer",
                            [],
                            [helper.make_tensor_value_info("inner", TensorProto.FLOAT, [10])],
                        ),
                        _zeros_branch("else"),
                    ),
                    _add(),
                ],
                (COND,),
            )
        ),
        [],
        True,
    ),
    (
        "node attribute graphs",
        _bytes(lambda loc: _model([_add("b", bodies=[_branch("body", loc)])])),
        [],
        False,
    ),
    (
        "function body node",
        _bytes(
            lambda loc: _calling(
                _function([helper.make_node("Constant", [], ["c"], value=_external("c", loc))])
            )
        ),
        [],
        True,
    ),
    ("function default attribute", _bytes(_function_default), [], True),
    (
        "function default attribute holding a graph",
        _bytes(
            lambda loc: _calling(
                _function(
                    [helper.make_node("Constant", [], ["c"], value=nh.from_array(ONES))],
                    (helper.make_attribute("body", _branch("fd", loc)),),
                )
            )
        ),
        [],
        False,
    ),
    ("training_info initialization", _bytes(_training("initialization")), [], False),
    ("training_info algorithm", _bytes(_training("algorithm")), [], False),
    ("one tensor split over two occurrences", _split_tensor, ["good.bin"], False),
]
IDS = [p[0] for p in PLACES]
RUNS = [p for p in PLACES if p[3]]


@pytest.mark.parametrize("build", [p[1] for p in RUNS], ids=[p[0] for p in RUNS])
def test_onnx_runtime_reads_external_data_from_these_places(
    tmp_path: Path, build: Callable[[str], bytes]
) -> None:
    """Why each place matters: ONNX Runtime itself loads the file named there (here a file
    beside the model, with no check of pinbench's in the way)."""
    import onnxruntime as ort

    secret = np.arange(1, 11, dtype=np.float32)
    (tmp_path / "secret.bin").write_bytes(secret.tobytes())
    (tmp_path / "m.onnx").write_bytes(build("secret.bin"))
    session = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    (logits,) = session.run(["logits"], {"x": np.zeros((2, 1, 8, 8), np.float32)})
    assert np.array_equal(logits, np.stack([secret, secret]))  # zeros + the file's values


def _reference(model: ModelProto) -> set[str]:
    """What a parser loads, computed with onnx's own classes (protobuf has merged split
    fields): the last ``location`` of each EXTERNAL tensor, in every place ONNX holds one."""
    found: set[str] = set()

    def tensor(t: TensorProto) -> None:
        if t.data_location == TensorProto.EXTERNAL:
            found.add([e.value for e in t.external_data if e.key == "location"][-1])

    def sparse(s: Any) -> None:
        tensor(s.values)
        tensor(s.indices)

    def attribute(a: AttributeProto) -> None:
        for t in [a.t] * a.HasField("t") + list(a.tensors):
            tensor(t)
        for s in [a.sparse_tensor] * a.HasField("sparse_tensor") + list(a.sparse_tensors):
            sparse(s)
        for g in [a.g] * a.HasField("g") + list(a.graphs):
            graph(g)

    def graph(g: GraphProto) -> None:
        for t in g.initializer:
            tensor(t)
        for s in g.sparse_initializer:
            sparse(s)
        for n in g.node:
            for a in n.attribute:
                attribute(a)

    graph(model.graph)
    for f in model.functions:
        for n in f.node:
            for a in n.attribute:
                attribute(a)
        for a in f.attribute_proto:
            attribute(a)
    for info in model.training_info:
        graph(info.initialization)
        graph(info.algorithm)
    return found


@pytest.mark.parametrize(("build", "others"), [p[1:3] for p in PLACES], ids=IDS)
def test_the_walk_finds_external_data_in_every_place(
    tmp_path: Path, build: Callable[[str], bytes], others: list[str]
) -> None:
    data = build("secret.bin")
    (tmp_path / "m.onnx").write_bytes(data)
    ours = {location for _, location in external_locations(tmp_path / "m.onnx")}
    theirs = _reference(ModelProto.FromString(data))
    assert theirs == {"secret.bin"}  # the builder put it where a parser reads it
    assert theirs <= ours <= {"secret.bin", *others}


# ---------------------------------------------------------------- publish refuses


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory, catalog_dir: Path) -> Iterator[Workspace]:
    """The digits catalog published: other artifacts' blobs in the store. Refused publishes
    change nothing, so the tests that make them share it."""
    ws = published_workspace(tmp_path_factory.mktemp("confined"), catalog_dir)
    yield ws
    ws.close()


def _foreign(ws: Workspace) -> str:
    """The digest of another artifact's blob that a model could read: the store's largest."""
    return max(ws.store.iter_digests(), key=lambda d: ws.store.path(d).stat().st_size).hex


def _manifest(version: str, files: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "kind": "model",
        "name": NAME,
        "version": version,
        "format": "onnx",
        "framework": {"name": "onnxruntime", "range": "^1"},
        "files": files,
        "inputs": [{**X, "steps": STEPS}],
        "outputs": [{"name": "logits", "type": "classification"}],
    }


def _state(ws: Workspace) -> tuple[int, set[str], list[str]]:
    """What a refused publish must not change: rows, blobs, scratch."""
    with ws.transaction() as session:
        rows = int(session.scalar(select(func.count()).select_from(Artifact)) or 0)
    blobs = {d.hex for d in ws.store.iter_digests()}
    return rows, blobs, sorted(p.name for p in ws.store.tmp.iterdir())


def _files(root: Path, model: bytes, others: list[str]) -> list[dict[str, Any]]:
    return write_files(root, {"m.onnx": model, **{o: b"\x00" * 40 for o in others}})


@pytest.mark.parametrize(("build", "others"), [p[1:3] for p in PLACES], ids=IDS)
def test_publish_refuses_external_data_in_every_place(
    home: Workspace, tmp_path: Path, build: Callable[[str], bytes], others: list[str]
) -> None:
    foreign = _foreign(home)
    before = _state(home)
    files = _files(tmp_path, build(foreign), others)
    with pytest.raises(FormatMismatch) as refused:
        publish(home, parse_manifest(_manifest("1.0.0", files)), manifest_dir=tmp_path)
    assert f"keeps its data in {foreign!r}, which is not a file of the artifact" in str(
        refused.value
    )
    assert str(refused.value).startswith("file 'm.onnx': ")
    assert _state(home) == before


# (reason, the location, files the artifact lists beside m.onnx, what the error says)
LOCATIONS = [
    ("the model file itself", "m.onnx", [], "is the model file itself"),
    (
        "ONNX Runtime's in-memory marker, even listed",
        "*/_ORT_MEM_ADDR_/*",
        ["*/_ORT_MEM_ADDR_/*"],
        "'*' is refused",
    ),
    ("an absolute path", "/etc/passwd", [], "is not a relative path"),
    ("a climb out of the artifact", "../x.bin", [], "climbs out of the artifact"),
    ("a path that is not normalised", "./w.bin", ["w.bin"], "not a normalised path"),
    ("a control character", "w\x00.bin", ["w.bin"], "control character"),
    ("no location at all", "", [], "is not a relative path"),
]


@pytest.mark.parametrize(
    ("location", "others", "needle"), [c[1:] for c in LOCATIONS], ids=[c[0] for c in LOCATIONS]
)
def test_publish_refuses_a_location_that_is_no_other_file_of_the_artifact(
    home: Workspace, tmp_path: Path, location: str, others: list[str], needle: str
) -> None:
    before = _state(home)
    files = _files(tmp_path, _bytes(_initializer)(location), others)
    with pytest.raises(FormatMismatch, match=re.escape(needle)):
        publish(home, parse_manifest(_manifest("1.0.0", files)), manifest_dir=tmp_path)
    assert _state(home) == before


def test_a_listed_file_beside_the_model_publishes_and_runs(
    digits: Workspace, tmp_path: Path
) -> None:
    """The rule refuses only what lies outside: a listed sidecar in the model's folder."""
    values = np.arange(10, dtype=np.float32)
    model = _bytes(_initializer)("c.bin")
    files = write_files(tmp_path, {"net/m.onnx": model, "net/c.bin": values.tobytes()})
    publish(digits, parse_manifest(_manifest("1.0.0", files)), manifest_dir=tmp_path)
    outcome = run_lockfile(digits, _lock(digits, "1.0.0"), say=quiet)
    assert outcome.status == "succeeded"
    # Gemm of zeros plus c: every sample's argmax is class 9, so top-1 is the share of 9s
    _, _, _, y_test = builtin.digits_split()
    assert outcome.metrics["top1"] == float(np.mean(y_test == int(values.argmax())))


# ---------------------------------------------------------------- empty models (item 8)


def _no_graph() -> bytes:
    model = ModelProto(ir_version=8)
    model.opset_import.add(domain="", version=17)
    return bytes(model.SerializeToString())


def _graph(inputs: bool, outputs: bool) -> bytes:
    graph = helper.make_graph(
        [helper.make_node("Constant", [], ["y"], value=nh.from_array(np.ones(2, np.float32)))],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])] if inputs else [],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])] if outputs else [],
    )
    model = helper.make_model(graph, opset_imports=OPSETS)
    model.ir_version = 8
    return bytes(model.SerializeToString())


# (reason, the .onnx file's bytes, what the error says)
EMPTY = [
    ("a 0-byte file", b"", "is empty (0 bytes)"),
    ("a model without a graph", _no_graph(), "holds no graph"),
    ("an empty graph", _graph(False, False), "its graph has no inputs and no outputs"),
    ("a graph without inputs", _graph(False, True), "its graph has no inputs"),
    ("a graph without outputs", _graph(True, False), "its graph has no outputs"),
]


@pytest.mark.parametrize(("data", "needle"), [e[1:] for e in EMPTY], ids=[e[0] for e in EMPTY])
def test_an_empty_onnx_model_is_refused_at_publish_and_at_open(
    home: Workspace, tmp_path: Path, data: bytes, needle: str
) -> None:
    before = _state(home)
    files = write_files(tmp_path, {"m.onnx": data})
    with pytest.raises(FormatMismatch, match=re.escape(needle)):
        publish(home, parse_manifest(_manifest("1.0.0", files)), manifest_dir=tmp_path)
    assert _state(home) == before
    with pytest.raises(
        ModelLoadError, match=re.escape(needle)
    ):  # forced past publish: the run refuses
        predictor_class("onnxruntime")().open(
            ModelFiles({"m.onnx": tmp_path / "m.onnx"}, "onnx"), PredictorOptions()
        )


@pytest.mark.parametrize(("data", "needle"), [e[1:] for e in EMPTY], ids=[e[0] for e in EMPTY])
def test_manifest_model_refuses_an_empty_onnx_model(
    cli: Cli, tmp_path: Path, data: bytes, needle: str
) -> None:
    (tmp_path / "m.onnx").write_bytes(data)
    result = cli("manifest", "model", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "m.yaml"))
    assert result.code == 1
    assert needle in result.err and "m.onnx" in result.err
    assert "Traceback" not in result.err + result.out
    assert not (tmp_path / "m.yaml").exists()


# ---------------------------------------------------------------- forced past publish


def _lock(ws: Workspace, version: str) -> Lockfile:
    request = {
        "model": f"{NAME}@{version}",
        "dataset": f"{builtin.DATASET_NAME}@1",
        "scenario": {"mode": "accuracy"},
    }
    return service.lock(ws, parse_request(request))[0]


def _beside(model: Callable[[str], bytes], foreign: str) -> bytes:
    """The model's bytes, varied (its doc string) until its blob lands in ``foreign``'s shard
    folder of the store, as an attacker grinds them."""
    base = ModelProto.FromString(model(foreign))
    for i in range(100_000):
        base.doc_string = str(i)
        data = bytes(base.SerializeToString())
        if sha(data)[:2] == foreign[:2]:
            return data
    raise AssertionError("no digest in the shard")


def _force(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch, root: Path, version: str, model: bytes
) -> None:
    """Publish ``model`` past the publish check (as an older version, an import or a hand-made
    store would have it), then put the check back."""
    with monkeypatch.context() as patched:
        patched.setattr("pinbench.registry.publish.check_model_files", lambda m, where: None)
        files = write_files(root, {"m.onnx": model})
        publish(ws, parse_manifest(_manifest(version, files)), manifest_dir=root)


def _failed(ws: Workspace) -> str:
    runs = list_runs(ws)
    assert runs[0]["status"] == "failed", runs[0]
    return str(runs[0]["error"])


def _no_host_path(error: str, ws: Workspace) -> None:
    for folder in (ws.settings.home, ws.store.root, Path("/tmp")):
        assert str(folder) not in error, error


# every place through the local runner, the attack's own through the venv runner too
FORCED = [(p[0], p[1], "local") for p in RUNS] + [
    ("function default attribute", _bytes(_function_default), "venv")
]


@pytest.mark.parametrize(
    ("build", "runner"), [f[1:] for f in FORCED], ids=[f"{f[0]}-{f[2]}" for f in FORCED]
)
def test_a_run_refuses_external_data_forced_past_publish(
    digits: Workspace,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    build: Callable[[str], bytes],
    runner: str,
) -> None:
    foreign = _foreign(digits)
    model = _beside(build, foreign)
    shard = digits.store.path(Digest(foreign)).parent
    _force(digits, monkeypatch, tmp_path, "1.0.0", model)
    assert digits.store.path(Digest(sha(model))).parent == shard  # the attack's precondition
    with pytest.raises(UserError, match="is not a file of the artifact"):
        run_lockfile(digits, _lock(digits, "1.0.0"), runner=runner, say=quiet)
    error = _failed(digits)
    assert f"keeps its data in {foreign!r}" in error
    _no_host_path(error, digits)


@pytest.mark.parametrize("runner", ["local", "venv"])
def test_a_location_naming_the_model_itself_is_a_clean_run_error(
    digits: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runner: str
) -> None:
    """Item 7: once a SameFileError naming the blob store's absolute path."""
    model = _bytes(_initializer)("m.onnx")
    _force(digits, monkeypatch, tmp_path, "1.0.0", model)
    with pytest.raises(UserError, match="is the model file itself"):
        run_lockfile(digits, _lock(digits, "1.0.0"), runner=runner, say=quiet)
    error = _failed(digits)
    assert "SameFileError" not in error and "Traceback" not in error
    _no_host_path(error, digits)


# ---------------------------------------------------------------- the model's own folder


def _walk_sees_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk misses every reference (as it would one in a place it does not know): what is
    left is the model's folder."""
    real = read_onnx
    monkeypatch.setattr(
        "pinbench.registry.onnx_files.read_onnx",
        lambda path: dataclasses.replace(real(path), locations=[]),
    )


def test_a_reference_the_walk_misses_finds_nothing_beside_the_model_local(
    digits: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    foreign = _foreign(digits)
    _force(digits, monkeypatch, tmp_path, "1.0.0", _beside(_bytes(_function_default), foreign))
    _walk_sees_nothing(monkeypatch)
    with pytest.raises(EvaluationFailed, match=r"cannot load model m\.onnx"):
        run_lockfile(digits, _lock(digits, "1.0.0"), say=quiet)
    error = _failed(digits)
    assert foreign in error  # ONNX Runtime looked for it, in the model's folder only
    _no_host_path(error, digits)


def test_a_worker_handed_blob_store_paths_loads_from_a_folder_of_its_own(
    digits: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The evaluator behind the venv, docker, warm and cluster runners checks what it was
    handed: blob-store paths (what runners used to hand it) are placed in its own scratch."""
    foreign = _foreign(digits)
    _force(digits, monkeypatch, tmp_path, "1.0.0", _beside(_bytes(_function_default), foreign))
    _walk_sees_nothing(monkeypatch)
    lock = _lock(digits, "1.0.0")
    model = {p: str(v) for p, v in store_paths(digits, lock, Kind.MODEL).items()}
    assert Path(model["m.onnx"]).parent == digits.store.path(Digest(foreign)).parent
    data = {p: str(v) for p, v in store_paths(digits, lock, Kind.DATASET).items()}
    write_job(tmp_path / "job.json", lock, model, data)
    (tmp_path / "out").mkdir()
    assert worker_main([str(tmp_path / "job.json"), str(tmp_path / "out")]) == 1
    result = json.loads((tmp_path / "out" / "result.json").read_bytes())
    assert result["status"] == "failed"
    assert "cannot load model m.onnx" in result["error"] and foreign in result["error"]
    _no_host_path(result["error"], digits)


def _sidecar_model(digits: Workspace, root: Path) -> str:
    """A model whose external data is a listed file in its folder: it must run."""
    model = _bytes(_initializer)("c.bin")
    files = write_files(root, {"net/m.onnx": model, "net/c.bin": ONES.tobytes()})
    publish(digits, parse_manifest(_manifest("2.0.0", files)), manifest_dir=root)
    return "2.0.0"


def _own_folder(paths: dict[str, Path], ws: Workspace) -> None:
    """``paths`` are the model's files, and their folder holds nothing else, outside the
    blob store."""
    root = confined(paths)
    assert root is not None, paths
    assert sorted(paths) == ["net/c.bin", "net/m.onnx"]
    assert not root.is_relative_to(ws.store.blobs)


@pytest.mark.parametrize("runner", ["local", "venv", "venv-warm"])
def test_every_runner_hands_the_model_a_folder_of_its_own(
    digits: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runner: str
) -> None:
    version = _sidecar_model(digits, tmp_path)
    seen: list[dict[str, Path]] = []
    real_write = write_job  # every runner's worker is handed a job (the local runner's too)

    def spy_write(
        path: Path, lock: Lockfile, model: dict[str, str], *rest: Any, **named: Any
    ) -> None:
        # the paths the sandbox sees (/pinbench/.../model/...), where they are on the host: in
        # the job's folder
        seen.append({p: path.parent / "model" / v.split("/model/", 1)[1] for p, v in model.items()})
        assert all(v.startswith("/pinbench/") for v in model.values()), model
        _own_folder(seen[-1], digits)  # checked while the run's folder exists
        real_write(path, lock, model, *rest, **named)

    monkeypatch.setattr("pinbench.evaluator.runners.local.write_job", spy_write)
    pool = WarmPool.in_scratch(digits.store.tmp) if runner == "venv-warm" else None
    try:
        outcome = run_lockfile(
            digits, _lock(digits, version), runner=runner.split("-")[0], say=quiet, warm=pool
        )
    finally:
        if pool is not None:
            pool.close()
    assert outcome.status == "succeeded"
    assert len(seen) == 1
    assert not seen[0]["net/m.onnx"].exists()  # the folder went with the run
    environment = show_run(digits, outcome.id)["details"]["environment"]
    assert ("warm_process" in environment) == (runner == "venv-warm"), environment


def test_the_docker_runner_mounts_the_model_in_a_folder_of_its_own(
    digits: Workspace, tmp_path: Path
) -> None:
    """What a container is handed (no Docker Engine needed to lay it out)."""
    version = _sidecar_model(digits, tmp_path / "src")
    lock = _lock(digits, version)
    files = tmp_path / "files"
    inside = docker_parts.link_files(digits, lock, files, "/pinbench/files")
    assert inside["model"] == {
        "net/c.bin": "/pinbench/files/model/net/c.bin",
        "net/m.onnx": "/pinbench/files/model/net/m.onnx",
    }
    _own_folder({p: files / "model" / p for p in inside["model"]}, digits)
    assert all(v.startswith("/pinbench/files/dataset/") for v in inside["dataset"].values())


def test_materialise_and_confined(tmp_path: Path) -> None:
    """A folder of its own is exactly the files at their paths: another file, a link or an
    empty folder beside them is not one."""
    (tmp_path / "blobs").mkdir()
    blobs = {}
    for name in ("a", "b"):
        blobs[name] = tmp_path / "blobs" / name
        blobs[name].write_bytes(name.encode())
    assert confined({"m.onnx": blobs["a"]}) is None  # a blob-store folder holds others
    placed = materialise({"m.onnx": blobs["a"], "sub/w.bin": blobs["b"]}, tmp_path / "model")
    assert confined(placed) == tmp_path / "model"
    assert placed["sub/w.bin"].read_bytes() == b"b"
    assert hashlib.sha256(placed["m.onnx"].read_bytes()).hexdigest() == sha(b"a")
    for intruder in ("other.bin", "sub/other.bin"):
        (tmp_path / "model" / intruder).write_bytes(b"x")
        assert confined(placed) is None, intruder
        (tmp_path / "model" / intruder).unlink()
    (tmp_path / "model" / "link").symlink_to(blobs["b"])
    assert confined(placed) is None
    (tmp_path / "model" / "link").unlink()
    (tmp_path / "model" / "empty").mkdir()
    assert confined(placed) is None
    (tmp_path / "model" / "empty").rmdir()
    assert confined(placed) == tmp_path / "model"
