"""``Registry.studies()``: run a study on this machine, show its matrix, report its analyses,
rerun its cells; shown and reported through a server's REST API too (``pinbench.studies``)."""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

if TYPE_CHECKING:
    from pinbench.sdk.registry import Registry
    from pinbench.worker.stop import Stop

Say = Callable[[str], None]


class Studies:
    """A study file names models, frameworks, datasets, scenarios and systems; each cell is
    one lockfile and one recorded run (docs/study.md)."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    def run(
        self,
        where: str,
        *,
        runner: str | None = None,
        say: Say | None = None,
        stop: Stop | None = None,
        allow_code: bool = False,
    ) -> dict[str, Any]:
        """Run the study in the file ``where`` (or a built-in one by name): every cell not done
        before, in turn; how many ran, were skipped as done, failed and were refused. Local
        registries only. ``allow_code``: cells may run their models' processing code (as ``run
        --allow-code``)."""
        from dataclasses import asdict

        from pinbench.studies.execute import run_study
        from pinbench.studies.spec import load_study

        ws = self.registry._local("study run")
        study, source = load_study(where)
        said = say or (lambda _: None)
        ran = run_study(
            ws, study, source, say=said, runner=runner, stop=stop, allow_code=allow_code
        )
        return asdict(ran)

    def list(self) -> builtins.list[dict[str, Any]]:
        """Every recorded study, newest first, with its cells counted by state."""
        from pinbench.studies.store import list_studies

        rows: builtins.list[dict[str, Any]] = self.registry.either(
            lambda remote: remote.json("GET", "/api/v1/studies"), list_studies
        )
        return rows

    def show(self, name: str, *, files: bool = True) -> dict[str, Any]:
        """The study's matrix: every cell with its state, lockfile, run and figures. A study
        not run yet (a built-in study's name, or with ``files`` a study file) lists its cells
        as planned. A server passes ``files=False``: a caller's name never opens a file."""
        from pinbench.studies.errors import StudyNotFound

        def here(ws: Any) -> dict[str, Any]:
            from pinbench.studies.matrix import planned_matrix, study_matrix
            from pinbench.studies.spec import load_study

            try:
                return study_matrix(ws, name)
            except StudyNotFound:
                if not _file_or_builtin(name, files=files):
                    raise
            study, source = load_study(name, files=files)
            try:
                return study_matrix(ws, study.name)
            except StudyNotFound:
                return planned_matrix(study, source)

        found: dict[str, Any] = self.registry.either(
            lambda remote: remote.json("GET", f"/api/v1/studies/{quote(name, safe='')}"), here
        )
        return found

    def report(self, name: str, *, files: bool = True) -> bytes:
        """The study's analyses as a self-contained HTML page (``files`` as for ``show``)."""
        from pinbench.studies.report import study_html

        if self.registry.url is not None:
            path = f"/api/v1/studies/{quote(name, safe='')}/report"
            return bytes(self.registry.server().call("GET", path).content)
        return study_html(self.show(name, files=files)).encode()

    def forget(self, name: str) -> int:
        """Remove the recorded study ``name`` and its cells (its runs and lockfiles stay);
        how many cells it had. Local registries only."""
        from pinbench.studies.store import forget_study

        return forget_study(self.registry._local("study forget"), name)

    def rerun(
        self,
        name: str,
        *,
        repeat: int = 3,
        say: Say | None = None,
        stop: Stop | None = None,
        allow_code: bool = False,
    ) -> builtins.list[dict[str, Any]]:
        """Rerun every done cell's lockfile ``repeat`` times on its system; each cell's
        verdict (reproduced or not, and why). Local registries only. ``allow_code``: as
        ``run``."""
        from pinbench.studies.reruns import rerun_study

        ws = self.registry._local("study rerun")
        said = say or (lambda _: None)
        return rerun_study(ws, name, repeat=repeat, say=said, stop=stop, allow_code=allow_code)


def _file_or_builtin(name: str, *, files: bool) -> bool:
    """Whether ``name`` is a built-in study's name, or (``files``) a file that exists."""
    from pathlib import Path

    from pinbench.studies.spec import BUILTIN, NAME

    if NAME.match(name) and (BUILTIN / f"{name}.yaml").exists():
        return True
    return files and Path(name).exists()
