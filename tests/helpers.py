"""Builders for tests: files on disk and manifests that describe them, a workspace with a
catalog published, the CLI run in-process."""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import pytest
import yaml

from pinbench.artifacts.store import BlobStore
from pinbench.cli import main
from pinbench.config import Settings
from pinbench.registry.manifest import load_manifest
from pinbench.registry.publish import publish
from pinbench.workspace import Workspace


@dataclass
class CliResult:
    code: int
    out: str
    err: str


Cli = Callable[..., CliResult]


class Payload:
    """Pickled into a model file: unpickling runs ``code`` (what a pickled model can do)."""

    def __init__(self, code: str) -> None:
        self.code = code

    def __reduce__(self) -> tuple[Any, ...]:
        return (exec, (self.code,))


PLACEHOLDER_LOCKFILE = "a" * 64
"""The digest of the lockfile row ``insert_placeholder_lockfile`` writes (runs need one)."""


def insert_placeholder_lockfile(conn: Any) -> None:
    """A lockfile row for runs written with SQL at an older schema revision to reference."""
    from sqlalchemy import text

    conn.execute(
        text(
            "INSERT INTO lockfiles (digest, body, created_at) VALUES (:d, '{}', CURRENT_TIMESTAMP)"
        ),
        {"d": PLACEHOLDER_LOCKFILE},
    )


@functools.cache
def _digits_logreg() -> tuple[Any, Any]:
    from pinbench import catalog

    x_train, _, y_train, _ = catalog.digits_split()
    return catalog.train_logreg(x_train, y_train, 1.0)


