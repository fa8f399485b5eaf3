"""The three runners on one lockfile, and the container's boundaries, against a real Docker
Engine started here (tests/services.py), a real image registry on 127.0.0.1, and images built
by ``pinbench images build`` from a debootstrap base.

The malicious models are PyTorch pickles (``trusted: true``) whose unpickling tries what a
hostile model would: open a connection, write outside its output folder, take all memory,
never finish. Each must end in a failed run record with a clear reason.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import tarfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml
from filelock import FileLock

from pinbench.catalog import frameworks
from pinbench.config import Settings
from pinbench.environments import environment_digest
from pinbench.evaluator.records.run_list import list_runs
from pinbench.evaluator.records.run_view import show_run
from pinbench.evaluator.run import run_lockfile
from pinbench.evaluator.runners.docker import ImageMissing, NoImagePinned, OutOfMemory
from pinbench.evaluator.runners.local import installed_digest
from pinbench.evaluator.runners.process import EvaluationFailed, RunTimedOut
from pinbench.images import build
from pinbench.images.base import ensure_base
from pinbench.images.build import BUILD_LABEL, build_image
from pinbench.images.distribution import PulledWrongImage, pull, push
from pinbench.images.engine import connect
from pinbench.registry import service
from pinbench.registry.catalog import SqlCandidateSource, yank
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.locking import build_lockfile
from pinbench.registry.manifest import load_manifest, parse_manifest
from pinbench.registry.names import ArtifactRef, Kind
from pinbench.registry.publish import publish
from pinbench.registry.request import parse_request
from pinbench.registry.resolve import Resolution, resolve
from pinbench.trace.summary import trace_of
from pinbench.workspace import Workspace
from tests.helpers import Payload
from tests.services import ONE_ENGINE, docker_engine, image_registry, rootfs_cache

pytestmark = ONE_ENGINE  # one Docker Engine at a time (tests/services.py)

DIGITS = {"model": "vision/digits-logreg@1.2.0", "dataset": "sklearn-digits-test@1", "threads": 1}


def quiet(text: str) -> None:
    pass


class Listener:
    """A TCP server on 127.0.0.1 that counts the connections it accepts."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.sock.getsockname()[1])
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()


@dataclass
class Stack:
    ws: Workspace
    client: Any
    listener: Listener
    images: dict[str, str]


def _evil_models(root: Path, port: int) -> list[Path]:
    payloads = {
        "network": f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5)",
        "write": "open('/opt/pinbench/escaped', 'w').write('x')",
        "memory": "blob = b'x' * (3 << 30)",
        "sleep": "import time; time.sleep(600)",
    }
    logreg = yaml.safe_load((root / "model-digits-logreg-1.2.0.yaml").read_text())
    out = []
    for name, code in payloads.items():
        folder = root / f"evil-{name}"
        folder.mkdir()
        torch.save(Payload(code), folder / "model.pth")
        manifest = {
            "kind": "model",
            "name": f"evil/{name}",
            "version": "1.0.0",
            "format": "torch-pickle",
            "trusted": True,
            "framework": {"name": "torch", "range": "2.13.0"},
            "files": [
                {
                    "path": "model.pth",
                    "sha256": hashlib.sha256((folder / "model.pth").read_bytes()).hexdigest(),
                    "source": f"file:evil-{name}/model.pth",
                }
            ],
            "inputs": logreg["inputs"],
            "outputs": logreg["outputs"],
        }
        path = root / f"model-evil-{name}.yaml"
        path.write_text(yaml.safe_dump(manifest))
        out.append(path)
    return out


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, catalog_dir: Path) -> Iterator[Stack]:
    root = tmp_path_factory.mktemp("runners")
    with docker_engine() as host, pytest.MonkeyPatch.context() as mp:
        mp.setenv("DOCKER_HOST", host)
        ws = Workspace(Settings(home=root / "home", database_url=f"sqlite:///{root}/db"))
        ws.init()
        (ws.settings.home / "tmp").mkdir(parents=True, exist_ok=True)
        cat = root / "catalog"
        shutil.copytree(catalog_dir, cat)  # the run's digits catalog, trained once (issue 49)
        manifests = [*sorted(cat.glob("*.yaml")), frameworks.write(cat, "torch")]
        listener = Listener()
        manifests += _evil_models(cat, listener.port)
        for path in manifests:
            publish(ws, load_manifest(path), manifest_dir=cat, publisher="test")
        client = connect()
        cache = rootfs_cache()
        with FileLock(str(cache / "lock")):  # another run on this machine may be making it
            base = ensure_base(client, cache, quiet)
        images = {
            fw: build_image(ws, client, fw, base, quiet).digest for fw in ("onnxruntime", "torch")
        }
        yield Stack(ws, client, listener, images)
        ws.close()


