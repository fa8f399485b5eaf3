"""The evaluator inside an isolated environment: ``python -m pinbench.worker.main JOB OUT``.

``python -m pinbench.worker.main --serve JOBS OUT [IDLE_S]`` is a warm evaluator
(``pinbench.evaluator.warm``): it runs job after job in this one process, the frameworks it
imported staying imported. Job ``N`` is ``JOBS/N/job.json``, started once ``JOBS/N/go`` exists;
its results go to ``OUT/N`` and its exit status, last, to ``OUT/N.exit``. It ends after
``IDLE_S`` seconds without a job (default 600), or when the process that started it is gone.

Reads ``JOB`` (``results.JobFile``), checks the sha256 of every file it was handed against the
lockfile (the bytes are checked again inside the isolation boundary), loads the model from a
folder that holds its files and nothing else (the one it was handed when it is one, else one
it makes in its scratch: ``pinbench.worker.model_folder``), evaluates, and writes
``OUT/result.json`` plus arrays. Exit status: 0 succeeded, 1 the evaluation failed (the
reason is in ``result.json``), 2 the job itself could not be read, 3 the host's clock it
names could not be reached. Imports no database code.
"""

from __future__ import annotations

import gc
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from pinbench import typed
from pinbench.artifacts.digest import hash_file
from pinbench.errors import PinbenchError, UserError
from pinbench.registry.lockfile import LockedFile, Lockfile
from pinbench.registry.names import Kind
from pinbench.worker.job import Evidence, Job, pinned_files
from pinbench.worker.measure import measure
from pinbench.worker.model_folder import own_folder
from pinbench.worker.results import JobFile, write_results
from pinbench.worker.source import evaluator_digest

if TYPE_CHECKING:
    from pinbench.training.distributed.placement import RankPlacement


class TamperedInput(UserError):
    def __init__(self, *, problems: list[str]) -> None:
        super().__init__(
            "inputs handed to the evaluator failed verification: " + "; ".join(problems)
        )
        self.problems = problems


def _paths(lock: Lockfile, kind: Kind | str, given: dict[str, str]) -> dict[str, Path]:
    """The handed-in files of one artifact, each checked against the lockfile's sha256."""
    role = kind.value if isinstance(kind, Kind) else kind
    return _checked(role, pinned_files(lock, kind), given)


def _stage_folders(
    lock: Lockfile, given: dict[str, dict[str, str]], scratch: Path
) -> dict[str, dict[str, Path]]:
    """A chain's stages' handed-in files, each checked against the lockfile's sha256 as the
    model's are (every problem of every stage said at once), each stage in a folder of its own
    (``own_folder``); a stage handed in that the chain has not is refused too."""
    chain = lock.body.chain
    stages = chain.stages if chain is not None else []
    problems = [
        f"chain stage {name!r} is not the lockfile's"
        for name in sorted(set(given) - {stage.name for stage in stages})
    ]
    checked = {}
    for stage in stages:
        files, given_files = lock.stage_artifact(stage).files, given.get(stage.name, {})
        try:
            checked[stage.name] = _checked(f"stage {stage.name} model", files, given_files)
        except TamperedInput as exc:
            problems += exc.problems
    if problems:
        raise TamperedInput(problems=problems)
    return {name: own_folder(files, scratch / "stages" / name) for name, files in checked.items()}


def _checked(role: str, files: list[LockedFile], given: dict[str, str]) -> dict[str, Path]:
    problems, out = [], {}
    for f in files:
        where = given.get(f.path)
        if where is None:
            problems.append(f"{role} file {f.path} was not handed in")
            continue
        try:
            digest, size = hash_file(Path(where))
        except OSError as exc:
            problems.append(f"{role} file {f.path}: {exc.strerror}")
            continue
        if digest.hex != f.sha256 or size != f.size:
            problems.append(
                f"{role} file {f.path} is sha256 {digest.hex[:12]}, pinned {f.sha256[:12]}"
            )
        out[f.path] = Path(where)
    if problems:
        raise TamperedInput(problems=problems)
    return out


def _without(error: str, folders: list[str]) -> str:
    """``error`` with this evaluator's own folders (the model's, its scratch) named relatively:
    a recorded error holds no host path."""
    for folder in folders:  # the longest first: the model's may be inside the scratch
        error = error.replace(folder + "/", "").replace(folder, ".")
    return error


def environment_facts() -> dict[str, str]:
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "executable": sys.executable,
        "evaluator": evaluator_digest(),
    }


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