def digits_logreg() -> tuple[Any, Any]:
    """The digits logistic regression (C 1.0, the train split) as (weights (10, 64), bias
    (10,)), trained once per process and copied to each caller: scikit-learn's lbfgs took
    2.5-6 s of CPU for it, and the tests that build models from it trained it again for
    every model (issue 49)."""
    weights, bias = _digits_logreg()
    return weights.copy(), bias.copy()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def tiny_onnx(tag: bytes = b"") -> bytes:
    """A real ONNX model, ``x (N, 10) -> Identity -> logits``, whose bytes differ by ``tag``
    (its doc string): for tests that need distinct model files that publish, not a model's
    numbers (publishing reads an ``.onnx`` file's graph)."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["logits"])],
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 10])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    model.doc_string = tag.decode("latin-1")
    return bytes(model.SerializeToString())


def write_files(root: Path, files: dict[str, bytes]) -> list[dict[str, Any]]:
    """Write files under root; return manifest file entries for them."""
    entries = []
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        entries.append({"path": rel, "sha256": sha(data), "size": len(data)})
    return entries


def model_manifest(
    name: str,
    version: str,
    files: list[dict[str, Any]],
    framework: str = "onnxruntime",
    framework_range: str = ">=1.17 <2",
) -> dict[str, Any]:
    return {
        "kind": "model",
        "name": name,
        "version": version,
        "format": "onnx",
        "framework": {"name": framework, "range": framework_range},
        "files": files,
    }


def publish_digits_model(
    ws: Workspace, root: Path, version: str, files: dict[str, bytes], **fields: Any
) -> str:
    """``files`` written under ``root`` and published as the digits catalog's model at
    ``version`` (ONNX, for ONNX Runtime ^1), with the manifest's other ``fields``: its ref. A
    request for the catalog's model at that version runs it on the catalog's dataset."""
    from pinbench import catalog as builtin
    from pinbench.registry.manifest import parse_manifest

    described = write_files(root, files)
    manifest = model_manifest(builtin.MODEL_NAME, version, described, framework_range="^1")
    publish(ws, parse_manifest({**manifest, **fields}), manifest_dir=root, publisher="test")
    return f"{builtin.MODEL_NAME}@{version}"


def framework_manifest(
    name: str, version: str, image: dict[str, str] | None = None
) -> dict[str, Any]:
    env: dict[str, Any] = {"platform": {"arch": "amd64", "device": "cpu"}}
    if image:
        env["image"] = image
    else:
        env["requirements"] = [{"name": name, "version": version, "hashes": ["sha256:" + "a" * 64]}]
    return {"kind": "framework", "name": name, "version": version, "environments": [env]}


def dataset_manifest(name: str, version: str, files: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "kind": "dataset",
        "name": name,
        "version": version,
        "files": files,
        "labels": {"format": "class-index-npy", "path": files[-1]["path"]},
    }


def dump(path: Path, data: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def in_process_cli(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    home: Path,
    database_url: str | None = None,
) -> Cli:
    """``pinbench ARGS`` in-process against ``home`` (and ``database_url``, else the home's
    SQLite file), never a server."""
    monkeypatch.setenv("PINBENCH_HOME", str(home))
    if database_url is None:
        monkeypatch.delenv("PINBENCH_DATABASE_URL", raising=False)
    else:
        monkeypatch.setenv("PINBENCH_DATABASE_URL", database_url)
    monkeypatch.delenv("PINBENCH_URL", raising=False)
    monkeypatch.setenv("COLUMNS", "200")

    def run(*args: str) -> CliResult:
        capsys.readouterr()
        code = main(list(args))
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


def published_workspace(root: Path, catalog: Path) -> Workspace:
    """A workspace under ``root`` (SQLite at ``root/db``) with every manifest in ``catalog``
    published; the caller closes it."""
    ws = Workspace(Settings(home=root / "home", database_url=f"sqlite:///{root}/db"))
    ws.init()
    for path in sorted(catalog.glob("*.yaml")):
        publish(ws, load_manifest(path), manifest_dir=catalog, publisher="test")
    return ws


def accuracy_run(
    tmp_path: Path,
    catalog: Path,
    model: dict[str, Any],
    dataset: dict[str, Any],
    *,
    batch_size: int = 2,
    outputs: Path | None = None,
    **scenario: Any,
) -> dict[str, Any]:
    """``model`` and ``dataset`` (manifests whose files are under ``tmp_path/m`` and
    ``tmp_path/d``) published beside the ``catalog``, run once in accuracy mode; the recorded
    run, its raw outputs exported to ``outputs`` where given."""
    from pinbench.evaluator.records.run_list import list_runs
    from pinbench.evaluator.records.run_outputs import export_here
    from pinbench.evaluator.records.run_view import show_run
    from pinbench.evaluator.run import run_lockfile
    from pinbench.registry import service
    from pinbench.registry.manifest import parse_manifest
    from pinbench.registry.request import parse_request

    ws = published_workspace(tmp_path / "home", catalog)
    try:
        for doc, folder in ((model, "m"), (dataset, "d")):
            publish(ws, parse_manifest(doc), manifest_dir=tmp_path / folder, publisher="test")
        request = {
            "model": f"{model['name']}@1",
            "dataset": f"{dataset['name']}@1",
            "scenario": {"mode": "accuracy", **scenario},
            "batch_size": batch_size,
        }
        run_lockfile(ws, service.lock(ws, parse_request(request))[0], say=lambda _: None)
        shown: dict[str, Any] = show_run(ws, list_runs(ws)[0]["id"])
        if outputs is not None:
            export_here(ws, shown["id"], outputs)
        return shown
    finally:
        ws.close()


def copied_workspace(template: Path, root: Path) -> Workspace:
    """A copy under ``root`` of the home and SQLite database ``published_workspace`` made under
    ``template``, open: what a new published workspace holds, in milliseconds instead of a
    migration and a publish (issue 49: the ``digits`` fixture, 128 tests). Nothing in the
    database names the folder; the copy's blobs are recorded as verified in its own cache, as
    publishing them would have."""
    import shutil

    from pinbench.artifacts.digest import Digest
    from pinbench.artifacts.verified import FileState

    shutil.copytree(template / "home", root / "home", symlinks=True)
    for name in ("db", "db-wal", "db-shm"):
        if (template / name).exists():
            shutil.copy2(template / name, root / name)
    ws = Workspace(Settings(home=root / "home", database_url=f"sqlite:///{root}/db"))
    for blob in sorted((root / "home" / "blobs").glob("*/*")):
        digest = hashlib.sha256(blob.read_bytes()).hexdigest()
        assert digest == blob.name, f"the template's blob {blob.name} holds other bytes"
        ws.store.cache.record(blob.resolve(), FileState.of(blob.stat()), Digest(digest))
    return ws


@dataclass
class Home:
    """A test module's workspace: open, with its home and database URL for the CLI."""

    ws: Workspace
    home: Path
    db: str


