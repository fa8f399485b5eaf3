"""``Lockfile`` (a pinned evaluation, ready to verify and run) and ``Run`` (a recorded run: its
metrics, its raw latencies, and what can be asked of it next), both bound to the ``Registry``
they came from."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from pinbench.artifacts.ahead import HashesAhead
    from pinbench.evaluator.records.run_outputs import Exported
    from pinbench.evaluator.verdicts.rerun import Verdict
    from pinbench.registry.lockfile import Lockfile as LockfileBody
    from pinbench.registry.verify import FileCheck
    from pinbench.sdk.registry import ProgressFactory, Registry, Say
    from pinbench.worker.stop import Stop


class Lockfile:
    """A lockfile: every artifact of one evaluation pinned by sha256 (``body``), bound to a
    registry. ``new``: whether ``Registry.lock`` recorded it for the first time."""

    def __init__(self, body: LockfileBody, registry: Registry, *, new: bool = False) -> None:
        self.body = body
        self.registry = registry
        self.new = new

    @property
    def digest(self) -> str:
        """The lockfile's id: the sha256 of its canonical bytes."""
        return self.body.digest.hex

    @property
    def artifacts(self) -> list[str]:
        """``KIND/NAME@VERSION`` of each pinned artifact."""
        return [a.ref for a in self.body.body.artifacts]

    def to_json(self) -> Any:
        """The lockfile as a JSON document (a fresh copy: edit it freely)."""
        return self.body.to_json()

    def write(self, path: Path) -> None:
        """Write the canonical bytes to ``path``."""
        self.body.write(path)

    def verify(
        self,
        *,
        rehash: bool = False,
        progress: ProgressFactory | None = None,
        say: Say | None = None,
        ahead: HashesAhead | None = None,
    ) -> list[FileCheck]:
        """Check the lockfile against the registry (every section re-derived from the pinned
        manifests) and every pinned byte against its sha256; raise ``VerificationFailed``
        naming each failure. The pinned blobs are hashed in a child process while the
        lockfile is re-derived (``ahead``: hashing started already). Local registries only."""
        from pinbench.registry.verify import verify_lockfile

        ws = self.registry._local("verify")
        if ahead is not None:
            return verify_lockfile(
                ws, self.body, progress=progress, say=say, rehash=rehash, ahead=ahead
            )
        from pinbench.artifacts.ahead import hashes_ahead, pins_of

        with hashes_ahead(ws.store, pins_of(self.body.canonical), rehash=rehash) as started:
            if progress is not None:
                started.show(progress)
            return verify_lockfile(
                ws, self.body, progress=progress, say=say, rehash=rehash, ahead=started
            )

    def run_on(
        self,
        systems: Sequence[str],
        *,
        runner: str = "auto",
        trace: str = "none",
        retries: int = 0,
        say: Say | None = None,
    ) -> list[list[dict[str, Any]]]:
        """Through a server started with ``--cluster``: one run per system named (``["all"]``:
        every live system meeting the lockfile's placement), each followed to its end with
        the retries the server made of it (``retries``: when its system is lost); a chain of
        run records per system."""
        from pinbench.sdk.placement import run_on

        quiet: Say = say or (lambda _: None)
        return run_on(self, systems, runner=runner, trace=trace, retries=retries, say=quiet)

    def run(
        self,
        *,
        runner: str = "auto",
        trace: str = "none",
        allow_pickle: bool = False,
        say: Say | None = None,
        stop: Stop | None = None,
        check: bool = True,
        allow_code: bool = False,
        sandbox: str = "bwrap",
        audit: bool = False,
    ) -> Run:
        """Verify every pinned byte, run the lockfile's scenario and record the run; on a
        server, queue it there and wait. Returns the recorded run; raises when it did not
        succeed, unless ``check`` is False and the run was recorded (failed or interrupted:
        look at its ``status``). ``allow_pickle``, ``allow_code``: this run may unpickle a
        trusted model, run a model's processing code (local registries: a server follows its
        operator's ``serve --allow-pickle`` / ``--allow-code``). ``sandbox``: ``bwrap``
        (every evaluator process confined: ``pinbench run --sandbox``) or ``none`` (recorded
        unsandboxed); ``audit``: the host keeps the clock and audits (``pinbench run --audit``);
        local registries only."""
        from pinbench.errors import PinbenchError, UserError

        quiet: Say = say or (lambda _: None)
        if self.registry.remote:
            from pinbench.sdk.local_decisions import check_local_decisions

            check_local_decisions(allow_pickle, allow_code, sandbox, audit)
            remote = self.registry.server()
            queued = remote.submit(self.body, runner, trace)
            quiet(f"queued run {queued['id']} on {remote.url}")
            info = remote.wait(queued["id"], quiet)
            if check and info["status"] != "succeeded":
                raise UserError(f"run {info['id']} {info['status']}: {info['error']}")
            return Run(info, self.registry)
        import uuid

        from pinbench.evaluator.records.run_view import RunNotFound, show_run
        from pinbench.evaluator.run import run_lockfile

        ws = self.registry.workspace()
        run_id = str(uuid.uuid4())
        try:
            run_lockfile(
                ws,
                self.body,
                runner=runner,
                say=quiet,
                run_id=run_id,
                trace=trace,
                allow_pickle=allow_pickle,
                allow_code=allow_code,
                stop=stop,
                sandbox=sandbox,
                audit=audit,
            )
        except PinbenchError as exc:
            if check:
                raise
            try:
                recorded = show_run(ws, run_id)
            except RunNotFound:
                raise exc from None
            quiet(f"run {run_id[:8]} {recorded['status']}: {exc}")
            return Run(recorded, self.registry)
        from pinbench.series.watch import LOCAL_WATCH_S, watch_quietly

        found = watch_quietly(ws, run_id, seconds=LOCAL_WATCH_S, say=quiet)  # as a server does
        for alert in found:
            quiet(f"alert {alert['id']}: {alert['detail']['reason']}")
        return Run(show_run(ws, run_id), self.registry)


