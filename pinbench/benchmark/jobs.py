"""Which evaluations the built-in benchmark runs, and how each is locked."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pinbench.catalog import DATASET_NAME, MODEL_NAME, cnn, resnet
from pinbench.catalog.digits import MODEL_VERSIONS
from pinbench.catalog.parts import check_parts
from pinbench.registry import service
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.request import Request, parse_request
from pinbench.workspace import Workspace

FRAMEWORKS = ("onnxruntime", "torch", "tensorflow")
RESNET_FRAMEWORKS = ("onnxruntime", "torch")
SCENARIOS: dict[str, dict[str, Any]] = {
    "accuracy": {"name": "SingleStream", "mode": "accuracy"},
    "SingleStream": {"name": "SingleStream", "min_duration_ms": 1000, "min_query_count": 200},
    "Offline": {"name": "Offline", "min_duration_ms": 1000, "min_query_count": 1},
}
ANY_1 = "^1"


@dataclass(frozen=True, slots=True)
class Job:
    model: str
    framework: str
    dataset: str
    scenario: str
    """A key of ``SCENARIOS``."""
    version: str = ANY_1
    """The model's range (an exact version pins one of several)."""

    @property
    def label(self) -> str:
        """The model as the table names it."""
        return self.model if self.version == ANY_1 else f"{self.model}@{self.version}"

    @property
    def slug(self) -> str:
        """A file name for the job's lockfile."""
        return f"{self.label.replace('/', '-')}.{self.framework}.{self.scenario}"


def demo_jobs() -> list[Job]:
    """The digits CNN in three frameworks, ResNet-50 in two: accuracy (CNN only),
    SingleStream and Offline."""
    jobs = [Job(cnn.model_name(fw), fw, DATASET_NAME, s) for fw in FRAMEWORKS for s in SCENARIOS]
    jobs += [
        Job(resnet.model_name(fw), fw, resnet.DATASET, s)
        for fw in RESNET_FRAMEWORKS
        for s in ("SingleStream", "Offline")
    ]
    return jobs


def jobs(parts: Iterable[str]) -> list[Job]:
    """The chosen parts' evaluations: the demo's, plus the accuracy of every version of the
    logistic regression."""
    chosen = check_parts(parts)
    out = []
    if "digits" in chosen:
        out += [
            Job(MODEL_NAME, "onnxruntime", DATASET_NAME, "accuracy", version)
            for version, _ in MODEL_VERSIONS
        ]
    for job in demo_jobs():
        part = "cnn" if job.dataset == DATASET_NAME else "resnet50"
        if part in chosen:
            out.append(job)
    return out


def request(job: Job) -> Request:
    """The job's evaluation request, parsed."""
    return parse_request(request_data(job), source=f"benchmark {job.label} {job.scenario}")


def request_data(job: Job) -> dict[str, Any]:
    """The job's evaluation request document."""
    scenario = {**SCENARIOS[job.scenario], "seed": 0}
    threads = None  # ResNet-50: the framework's default (every core)
    if job.dataset == resnet.DATASET:  # 35-70 ms per image on two cores: a short run
        scenario.update(min_duration_ms=1000, min_query_count=16)
    else:  # microseconds per digit: a second thread only adds hand-off time and noise
        threads = 1
    return {
        "model": f"{job.model}@{job.version}",
        "framework": f"{job.framework}@*",
        "dataset": f"{job.dataset}@1",
        "system": {"arch": "amd64", "device": "cpu"},
        "scenario": scenario,
        "batch_size": 1,
        "threads": threads,
    }


def lock(ws: Workspace, job: Job) -> Lockfile:
    return service.lock(ws, request(job))[0]