IDLE_S = 600.0
"""How long a warm evaluator waits for its next job before it ends."""
POLL_S = 0.005
"""How often a warm evaluator looks for its next job."""
SERVED = "pinbench-warm: served job"
"""The line a warm evaluator prints after each job (its output for that job is complete)."""


def serve(jobs: Path, out: Path, idle_s: float = IDLE_S) -> int:
    """Run job after job (module docstring); 0 when it ends for want of work or of a parent."""
    parent, n, last = os.getppid(), 1, time.monotonic()
    while True:
        job = jobs / str(n)
        if (job / "go").exists():
            status = main([str(job / "job.json"), str(out / str(n))])
            print(f"{SERVED} {n}", file=sys.stderr, flush=True)
            done = out / f".{n}.exit"
            done.write_text(str(status))
            done.rename(out / f"{n}.exit")
            gc.collect()
            n, last = n + 1, time.monotonic()
            continue
        if time.monotonic() - last > idle_s or os.getppid() != parent:
            return 0
        time.sleep(POLL_S)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--serve"] and len(argv) in (3, 4):
        try:
            idle_s = float(argv[3]) if len(argv) == 4 else IDLE_S
        except ValueError:
            idle_s = -1
        if not idle_s > 0:
            print(f"pinbench worker: IDLE_S must be above 0: {argv[3]!r}", file=sys.stderr)
            return 2
        return serve(Path(argv[1]), Path(argv[2]), idle_s)
    if len(argv) != 2:
        print(
            "usage: python -m pinbench.worker.main JOB.json OUT_DIR\n"
            "       python -m pinbench.worker.main --serve JOBS_DIR OUT_DIR [IDLE_S]",
            file=sys.stderr,
        )
        return 2
    out = Path(argv[1])
    try:
        spec = typed.decode_json(Path(argv[0]).read_bytes(), JobFile)
        lock = Lockfile.from_bytes(spec.lockfile.encode("utf-8"), source="job lockfile")
    except (OSError, msgspec.DecodeError, PinbenchError) as exc:
        print(f"pinbench worker: cannot read the job: {exc}", file=sys.stderr)
        return 2
    evidence, error = Evidence(), None
    hidden: list[str] = []
    if len(spec.clock) not in (0, 2, 3) or (spec.clock and spec.clock_socket):
        print(
            "pinbench worker: the job's clock names two or three descriptors, a socket or neither",
            file=sys.stderr,
        )
        return 2
    remote = None
    if spec.clock or spec.clock_socket:
        from pinbench.worker.remote_test import RemoteTest, connected

        try:
            remote = RemoteTest(spec.clock or connected(spec.clock_socket))
        except OSError as exc:  # 3, not 2: the job was read (2 tells an image too old for it)
            print(f"pinbench worker: the host's clock cannot be reached: {exc}", file=sys.stderr)
            return 3
    try:
        with tempfile.TemporaryDirectory(prefix="pinbench-") as scratch:
            hidden = [scratch]  # an error while the folders are placed names no host path
            model = own_folder(_paths(lock, Kind.MODEL, spec.model), Path(scratch))
            stages = _stage_folders(lock, spec.stages, Path(scratch))
            placed = [model, *stages.values()]
            roots = {str(p)[: -len(n) - 1] for files in placed for n, p in files.items()}
            hidden = sorted({*roots, scratch}, key=len, reverse=True)
            job = Job(
                lock=lock,
                model_paths=model,
                stage_paths=stages,
                data_paths=_paths(lock, Kind.DATASET, spec.dataset),
                validation_paths=_paths(lock, "validation", spec.validation),
                scratch=Path(scratch),
                cache=Path(spec.cache) if spec.cache else None,
                trace=spec.trace,
                allow_pickle=spec.allow_pickle,
                allow_code=spec.allow_code,
                remote=remote,
                ranks=_ranks(spec.ranks),
            )
            measure(job, evidence, _say)
    except PinbenchError as exc:
        error = _without(str(exc), hidden)
    except Exception as exc:  # the model's own failure: recorded, never raised past here
        error = _without(f"{type(exc).__name__}: {exc}", hidden)
    write_results(out, lock.digest.hex, evidence, error, environment_facts())
    return 1 if error else 0


def _ranks(data: dict[str, object] | None) -> RankPlacement | None:
    """The job's rank placement, parsed (``BadPlacement`` fails the run naming it)."""
    from pinbench.training.distributed.placement import parse

    return None if data is None else parse(data)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
