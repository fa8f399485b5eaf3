"""What the evaluator asks of a model's processing code during one run (as it asks a task):
``open_processing`` loads it (refused without the run's consent), ``prepare`` makes the feed,
``first`` checks the first prediction before timing, ``every`` post-processes every answer."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pinbench.processing.consent import CodeRefused, code_roles
from pinbench.processing.loading import Loaded, load, python_version
from pinbench.processing.post import Answer, Post
from pinbench.processing.pre import prepare_by_code
from pinbench.registry.lockfile import LockedModel
from pinbench.registry.ports import Input
from pinbench.worker.latency_metrics import series
from pinbench.worker.stop import Stop

if TYPE_CHECKING:
    from pinbench.worker.feed import Feed
    from pinbench.worker.job import Evidence
    from pinbench.worker.samples import Samples

Say = Callable[[str], None]
LATENCY = "postprocess_latency"
"""The post-processing calls' series: ``postprocess_latency_p50_ns`` ... (decision 220)."""


class Processing:
    """A run's loaded ``preprocess`` and ``postprocess`` (either may be absent)."""

    def __init__(
        self,
        loaded: dict[str, Loaded],
        model: LockedModel,
        files: Mapping[str, Path],
        pinned: Mapping[str, str],
    ) -> None:
        self.pre = loaded.get("preprocess")
        post = loaded.get("postprocess")
        self.post = Post(post, model.outputs, files) if post is not None else None
        self.files = files
        self.pinned = pinned
        """Each model file's sha256 (the lockfile's): part of the preprocess cache key."""
        self.loaded = loaded

    def record(self) -> dict[str, Any]:
        """``details.processing``: each code's place, sha256 and libraries, and Python's
        version: that the publisher's code ran in this run, and which."""
        out: dict[str, Any] = {role: code.record() for role, code in self.loaded.items()}
        out["python"] = python_version()
        return out

    def prepare(
        self,
        specs: Sequence[Input],
        samples: Samples,
        *,
        cache: Path | None,
        dataset_digest: str,
        say: Say,
        stop: Stop,
    ) -> Feed | None:
        """The feed ``preprocess`` makes from the samples; None without ``preprocess``."""
        if self.pre is None:
            return None
        return prepare_by_code(
            self.pre,
            specs,
            samples,
            cache=cache,
            dataset_digest=dataset_digest,
            files=self.files,
            pinned=self.pinned,
            say=say,
            stop=stop,
        )

    def first(self, raw: Answer, batch: int) -> Answer:
        """The first prediction as the task sees it (post-processed and checked)."""
        return raw if self.post is None else self.post.first(raw, batch)

    def every(
        self, answers: dict[int, Answer], stop: Stop, evidence: Evidence, say: Say
    ) -> dict[int, Answer]:
        """Every sample's answer post-processed, each call timed: the series goes into the
        metrics, its raw values into ``evidence.postprocess``."""
        if self.post is None:
            return answers
        say(f"post-processing {len(answers)} answers with {self.post.code.where} (timed apart)")
        out, times = self.post.every(answers, stop)
        evidence.metrics.update(series(times, LATENCY))
        evidence.postprocess = times
        return out


def open_processing(
    model: LockedModel,
    files: Mapping[str, Path],
    pinned: Mapping[str, str],
    *,
    allow: bool,
    say: Say,
) -> Processing | None:
    """The model's processing code loaded (its import-time code runs now, inside the runner),
    or None when it carries none; refused (``CodeRefused``) unless the run was allowed to run
    it: the runner checks again what the caller checked."""
    roles = code_roles(model)
    if not roles:
        return None
    if not allow:
        raise CodeRefused(
            model=f"{model.name}@{model.version}",
            roles=roles,
            reason="This evaluation was not allowed to run it (pinbench run --allow-code)",
        )
    processing = [r for r in roles if r != "builder"]  # the predictor loads a builder
    if not processing:
        return None
    say(f"loading the model's {' and '.join(processing)} code (allowed: --allow-code)")
    codes = {role: getattr(model, role) for role in processing}
    return Processing(load(codes, files, pinned), model, files, pinned)