def _lock(ws: Workspace, **request: Any) -> Lockfile:
    return service.lock(ws, parse_request({**DIGITS, **request}))[0]


def test_one_lockfile_three_runners_same_accuracy_and_their_provenance(
    stack: Stack, shared_cache: Path
) -> None:
    lock = _lock(stack.ws, scenario={"mode": "accuracy"})
    env = lock.body.environment
    assert env is not None and env.image is not None
    assert env.image.digest == stack.images["onnxruntime"]
    runs = {}
    for runner in ("local", "venv", "docker"):
        outcome = run_lockfile(stack.ws, lock, runner=runner, say=quiet)
        assert outcome.status == "succeeded", runner
        runs[runner] = show_run(stack.ws, outcome.id)
    assert len({r["top1"] for r in runs.values()}) == 1
    assert len({r["details"]["outputs_sha256"] for r in runs.values()}) == 1
    assert runs["local"]["environment"] == installed_digest()
    assert runs["venv"]["environment"] == environment_digest(env)
    assert runs["docker"]["environment"] == env.image.digest
    inside = runs["docker"]["details"]["environment"]["inside"]
    assert inside["python"].startswith("3.11") and inside["executable"].startswith("/opt/pinbench")
    assert {r["runner"] for r in list_runs(stack.ws)} >= {"local", "venv", "docker"}
    # the venv's packages come with their bytecode, as pip installs them (issue 49)
    numpy = "lib/python3.11/site-packages/numpy/__pycache__/__init__.cpython-311.pyc"
    assert list(shared_cache.glob(f"envs/*/{numpy}"))


@pytest.mark.parametrize("runner", ["venv", "docker"])
def test_a_full_trace_comes_back_across_the_isolation_boundary(stack: Stack, runner: str) -> None:
    """The evaluator inside the environment profiles, samples and writes the trace; the host
    checks it and stores it beside the run."""
    lock = _lock(stack.ws, scenario={"min_duration_ms": 100, "min_query_count": 30})
    outcome = run_lockfile(stack.ws, lock, runner=runner, say=quiet, trace="full")
    info = show_run(stack.ws, outcome.id)
    assert info["status"] == "succeeded" and info["trace"] == "full"
    meta = trace_of(stack.ws, info)["pinbench"]
    assert (
        meta["framework"] == "onnxruntime" and meta["predictions"] == info["framework_calls_count"]
    )
    assert meta["ops"] and meta["framework_trace"]["in_spans"] > 0
    assert meta["system"]["samples"] > 0 and "memory.rss_mb" in meta["system"]["counters"]
    assert info["details"]["trace"]["level"] == "full"


def test_a_code_run_in_a_container_is_timed_by_the_hosts_loadgen_across_a_socket(
    stack: Stack, tmp_path: Path, catalog_dir: Path
) -> None:
    """Issue 71, item 2, in the docker runner: the code halves the container's clock while every
    model call sleeps and looks for LoadGen's log; the host's LoadGen, across a Unix socket bound
    into the container, records latencies no shorter than the sleep, audits the run (TEST04 on
    the same container, TEST01 with a new one in accuracy mode) and reads its peak memory."""
    from pinbench.evaluator.runners.process import HOST_PEAK
    from pinbench.worker import clock_ring
    from tests.test_host_clock import SLEEP_S, SLOWS_AND_HIDES, compared_every_sample
    from tests.test_processing_code import CODE, POST, PRE, _publish, _raw_dataset
    from tests.test_processing_code import _lock as code_lock

    _raw_dataset(stack.ws, tmp_path / "raw")
    model = _publish(
        stack.ws, tmp_path, catalog_dir, "12.9.0", preprocess=PRE, postprocess=POST,
        code=SLOWS_AND_HIDES + CODE,
    )  # fmt: skip
    lock = code_lock(stack.ws, model, mode="performance")
    run = run_lockfile(stack.ws, lock, runner="docker", say=quiet, allow_code=True)
    shown = show_run(stack.ws, run.id)
    assert shown["runner"] == "docker" and shown["status"] == "succeeded"
    floor = SLEEP_S * 1e9
    for name in ("latency_p50_ns", "latency_min_ns", "framework_latency_min_ns"):
        assert shown[name] >= floor, name
    clock = shown["details"]["clock"]
    assert clock["side"] == "host" and 0 < clock["crossing_ns"] < floor
    # the rings' memory crossed the clock's socket into the container (decision 314)
    assert clock["through"] == ("rings" if clock_ring.available() else "pipes")
    assert shown["details"]["machine"]["own_cpu_s"] > 0  # the container's CPU is the run's
    assert shown["details"]["audits"]["TEST04"]["passed"] is not False
    test01 = shown["details"]["audits"]["TEST01"]
    assert test01["passed"] is True and compared_every_sample(test01, clock["samples"]), test01
    assert shown["peak_rss_bytes"] > 0 and shown["details"]["memory"]["peak_rss"] == HOST_PEAK
    assert stack.client.containers.list(all=True) == []  # the run's and its twin's, removed


