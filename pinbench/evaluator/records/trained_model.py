"""A training run's final weights published as a new model version (``run --publish-as``,
``runs publish``).

The new version is the trained model's manifest under the new name and version: the same
format, architecture, inputs, outputs and other files (labels), the weights file replaced by
the run's final weights, ``trained_by`` naming the run and its lockfile, and the attributes
(which described the old weights) replaced by ``trained_from``. It is published
like any manifest (``registry.publish``), which checks the claim against the recorded run
(``registry.trained``), so the version can only say what the registry saw.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pinbench.errors import UserError
from pinbench.registry.names import ArtifactRef, Kind
from pinbench.registry.publish import PublishResult
from pinbench.registry.trained import WEIGHTS_SUFFIX
from pinbench.workspace import Workspace


class NotPublishable(UserError):
    """A run whose weights cannot become a model version, or a reference that cannot name one."""

    def __init__(self, *, what: str, reason: str) -> None:
        super().__init__(f"cannot publish {what}: {reason}")
        self.what = what
        self.reason = reason


def target_ref(text: str) -> ArtifactRef:
    """``model/NAME@VERSION`` (an exact version), or NotPublishable saying what is wrong."""
    try:
        ref = ArtifactRef.parse(text)
    except UserError as exc:
        raise NotPublishable(what=repr(text[:200]), reason=str(exc)) from None
    if ref.kind is not Kind.MODEL:
        raise NotPublishable(
            what=str(ref), reason="trained weights are published as a model: model/NAME@VERSION"
        )
    return ref


def check_target(ws: Workspace, ref: ArtifactRef) -> None:
    """Refuse a target version already taken, before a training run spends its time."""
    from pinbench.registry import catalog
    from pinbench.registry.catalog import NotFound

    with ws.reads() as rows:
        try:
            catalog.published_manifest(rows, ref)
        except NotFound:
            return
    raise NotPublishable(
        what=str(ref), reason="that version is already published: choose a new version"
    )


def publish_trained(
    ws: Workspace,
    run_id: str,
    target: str,
    *,
    publisher: str | None = None,
    say: Callable[[str], None] | None = None,
) -> PublishResult:
    """Publish run ``run_id``'s final weights as model ``target``; nothing is left behind
    when anything is refused."""
    from pinbench.artifacts.digest import Digest
    from pinbench.registry.manifest import parse_manifest
    from pinbench.registry.publish import publish

    ref = target_ref(target)
    data, blobs = _manifest_of(ws, run_id, ref)
    manifest = parse_manifest(data, source=f"{ref} (from run {run_id})")
    with tempfile.TemporaryDirectory(dir=ws.store.tmp, prefix="publish-as-") as tmp:
        for path, sha256 in blobs.items():
            dest = Path(tmp, path)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ws.store.local(Digest.parse(sha256)), dest)
        return publish(ws, manifest, manifest_dir=Path(tmp), publisher=publisher, say=say)


def _manifest_of(
    ws: Workspace, run_id: str, ref: ArtifactRef
) -> tuple[dict[str, Any], dict[str, str]]:
    """The new version's manifest data and its files (path -> sha256 in the store)."""
    from pinbench.db.run_row import read_run
    from pinbench.evaluator.records.run_view import locate
    from pinbench.registry import catalog
    from pinbench.registry.lockfile import Lockfile

    with ws.reads() as rows:
        run = read_run(rows, str(locate(rows, run_id)[0]))
        assert run is not None  # located in this snapshot
        what = f"run {run.id}'s weights"
        training = (run.details or {}).get("training")
        weights = training.get("weights_sha256") if isinstance(training, dict) else None
        if not isinstance(weights, str):
            raise NotPublishable(what=what, reason="it is not a training run (no final weights)")
        if run.status != "succeeded":
            raise NotPublishable(
                what=what, reason=f"the run {run.status} ({run.error}); publish a succeeded run"
            )
        ((body,),) = rows(
            "SELECT body FROM lockfiles WHERE digest = :d", {"d": run.lockfile_digest}
        )
        lock = Lockfile.from_bytes(str(body).encode())
        trained = lock.body.model
        assert trained is not None  # a training lockfile pins the model it trains
        data = catalog.published_manifest(
            rows, ArtifactRef.parse(f"model/{trained.name}@{trained.version}")
        )
        lockfile_digest, full_id = run.lockfile_digest, run.id
    suffix = WEIGHTS_SUFFIX.get(str(data.get("format")))
    named = [f["path"] for f in data["files"] if suffix and f["path"].endswith(suffix)]
    if len(named) != 1:
        raise NotPublishable(
            what=what, reason=f"model {trained.name}'s files hold no single {suffix} weights file"
        )
    blobs = {f["path"]: f["sha256"] for f in data["files"]}
    blobs[named[0]] = weights
    data.update(
        name=ref.name,
        version=str(ref.version),
        description=(
            f"model/{trained.name}@{trained.version} trained by pinbench run {full_id} "
            f"(lockfile {lockfile_digest[:12]})"
        ),
        files=[{"path": path, "sha256": sha} for path, sha in blobs.items()],
        trained_by={"run": full_id, "lockfile": lockfile_digest, "weights": named[0]},
        attributes={"trained_from": f"model/{trained.name}@{trained.version}"},
        trusted=False,
    )
    return data, blobs
