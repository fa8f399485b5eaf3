"""What ``Registry`` reads of recorded runs: a page of runs (filtered, newest first), one run,
runs side by side, a report, a run's attestation. A mixin of ``Registry``
(``pinbench.Registry.runs`` and so on), kept apart so that each module stays small."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar, cast

if TYPE_CHECKING:
    from pinbench.remote import Remote
    from pinbench.sdk.registry import Registry
    from pinbench.sdk.runs import Run
    from pinbench.workspace import Workspace

T = TypeVar("T")


class RunRecords:
    if TYPE_CHECKING:  # Registry's, which these methods use
        url: str | None

        def either(self, there: Callable[[Remote], T], here: Callable[[Workspace], T]) -> T: ...

        def server(self) -> Remote: ...

        def workspace(self) -> Workspace: ...

    def runs(
        self,
        limit: int | None = 20,
        *,
        model: str | None = None,
        framework: str | None = None,
        status: str | None = None,
        system: str | None = None,
        since: str | datetime | None = None,
        until: str | datetime | None = None,
        after: str | None = None,
    ) -> builtins.list[Run]:
        """The most recent runs, newest first: at most ``limit``, those of ``model`` and
        ``framework`` (``NAME`` or ``NAME@VERSION``), ``status``, ``system``, started at or
        after ``since`` and before ``until`` (ISO 8601, UTC unless a zone is given). The next
        page is ``after=`` the last run's id."""
        from pinbench.evaluator.records.run_filter import RunFilter
        from pinbench.evaluator.records.run_list import list_runs
        from pinbench.sdk.runs import Run

        where = RunFilter.parse(
            {
                "model": model,
                "framework": framework,
                "status": status,
                "system": system,
                "since": since.isoformat() if isinstance(since, datetime) else since,
                "until": until.isoformat() if isinstance(until, datetime) else until,
            }
        )
        rows = self.either(
            lambda remote: remote.runs(limit, where.words(), after),
            lambda ws: list_runs(ws, limit, where=where, after=after),
        )
        return [Run(row, cast("Registry", self)) for row in rows]

    def run(self, run_id: str) -> Run:
        """One recorded run (an id or a unique prefix), with its details."""
        from pinbench.evaluator.records.run_view import show_run
        from pinbench.sdk.runs import Run

        info = self.either(lambda remote: remote.run(run_id), lambda ws: show_run(ws, run_id))
        return Run(info, cast("Registry", self))

    def compare(self, run_ids: Sequence[str]) -> dict[str, Any]:
        """Runs side by side: which inputs differ, each metric per run."""
        from pinbench.evaluator.records.run_compare import compare_runs

        ids = list(run_ids)
        return self.either(lambda remote: remote.compare(ids), lambda ws: compare_runs(ws, ids))

    def report(self, run_ids: Sequence[str], formats: Sequence[str]) -> dict[str, bytes]:
        """A report of runs in each of ``formats`` (``html``, ``md``, ``csv``, ``parquet``):
        the runs are gathered once."""
        ids = list(run_ids)
        if self.url is not None:
            remote = self.server()
            return {f: remote.report(ids, f) for f in formats}
        from pinbench import reports

        gathered = reports.gather(self.workspace(), ids)
        return {f: reports.render(gathered, f)[1] for f in formats}

    def attest(self, run_id: str) -> tuple[bytes, bool]:
        """A run's signed in-toto attestation (one JSON line) and whether it was made now (a
        run recorded before attestations existed is attested after the fact)."""
        if self.url is not None:
            from pinbench.remote_errors import RemoteRefused

            remote = self.server()
            path = f"/api/v1/runs/{run_id}/attestation"
            try:
                return remote.call("GET", path).content, False
            except RemoteRefused as exc:
                if exc.status != 404:
                    raise
            return remote.call("POST", path).content, True
        from pinbench.provenance.attest import attestation_for

        return attestation_for(self.workspace(), run_id)