class Run:
    """A recorded run: ``info`` is its record as the REST API shows it (``id``, ``status``,
    the metrics by name, ``units``, ``details``, ``lockfile_body``, ...)."""

    def __init__(self, info: dict[str, Any], registry: Registry) -> None:
        self.info = info
        self.registry = registry

    def __repr__(self) -> str:
        return f"Run({self.id[:12]}, {self.status})"

    @property
    def id(self) -> str:
        return str(self.info["id"])

    @property
    def status(self) -> str:
        return str(self.info["status"])

    @property
    def metrics(self) -> dict[str, Any]:
        """Every recorded metric by name (units in ``units``); a metric the run's task left
        undefined is None, never 0."""
        units = self.info.get("units")
        if units is None:  # a list row: fetch the whole record once
            self.info = self.registry.run(self.id).info
            units = self.info["units"]
        return {name: self.info.get(name) for name in units}

    @property
    def units(self) -> dict[str, str]:
        self.metrics  # noqa: B018 (loads the whole record when this is a list row)
        units: dict[str, str] = self.info["units"]
        return units

    def lockfile(self) -> Lockfile:
        """The lockfile this run ran, as the registry recorded it."""
        from pinbench.registry.lockfile import Lockfile as LockfileBody

        digest = str(self.info["lockfile"])
        if self.registry.remote:
            return Lockfile(self.registry.server().lockfile(digest), self.registry)
        with self.registry.workspace().reads() as rows:
            ((text,),) = rows("SELECT body FROM lockfiles WHERE digest = :d", {"d": digest})
        body = LockfileBody.from_bytes(str(text).encode(), source=f"lockfile {digest[:12]}")
        return Lockfile(body, self.registry)

    def latencies(self) -> npt.NDArray[np.float64]:
        """The raw per-query latencies in seconds (read from the blob store and checked
        against the run's recorded sha256); empty for a run that recorded none."""
        import numpy as np

        self.metrics  # noqa: B018
        digest = self.info.get("latencies_sha256")
        if not digest:
            return np.zeros(0, dtype=np.float64)
        if self.registry.remote:
            ns = _remote_array(self.registry, digest)
        else:
            from pinbench.evaluator.records.run_blobs import latencies_of

            ns = latencies_of(self.registry.workspace(), digest)
        out: npt.NDArray[np.float64] = ns.astype(np.float64) / 1e9
        return out

    def token_times(self) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
        """A text-generation run's raw per-query times to first token (seconds) and answer
        lengths (tokens), in the order of ``latencies()`` (checked against the recorded
        sha256); empty for any other run. TPOT is ``(latency - ttft) / (tokens - 1)``."""
        import numpy as np

        self.metrics  # noqa: B018
        generation = (self.info.get("details") or {}).get("generation") or {}
        digest = generation.get("tokens_sha256")
        if not digest:
            return np.zeros(0, dtype=np.float64), np.zeros(0, dtype=np.int64)
        if self.registry.remote:
            rows = _remote_array(self.registry, digest)
        else:
            from pinbench.evaluator.records.run_blobs import array_of

            rows = array_of(self.registry.workspace(), digest, "token times")
        return rows[:, 0].astype(np.float64) / 1e9, rows[:, 1].astype(np.int64)

    def export_outputs(
        self, path: Path, *, force: bool = False, log: str | None = None
    ) -> Exported:
        """Write the raw outputs an accuracy run recorded to an ``.npy`` file, checked against
        the run's sha256 while they are copied (never a pickle; nothing written otherwise);
        with ``log`` (``summary``, ``detail``, ``accuracy``), LoadGen's own log of the run."""
        from pinbench.evaluator.records.run_outputs import export_here, export_outputs

        if self.registry.remote:
            remote = self.registry.server()
            return export_outputs(remote.run(self.id), remote.blob, path, force=force, log=log)
        return export_here(self.registry.workspace(), self.id, path, force=force, log=log)

    def rerun(
        self,
        *,
        repeat: int | None = None,
        runner: str | None = None,
        band: float | None = None,
        trace: str | None = None,
        allow_pickle: bool = False,
        say: Say | None = None,
        stop: Stop | None = None,
        allow_code: bool = False,
        sandbox: str = "bwrap",
    ) -> Verdict:
        """Run this run's lockfile again ``repeat`` times (default 3) and judge whether it
        reproduced (inputs, exact metrics, latency within ``band``, default 10%). Local
        registries only."""
        from pinbench.evaluator.verdicts.rerun import REPEAT, rerun
        from pinbench.evaluator.verdicts.verdict import BAND

        ws = self.registry._local("rerun")
        return rerun(
            ws,
            self.id,
            repeat=REPEAT if repeat is None else repeat,
            runner=runner,
            say=say or (lambda _: None),
            trace=trace,
            allow_pickle=allow_pickle,
            stop=stop,
            band=BAND if band is None else band,
            allow_code=allow_code,
            sandbox=sandbox,
        )

    def compare(self, *others: Run | str) -> dict[str, Any]:
        """This run beside others: which inputs differ, each metric per run."""
        ids = [self.id, *(o.id if isinstance(o, Run) else o for o in others)]
        return self.registry.compare(ids)

    def report(self, fmt: str = "html", *, others: tuple[Run, ...] = ()) -> bytes:
        """A report of this run (and ``others``) as ``html``, ``md``, ``csv`` or ``parquet``
        (``pinbench runs report``'s formats)."""
        return self.registry.report([self.id, *(o.id for o in others)], [fmt])[fmt]

    def attest(self) -> tuple[bytes, bool]:
        """The run's signed in-toto attestation (one JSON line) and whether it was made now."""
        return self.registry.attest(self.id)

    def attestation(self) -> bytes | None:
        """The run's recorded attestation (one DSSE line), or None when it has none (``attest``
        makes one)."""
        if self.registry.remote:
            from pinbench.remote_errors import RemoteRefused

            try:
                return (
                    self.registry.server()
                    .call("GET", f"/api/v1/runs/{self.id}/attestation")
                    .content
                )
            except RemoteRefused as exc:
                if exc.status == 404:
                    return None
                raise
        return self.registry.hosting().recorded_attestation(self.id)

    def trace(self) -> dict[str, Any]:
        """The run's Chrome trace (a run at trace level basic or full), checked against its
        recorded sha256; ``NoTrace`` when it recorded none."""
        self.metrics  # noqa: B018
        if self.registry.remote:
            trace: dict[str, Any] = self.registry.server().trace(self.info)
            return trace
        from pinbench.trace.summary import trace_of

        return trace_of(self.registry.workspace(), self.info)

    def shown_metrics(self) -> list[tuple[str, str]]:
        """(label, value as text) of each metric the run's task defines and recorded, as the
        task shows them: ``[("top-1", "0.8000"), ...]``."""
        from pinbench.tasks.registry import task

        body = self.info.get("lockfile_body") or self.registry.run(self.id).info["lockfile_body"]
        dataset = body.get("dataset")
        if not dataset:
            return []
        metrics = self.metrics
        return [
            (m.label, m.show(metrics[m.name]))
            for m in task(dataset["task"]).metrics
            if m.name in metrics
        ]

    def headline(self) -> str:
        """The run's task's headline metric as its label and value (``top-1 0.9689``,
        ``ROUGE-L 0.5120``); empty where the run recorded none."""
        from pinbench.run_metrics import headline

        return headline({"task": self.info.get("task"), "metrics": self.metrics})

    def view(self) -> dict[str, Any]:
        """The run as the REST API shows it: its metrics under ``metrics``."""
        metrics = self.metrics
        out = {k: v for k, v in self.info.items() if k not in metrics}
        out["metrics"] = metrics
        return out


def _remote_array(registry: Registry, digest: str) -> npt.NDArray[Any]:
    """A ``.npy`` blob fetched from the server, checked against its sha256, loaded without
    pickles."""
    import hashlib
    import io

    import numpy as np

    from pinbench.remote_errors import RemoteFailed

    if not (len(digest) == 64 and all(c in "0123456789abcdef" for c in digest)):
        # the digest comes from the server's record: it names a blob, never another path
        raise RemoteFailed(
            f"{registry.url} named a latencies blob that is no sha256: {digest[:80]!r}"
        )
    data = b"".join(registry.server().blob(digest))
    if hashlib.sha256(data).hexdigest() != digest:
        raise RemoteFailed(f"{registry.url} answered blob {digest[:12]} with other bytes")
    out: npt.NDArray[Any] = np.load(io.BytesIO(data), allow_pickle=False)
    return out