def test_a_warm_container_serves_run_after_run_confined_and_measures_what_a_cold_one_does(
    stack: Stack,
) -> None:
    """``serve --warm`` with docker: one container per image (and limits) serves the runs; it
    is confined as a cold one is, and closing the pool removes it."""
    from docker.errors import NotFound

    from pinbench.evaluator.warm import WarmPool

    lock = _lock(stack.ws, scenario={"mode": "accuracy"})
    pool = WarmPool.in_scratch(stack.ws.store.tmp)
    try:
        cold = show_run(stack.ws, run_lockfile(stack.ws, lock, runner="docker", say=quiet).id)
        warm = [
            show_run(
                stack.ws, run_lockfile(stack.ws, lock, runner="docker", say=quiet, warm=pool).id
            )
            for _ in range(2)
        ]
        envs = [w["details"]["environment"] for w in warm]
        assert [(e["warm"], e["warm_served_before"]) for e in envs] == [(False, 0), (True, 1)]
        assert envs[0]["warm_process"] == envs[1]["warm_process"]
        assert len({r["top1"] for r in [cold, *warm]}) == 1
        assert len({r["details"]["outputs_sha256"] for r in [cold, *warm]}) == 1
        container = stack.client.containers.get(envs[1]["container"])
        host = container.attrs["HostConfig"]
        assert (host["NetworkMode"], host["ReadonlyRootfs"]) == ("none", True)
        assert container.attrs["Config"]["User"] == "65534:65534"
        assert host["Memory"] == lock.body.limits.memory_mb * 1024 * 1024
    finally:
        pool.close()
    with pytest.raises(NotFound):
        stack.client.containers.get(envs[1]["container"])


@pytest.mark.parametrize("framework", ["onnxruntime", "torch"])
def test_an_image_is_its_venv_and_configuration_and_nothing_of_its_build(
    stack: Stack, framework: str
) -> None:
    """Decision 269: a committed container, configured as the Dockerfile build configured it;
    no volume declared (a run would leave one behind) and no build context in the layer."""
    image = stack.client.images.get(stack.images[framework])
    config = image.attrs["Config"]
    assert config["User"] == "65534:65534" and config["WorkingDir"] == "/tmp"
    assert config["Entrypoint"] == [
        "/opt/pinbench/venv/bin/python", "-s", "-m", "pinbench.worker.main"
    ]  # fmt: skip
    assert not config.get("Cmd") and not config.get("Volumes")
    assert "PYTHONPATH=/opt/pinbench/lib" in config["Env"]
    assert len(image.attrs["RootFS"]["Layers"]) == 2  # the base's and the install's
    volumes = len(stack.client.volumes.list())
    out = stack.client.containers.run(
        image.id, entrypoint=["/bin/sh", "-c"], network_mode="none", remove=True,
        command=["test ! -e /build && ls /opt/pinbench/venv/bin/python /opt/pinbench/lib"],
    )  # fmt: skip
    assert b"/opt/pinbench/venv/bin/python" in out
    assert len(stack.client.volumes.list()) == volumes
    assert not stack.client.containers.list(all=True, filters={"label": BUILD_LABEL})


