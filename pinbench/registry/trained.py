"""A model version's ``trained_by`` claim, checked against the run this registry recorded.

A manifest may say which training run its weights come from (``run --publish-as`` writes
it). The claim is provenance, so it is never taken on the publisher's word: publishing
refuses it unless the run is recorded here, succeeded, is a run of the named lockfile, and
its final weights (the digest the host computed when it stored them) are byte for byte the
manifest's ``trained_by.weights`` file, in the format the run wrote them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pinbench.errors import UserError
from pinbench.registry.manifest import Manifest, ModelManifest
from pinbench.registry.manifest_parts import FileEntry

if TYPE_CHECKING:
    from pinbench.db.plain import Rows

FORMAT_OF_WEIGHTS = {"safetensors": "safetensors", "keras": "keras"}
"""A training run's ``weights_format`` -> the model format its weights file is in."""
WEIGHTS_SUFFIX = {"safetensors": ".safetensors", "keras": ".keras"}
"""A trainable model format -> the suffix of the one file its predictor loads."""


class TrainedByRefused(UserError):
    """A ``trained_by`` claim the recorded run does not back."""

    def __init__(self, *, model: str, run: str, reason: str) -> None:
        super().__init__(f"{model}: trained_by names run {run}, but {reason}")
        self.model = model
        self.run = run
        self.reason = reason


def check_trained_by(
    rows: Rows,
    manifest: Manifest,
    checked: list[tuple[FileEntry, int]],
    *,
    adopted: bool = False,
) -> None:
    """Refuse ``manifest`` when its ``trained_by`` is not what this registry recorded;
    ``checked`` are its files with the sha256 staging verified. A version ``adopted`` from
    another registry is checked only when the run it names is recorded here (else the claim
    is about that registry's run, checked there)."""
    if not isinstance(manifest, ModelManifest) or manifest.trained_by is None:
        return
    from pinbench.db.plain import json_value

    claim = manifest.trained_by

    def refuse(reason: str) -> TrainedByRefused:
        return TrainedByRefused(
            model=f"model/{manifest.name}@{manifest.version}", run=claim.run[:80], reason=reason
        )

    suffix = WEIGHTS_SUFFIX.get(manifest.format)
    loaded = [f.path for f, _ in checked if suffix and f.path.endswith(suffix)]
    if loaded != [claim.weights]:
        raise refuse(
            f"the file a {manifest.format} model loads is its one {suffix or '(trainable)'} "
            f"file, and trained_by.weights must name it (files: {', '.join(loaded) or 'none'})"
        )
    found = rows(
        "SELECT lockfile_digest, status, details FROM runs WHERE id = :id", {"id": claim.run}
    )
    if not found and adopted:
        return
    if not found:
        raise refuse("no run with that id is recorded in this registry (give the full run id)")
    digest_of_lock, status = str(found[0][0]), str(found[0][1])
    details = json_value(found[0][2]) if found[0][2] is not None else None
    if digest_of_lock != claim.lockfile:
        raise refuse(
            f"that run is a run of lockfile {digest_of_lock[:12]}, not of {claim.lockfile[:12]}"
        )
    from pinbench.registry.lockfile import Lockfile

    body = rows("SELECT body FROM lockfiles WHERE digest = :d", {"d": digest_of_lock})
    if not body or Lockfile.from_bytes(str(body[0][0]).encode()).body.training is None:
        raise refuse("that run's lockfile has no training section: it trained nothing")
    if status != "succeeded":
        raise refuse(f"that run {status}: only a succeeded run's weights are published")
    training: Any = (details if isinstance(details, dict) else {}).get("training")
    weights = training.get("weights_sha256") if isinstance(training, dict) else None
    if not isinstance(weights, str):
        raise refuse("that run is not a training run (it recorded no final weights)")
    expected = FORMAT_OF_WEIGHTS.get(str(training.get("weights_format")))
    if manifest.format != expected:
        raise refuse(
            f"it wrote its weights as {training.get('weights_format')}, and this manifest's "
            f"format is {manifest.format}"
        )
    digest = next((f.sha256 for f, _ in checked if f.path == claim.weights), None)
    if digest != weights:
        raise refuse(
            f"file {claim.weights!r} has sha256 {str(digest)[:12]}, not the run's final "
            f"weights (sha256 {weights[:12]})"
        )