@contextmanager
def published_home(root: Path, catalog: Path) -> Iterator[Home]:
    """``published_workspace`` under ``root`` as a ``Home``, closed afterwards."""
    ws = published_workspace(root, catalog)
    try:
        yield Home(ws, root / "home", f"sqlite:///{root}/db")
    finally:
        ws.close()


def minilm_variant(
    catalog: Path, root: Path, version: str, change: Callable[[dict[str, Any]], None]
) -> Path:
    """The ``minilm`` catalog part's model (``catalog``) at ``version`` with ``change`` made to
    its manifest, its files copied under ``root/variant-VERSION``: the manifest's path."""
    import shutil

    data = yaml.safe_load((catalog / "model-minilm.yaml").read_text())
    data["version"] = version
    change(data)
    folder = root / f"variant-{version}"
    shutil.copytree(catalog / "minilm", folder / "minilm")
    for entry in data["files"]:
        entry["path"] = f"minilm/{entry['path']}"
        entry.pop("source", None)
    for spec in data["inputs"]:
        for step in spec["steps"]:
            step["tokenize"]["tokenizer"] = "minilm/tokenizer.json"
    return dump(folder / "m.yaml", data)


def onnx_image_model(
    name: str,
    files: list[dict[str, Any]],
    steps: list[dict[str, Any]],
    outputs: list[dict[str, Any]],
) -> dict[str, Any]:
    """A model manifest ``test/NAME@1.0.0`` of ONNX files written under ``NAME/`` (sources
    relative to the manifest's folder), one image input ``image`` with ``steps``."""
    return {
        "kind": "model",
        "name": f"test/{name}",
        "version": "1.0.0",
        "format": "onnx",
        "framework": {"name": "onnxruntime"},
        "files": [{**f, "source": f"file:{name}/{f['path']}"} for f in files],
        "inputs": [{"name": "image", "type": "image", "steps": steps}],
        "outputs": outputs,
    }


DIGITS: dict[str, Any] = {
    "model": "vision/digits-logreg@^1",
    "framework": "onnxruntime@*",
    "dataset": "sklearn-digits-test@^1",
}
"""A request for the digits catalog's logreg on ONNX Runtime (``catalog_dir`` publishes it)."""
DIGITS_ACCURACY: dict[str, Any] = {**DIGITS, "scenario": {"mode": "accuracy"}}


def lock_digits(ws: Workspace, path: Path) -> Path:
    """Lock ``DIGITS`` (``ws`` has the digits catalog published) to ``path``."""
    from pinbench.registry import service
    from pinbench.registry.request import parse_request

    service.lock_points(ws, parse_request(DIGITS))[0][0].write(path)
    return path


def run_digits(ws: Workspace) -> str:
    """Run ``DIGITS_ACCURACY`` with the local runner (``ws`` has the digits catalog
    published); the id of the run, recorded as succeeded."""
    from pinbench.evaluator.run import run_lockfile
    from pinbench.registry import service
    from pinbench.registry.request import parse_request

    lock = service.lock(ws, parse_request(DIGITS_ACCURACY))[0]
    outcome = run_lockfile(ws, lock, runner="local", say=lambda _: None)
    assert outcome.status == "succeeded", outcome
    return outcome.id


def forget_verified(store: BlobStore) -> BlobStore:
    """``store``'s home as on a machine that has hashed nothing: the verified-state cache's
    file removed; a new ``BlobStore`` on it."""
    store.cache.close()
    (store.root / "cache" / "verified.sqlite").unlink()
    return BlobStore(store.root)