def test_the_context_goes_into_the_build_container_owned_by_root(tmp_path: Path) -> None:
    """As the engine's ``COPY`` wrote it: the evaluator's files become ``/opt/pinbench/lib``
    and keep their owner, which must not be whoever ran the build."""
    context = tmp_path / "context"
    (context / "evaluator").mkdir(parents=True)
    (context / "evaluator" / "module.py").write_text("x = 1\n")
    for path in (context, context / "evaluator", context / "evaluator" / "module.py"):
        os.chown(path, 1234, 1234)
    with tarfile.open(tmp_path / "context.tar", "w") as tar:
        tar.add(context, arcname="build", filter=build._as_root)
    with tarfile.open(tmp_path / "context.tar") as tar:
        owners = {(m.name, m.uid, m.gid, m.uname) for m in tar.getmembers()}
    assert owners == {
        (name, 0, 0, "root") for name in ("build", "build/evaluator", "build/evaluator/module.py")
    }


def test_auto_runner_picks_docker_when_an_image_is_pinned(stack: Stack) -> None:
    outcome = run_lockfile(stack.ws, _lock(stack.ws), runner="auto", say=quiet)
    assert show_run(stack.ws, outcome.id)["runner"] == "docker"


def _pinning_an_image_not_here(stack: Stack, version: str, *, tagged: bool) -> tuple[Lockfile, str]:
    """A lockfile pinning image ``version``, published with a digest this engine does not
    have (a version built elsewhere); ``tagged``: the engine's tag of that version names
    another image. The version is yanked at once, so other tests' ranges never pick it."""
    name = frameworks.image_name("onnxruntime")
    digest = "sha256:" + hashlib.sha256(version.encode()).hexdigest()
    manifest = {"kind": "image", "name": name, "version": version, "digest": digest}
    publish(stack.ws, parse_manifest(manifest), manifest_dir=Path("."), publisher="test")
    if tagged:
        stack.client.images.get(stack.images["onnxruntime"]).tag(name, version)
    lock = _lock(stack.ws, image=f"{name}@{version}")
    yank(stack.ws, ArtifactRef.parse(f"image/{name}@{version}"), "built elsewhere")
    return lock, digest


@pytest.mark.parametrize("retag", [False, True], ids=["missing", "tag-names-another-image"])
def test_an_image_other_than_the_pinned_digest_is_refused(stack: Stack, retag: bool) -> None:
    lock, pinned = _pinning_an_image_not_here(stack, f"1.99.{int(retag)}", tagged=retag)
    image = lock.body.environment.image if lock.body.environment else None
    assert image is not None and image.digest == pinned
    with pytest.raises(ImageMissing, match=pinned) as info:
        run_lockfile(stack.ws, lock, runner="docker", say=quiet)
    assert ("names another image" in str(info.value)) == retag
    assert image.name.startswith("pinbench/onnxruntime")
    failed = list_runs(stack.ws, limit=1)[0]
    assert failed["status"] == "failed" and pinned in failed["error"]


def test_a_lockfile_without_an_image_is_refused_by_docker(stack: Stack) -> None:
    """A lockfile made before any image was published pins the requirements only."""
    request = parse_request(DIGITS)
    with stack.ws.reads() as rows:
        refs = [
            r
            for r in resolve(request.specs(), SqlCandidateSource(rows)).refs
            if r.kind is not Kind.IMAGE
        ]
        bare = build_lockfile(rows, request, Resolution(tuple(refs)), 1)
    assert bare.body.environment is not None and bare.body.environment.image is None
    with pytest.raises(NoImagePinned, match="pinbench images build onnxruntime"):
        run_lockfile(stack.ws, bare, runner="docker", say=quiet)


HOSTILE = [
    ("network", {}, EvaluationFailed, "Connection refused"),
    ("write", {}, EvaluationFailed, "Read-only file system"),
    ("memory", {"memory_mb": 768}, OutOfMemory, "memory limit (768 MiB"),
    ("sleep", {"timeout_s": 20}, RunTimedOut, "time limit (20 s"),
]


