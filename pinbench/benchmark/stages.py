"""The DVC pipeline's last stages, over the folders ``pinbench.catalog.stages`` writes:

- publish: every manifest of the catalog folders into a registry of its own (a
  ``PINBENCH_HOME`` with SQLite in it), and a record of what was published (refs and manifest
  digests: the same whenever the catalog is);
- evaluate: the benchmark's jobs locked and run (local runner) in a copy of that registry, so
  the published registry stays as published; the lockfiles (the same whenever the catalog is)
  and the runs;
- report: the benchmark table (Markdown, JSON), the accuracy alone (the pipeline's metrics,
  the same whenever the catalog and frameworks are) and an HTML report of the runs.

Each stage works in the folders it is given, whatever ``PINBENCH_HOME``,
``PINBENCH_DATABASE_URL`` or ``PINBENCH_URL`` say.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pinbench import reports
from pinbench.benchmark import jobs
from pinbench.benchmark.jobs import Job
from pinbench.benchmark.table import Row, accuracy, markdown, rows
from pinbench.catalog.stages import MissingStageInput
from pinbench.config import Settings
from pinbench.console import json_text
from pinbench.errors import UserError
from pinbench.evaluator.records.run_view import show_run
from pinbench.evaluator.run import run_lockfile
from pinbench.registry.dataset_manifest import DatasetManifest
from pinbench.registry.manifest import FrameworkManifest, Manifest, load_manifest
from pinbench.registry.publish import publish as publish_manifest
from pinbench.sdk.files import folder as out_folder
from pinbench.workspace import Workspace

Say = Callable[[str], None]
DATABASE = "pinbench.db"
RUNS = "runs.json"
LOCKS = "locks"
HOME = "home"
TABLE_MD = "benchmark.md"
TABLE_JSON = "benchmark.json"
METRICS = "accuracy.json"
HTML = "report.html"


class FolderInUse(UserError):
    def __init__(self, *, folder: Path) -> None:
        super().__init__(
            f"{folder} exists: remove it first (an evaluation starts from the published registry)"
        )
        self.folder = folder


def workspace_at(home: Path) -> Workspace:
    """A workspace on ``home`` with its SQLite database inside, whatever the environment says."""
    return Workspace(Settings.from_env({"PINBENCH_HOME": str(home)}))


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json_text(data))


def _rank(manifest: Manifest) -> int:
    """Frameworks, then datasets, then models (the order ``build`` writes them in)."""
    if isinstance(manifest, FrameworkManifest):
        return 0
    return 1 if isinstance(manifest, DatasetManifest) else 2


def catalog_manifests(folders: Iterable[Path]) -> list[tuple[Path, Manifest]]:
    """Every ``*.yaml`` manifest at the top of ``folders``, in publishing order."""
    found = []
    for folder in folders:
        paths = sorted(folder.glob("*.yaml")) if folder.is_dir() else []
        if not paths:
            raise MissingStageInput(folder=folder, missing=["*.yaml manifests"], stage="export")
        found += [(path, load_manifest(path)) for path in paths]
    return sorted(found, key=lambda pm: (_rank(pm[1]), pm[1].name, pm[1].version))


def publish(home: Path, folders: Iterable[Path], say: Say) -> list[dict[str, Any]]:
    """Publish the folders' manifests into the registry at ``home`` (created if need be);
    return the record (``catalog publish --record`` writes it): each artifact's ref and
    manifest digest, in publishing order."""
    manifests = catalog_manifests(folders)
    ws = workspace_at(home)
    try:
        ws.init()
        published = []
        for path, manifest in manifests:
            result = publish_manifest(ws, manifest, manifest_dir=path.parent, publisher="pipeline")
            say(f"{result.ref}: {'published' if result.created else 'already published'}")
            digest = result.manifest_digest.hex
            published.append({"ref": str(result.ref), "manifest_digest": digest})
    finally:
        ws.close()
    return published


def copy_registry(registry: Path, home: Path) -> None:
    """The registry's database and blobs into a new ``home`` (its caches are rebuilt)."""
    if not (registry / DATABASE).is_file():
        raise MissingStageInput(folder=registry, missing=[DATABASE], stage="publish")
    if home.exists():
        raise FolderInUse(folder=home)
    out_folder(home.parent, option="OUT_DIR", parents=True)  # inputs checked first
    home.mkdir()
    for name in (DATABASE, f"{DATABASE}-wal"):
        if (registry / name).is_file():
            shutil.copy2(registry / name, home / name)
    shutil.copytree(registry / "blobs", home / "blobs")


def evaluate(
    registry: Path, out: Path, parts: Iterable[str], say: Say
) -> list[tuple[Job, dict[str, Any]]]:
    """Lock and run the parts' jobs in ``out/home`` (a copy of ``registry``); write each
    lockfile to ``out/locks/`` and the runs to ``out/runs.json``; return (job, run) pairs."""
    chosen = jobs.jobs(parts)
    copy_registry(registry, out / HOME)
    (out / LOCKS).mkdir(exist_ok=True)
    ws = workspace_at(out / HOME)
    done = []
    try:
        ws.init()
        for job in chosen:
            lockfile = jobs.lock(ws, job)
            lockfile.write(out / LOCKS / f"{job.slug}.lock")
            outcome = run_lockfile(ws, lockfile, runner="local", say=lambda text: None)
            info = show_run(ws, outcome.id)
            info.pop("lockfile_body")
            say(f"{job.framework:<12} {job.label} {job.scenario}: run {outcome.id[:8]}")
            done.append((job, info))
    finally:
        ws.close()
    write_json(out / RUNS, [{"job": asdict(job), "run": info} for job, info in done])
    return done


def load_runs(evaluation: Path) -> list[tuple[Job, dict[str, Any]]]:
    if not (evaluation / RUNS).is_file():
        raise MissingStageInput(folder=evaluation, missing=[RUNS], stage="evaluate")
    data = json.loads((evaluation / RUNS).read_text())
    return [(Job(**item["job"]), item["run"]) for item in data]


def _page(table: list[Row], runs: list[tuple[Job, dict[str, Any]]]) -> str:
    host = runs[0][1].get("host", {}) if runs else {}
    return (
        "# Benchmark: the built-in catalog\n\n"
        "Written by `dvc repro` (stage report, `pinbench catalog report`). Accuracy is "
        f"reproduced exactly ({METRICS}); latencies are measured on "
        f"{host.get('cpu', 'an unknown CPU')}, {host.get('cores', '?')} cores, local runner.\n\n"
        + markdown(table)
    )


def report(evaluation: Path, out: Path, *, html: bool = True) -> list[Path]:
    """The benchmark table (Markdown, JSON), the accuracy metrics and, with ``html``, the
    HTML report of every run, under ``out``; return the files written."""
    runs = load_runs(evaluation)
    table = rows(runs)
    out_folder(out, option="OUT_DIR", parents=True)
    (out / TABLE_MD).write_text(_page(table, runs))
    write_json(out / TABLE_JSON, [r.to_json() for r in table])
    write_json(out / METRICS, accuracy(table))
    written = [out / TABLE_MD, out / TABLE_JSON, out / METRICS]
    if html:
        ws = workspace_at(evaluation / HOME)
        try:
            gathered = reports.gather(ws, [info["id"] for _, info in runs])
        finally:
            ws.close()
        (out / HTML).write_bytes(reports.render(gathered, "html")[1])
        written.append(out / HTML)
    return written