def doc_block(page: Path, test: str) -> str:
    """The shell block of ``page`` marked ``<!-- run by TEST -->``."""
    import re

    text = page.read_text()
    found = re.search(rf"<!-- run by {re.escape(test)} -->\n```sh\n(.*?)```", text, re.S)
    assert found, f"{page} has no block run by {test}"
    return found.group(1)


def run_doc_block(page: Path, test: str, cwd: Path, *, timeout: int) -> CompletedProcess[str]:
    """Run the block as a new user would, in ``cwd``: bash -euo pipefail, the project's
    environment first on PATH, a home of its own, no server."""
    import os
    import subprocess
    import sys

    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "PINBENCH_HOME": str(cwd / "home"),
    }
    for name in ("PINBENCH_URL", "PINBENCH_DATABASE_URL"):
        env.pop(name, None)
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", doc_block(page, test)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def need_two_cores() -> None:
    """Two workers need two cores: skipped on a smaller machine, except with ``CI=true``,
    where such a test must run and so fails, naming the cores it lacks."""
    from pinbench.specs.distributed import available_here

    if available_here() >= 2:
        return
    cannot_run(f"two workers need two cores; this machine has {available_here()}")


def need_root(what: str) -> None:
    """``what`` needs root (a device node, debootstrap): skipped for another user, except with
    ``CI=true``, where such a test must run and so fails."""
    if os.geteuid() != 0:
        cannot_run(f"{what} needs root")


def cannot_run(reason: str) -> None:
    """Skip naming ``reason``; with ``CI=true`` nothing skips: the test fails naming it."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: this test must run)")
    pytest.skip(reason)


def cold_reason(lock: Any, tmp_path: Path) -> str:
    """Why ``run_warm`` runs ``lock`` cold (``warm_cold_because``): a warm evaluator that it
    starts fails the test, and so does a warm run."""
    from pinbench.evaluator.warm import WarmPool, run_warm
    from pinbench.worker.job import Evidence
    from pinbench.worker.stop import Stop

    def refuse_to_start(root: Path, idle_s: float) -> Any:
        raise AssertionError("a warm evaluator was started for a lockfile that must run cold")

    pool = WarmPool(tmp_path / "warm")
    try:
        evidence = Evidence()
        used = run_warm(
            pool, ("venv", "x"), refuse_to_start, lock, evidence, lambda _: None, Stop(),
            lambda *_: None,
        )  # fmt: skip
    finally:
        pool.close()
    assert used is False and evidence.environment["warm"] is False
    assert set(evidence.environment) == {"warm", "warm_cold_because"}
    reason: str = evidence.environment["warm_cold_because"]
    return reason


def onnx_accuracy_run(
    cli: Cli, home: Path, manifests: list[Path], model: str, dataset: str, *code: str
) -> str:
    """Through the CLI: an ONNX Runtime framework manifest for the installed version, ``init``,
    ``publish`` it and ``manifests`` (a model and a dataset), lock ``model`` on ``dataset`` in
    accuracy mode and run it on the local runner (``code``: its further flags, ``--allow-code``
    or ``--sandbox none``); the run's ``pinbench run`` output."""
    import onnxruntime as ort

    fw_yaml = home / "framework.yaml"
    made = cli("manifest", "framework", f"onnxruntime=={ort.__version__}", "-o", str(fw_yaml))
    assert made.code == 0, made.err
    assert cli("init").code == 0
    for path in (fw_yaml, *manifests):
        published = cli("publish", str(path))
        assert published.code == 0, published.err
    framework = yaml.safe_load(fw_yaml.read_text())["name"]
    request = dump(
        home / "request.yaml",
        {
            "model": model,
            "framework": f"{framework}@*",
            "dataset": dataset,
            "scenario": {"mode": "accuracy"},
        },
    )
    locked = home / "accuracy.lock"
    assert cli("lock", str(request), "-o", str(locked)).code == 0
    ran = cli("run", str(locked), "--runner", "local", *code)
    assert ran.code == 0, ran.err
    return ran.out