@pytest.mark.parametrize(
    ("model", "limits", "error", "needle"), HOSTILE, ids=[h[0] for h in HOSTILE]
)
def test_a_hostile_model_fails_safely_in_the_container(
    stack: Stack, model: str, limits: dict[str, int], error: type[Exception], needle: str
) -> None:
    lock = _lock(stack.ws, model=f"evil/{model}@1", framework="torch@2.13.0", limits=limits)
    before = stack.listener.accepted
    with pytest.raises(error, match=needle.replace("(", r"\(")):
        run_lockfile(stack.ws, lock, runner="docker", say=quiet, allow_pickle=True)
    record = list_runs(stack.ws, limit=1)[0]
    assert record["status"] == "failed" and needle in record["error"]
    assert record["runner"] == "docker" and record["environment"] == stack.images["torch"]
    assert stack.listener.accepted == before
    assert stack.client.containers.list(all=True) == []  # removed, whatever happened


def test_the_network_payload_connects_only_outside_any_sandbox(stack: Stack) -> None:
    """The control for the test above: run locally with ``--sandbox none``, the same model
    reaches the listener; in the local runner's sandbox (its own network), it does not."""
    lock = _lock(stack.ws, model="evil/network@1", framework="torch@2.13.0")
    before = stack.listener.accepted
    with pytest.raises(Exception):  # noqa: B017 - it fails to connect, then is no module
        run_lockfile(stack.ws, lock, runner="local", say=quiet, allow_pickle=True)
    assert stack.listener.accepted == before
    with pytest.raises(Exception):  # noqa: B017 - it connects, then is no module
        run_lockfile(stack.ws, lock, runner="local", say=quiet, allow_pickle=True, sandbox="none")
    assert stack.listener.accepted == before + 1


def test_push_then_pull_by_digest_restores_the_pinned_image(stack: Stack) -> None:
    ref = ArtifactRef.parse(f"image/{frameworks.image_name('onnxruntime')}@1.0.0")
    digest = stack.images["onnxruntime"]
    lock = _lock(stack.ws)
    with image_registry() as registry:
        pushed = push(stack.ws, stack.client, ref, registry)
        assert pushed.reference.startswith(f"{registry}/{ref.name}@sha256:")
        stack.client.images.remove(digest, force=True)
        with pytest.raises(ImageMissing):
            run_lockfile(stack.ws, lock, runner="docker", say=quiet)
        pulled = pull(stack.ws, stack.client, ref, registry)
        assert pulled.image_id == digest and pulled.reference == pushed.reference
        assert run_lockfile(stack.ws, lock, runner="docker", say=quiet).status == "succeeded"

        # the registry's tag now names another image: pulled by digest, refused, removed
        base = stack.client.images.get("pinbench/base:bookworm")
        base.tag(f"{registry}/{ref.name}", "1.0.0")
        stack.client.images.push(f"{registry}/{ref.name}", "1.0.0")
        with pytest.raises(PulledWrongImage, match="refused and removed"):
            pull(stack.ws, stack.client, ref, registry)
        assert stack.client.images.get(digest).id == digest  # the pinned one is untouched


def test_a_chain_with_code_runs_in_a_container_as_its_stages_run_by_hand(
    stack: Stack, tmp_path: Path
) -> None:
    """Issue 50: a chain whose code comes from a publisher one does not trust runs in the
    documented sandbox (a server runs code in no other runner): the container is handed every
    stage's file, read-only, and scores as the three graphs run by hand with onnxruntime."""
    import numpy as np

    from tests.test_chains import _outputs, by_hand, publish_wakeword
    from tests.test_chains import request as chain_request

    files, (clips, truth) = publish_wakeword(stack.ws, tmp_path)
    lock = service.lock(stack.ws, chain_request())[0]
    assert lock.body.environment is not None and lock.body.environment.image is not None
    outcome = run_lockfile(stack.ws, lock, runner="docker", say=quiet, allow_code=True)
    info = show_run(stack.ws, outcome.id)
    assert info["status"] == "succeeded" and info["runner"] == "docker", info.get("error")
    scores = by_hand(files, clips)
    recorded = np.load(_outputs(stack.ws, info)).reshape(-1)
    np.testing.assert_allclose(recorded, scores, rtol=1e-5, atol=1e-6)
    assert info["binary_accuracy"] == pytest.approx(float(np.mean((scores >= 0.5) == truth)))
    stages = info["details"]["chain"]["stages"]
    assert [s["name"] for s in stages] == ["mel", "embed", "alexa"]
    assert info["details"]["environment"]["inside"]["executable"].startswith("/opt/pinbench")
