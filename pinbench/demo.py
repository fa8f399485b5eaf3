"""The demo: the whole flow on the built-in catalog, printing what it does.

init -> train and write the digits catalog -> publish -> yank -> resolve -> lock -> verify ->
run (accuracy, SingleStream, Offline on ONNX Runtime) -> compare; then it shows that a
tampered blob stops verification and that a published version cannot change.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.table import Table
from rich.text import Text

from pinbench import catalog as builtin
from pinbench.artifacts.digest import Digest
from pinbench.errors import UserError
from pinbench.evaluator.history import show_run
from pinbench.evaluator.run import run_lockfile
from pinbench.registry import catalog, service
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.manifest import load_manifest
from pinbench.registry.names import ArtifactRef, Kind, Spec
from pinbench.registry.publish import publish
from pinbench.registry.request import load_request
from pinbench.registry.verify import VerificationFailed, verify_lockfile
from pinbench.workspace import Workspace

MODEL = f"model/{builtin.MODEL_NAME}"
REQUESTS: dict[str, dict[str, Any]] = {
    "accuracy": {"name": "SingleStream", "mode": "accuracy"},
    "single-stream": {"name": "SingleStream", "min_duration_ms": 1000, "min_query_count": 500},
    "offline": {"name": "Offline", "min_duration_ms": 1000, "min_query_count": 1},
}


def _request(workdir: Path, label: str, scenario: dict[str, Any]) -> Path:
    path = workdir / f"request-{label}.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "model": f"{builtin.MODEL_NAME}@^1",
                "framework": "onnxruntime@>=1.17 <2",
                "dataset": f"{builtin.DATASET_NAME}@1",
                "system": {"arch": "amd64", "device": "cpu"},
                "scenario": {**scenario, "seed": 0},
                "batch_size": 1,
            },
            sort_keys=False,
        )
    )
    return path


def run_demo(ws: Workspace, workdir: Path, out: Console) -> None:
    def step(text: str) -> None:
        out.print(Text(f"\n== {text}", style="bold cyan"))

    def quiet(text: str) -> None:
        pass

    step("init")
    out.print(f"home {ws.settings.home}, schema {ws.init()}")

    step(f"train the built-in digits catalog in {workdir}")
    built = builtin.build(workdir)
    out.print(f"{len(built.manifests)} manifests (scikit-learn digits, no download)")

    step("publish")
    for path in built.manifests:
        result = publish(ws, load_manifest(path), manifest_dir=path.parent, publisher="demo")
        state = "published" if result.created else "already published, unchanged"
        out.print(f"{result.ref}: {state} (manifest {result.manifest_digest.short})")

    step(f"yank {MODEL}@1.2.0")
    catalog.yank(ws, ArtifactRef.parse(f"{MODEL}@1.2.0"), "trained with too little regularisation")
    out.print("yanked: ranges now skip 1.2.0; an exact pin still gets it")

    step(f"resolve {MODEL}@^1 (2.0.0-rc.1 is a prerelease, 1.2.0 is yanked)")
    for ref in service.resolve_specs(ws, [Spec.parse(f"{MODEL}@^1")]).refs:
        out.print(str(ref))

    locks: dict[str, Lockfile] = {}
    for label, scenario in REQUESTS.items():
        step(f"lock and verify: {label}")
        lockfile, _ = service.lock(ws, load_request(_request(workdir, label, scenario)))
        path = workdir / f"{label}.lock"
        lockfile.write(path)
        checks = verify_lockfile(ws, Lockfile.read(path))
        out.print(f"wrote {path.name} (id {lockfile.digest.short}), {len(checks)} items verified")
        locks[label] = lockfile

    step("run (ONNX Runtime, local runner)")
    table = Table("run", "scenario", "model", "p50", "p99", "throughput", "top1", box=None)
    for lockfile in locks.values():
        outcome = run_lockfile(ws, lockfile, say=quiet)
        info = show_run(ws, outcome.id)
        table.add_row(
            outcome.id[:8],
            f"{info['scenario']} {info['mode']}",
            info["model"],
            f"{info['latency_p50_ns'] / 1e3:.1f} µs",
            f"{info['latency_p99_ns'] / 1e3:.1f} µs",
            f"{info['throughput_sps']:,.0f}/s",
            f"{info['top1']:.4f}" if "top1" in info else "",
        )
    out.print(table)

    step("flip one byte of the stored model blob, verify again")
    model = locks["accuracy"].artifact(Kind.MODEL)
    assert model is not None
    blob = ws.store.path(Digest(model.files[0].sha256))
    original = blob.read_bytes()
    blob.chmod(0o644)
    try:
        blob.write_bytes(bytes([original[0] ^ 0x01]) + original[1:])
        try:
            verify_lockfile(ws, locks["accuracy"])
            raise UserError("verify passed on a tampered blob: this is a bug")
        except VerificationFailed as exc:
            out.print(Text(f"verify failed as it must:\n{exc}", style="yellow"))
    finally:
        blob.write_bytes(original)
        blob.chmod(0o444)
    verify_lockfile(ws, locks["accuracy"])
    out.print("restored; verify passes again")

    step(f"publish other bytes under {MODEL}@1.1.0")
    conflict = workdir / "model-conflict.yaml"
    data = yaml.safe_load((workdir / "model-digits-logreg-1.0.0.yaml").read_text())
    conflict.write_text(yaml.safe_dump({**data, "version": "1.1.0"}, sort_keys=False))
    try:
        publish(ws, load_manifest(conflict), manifest_dir=workdir, publisher="demo")
        raise UserError("a conflicting publish was accepted: this is a bug")
    except UserError as exc:
        out.print(Text(f"refused as it must: {exc}", style="yellow"))
    out.print(Text("\ndemo complete", style="bold green"))
