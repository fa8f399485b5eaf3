"""``Registry.studies()``: run a study on this machine, show its matrix, report its analyses,
rerun its cells; shown and reported through a server's REST API too (``pinbench.studies``)."""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

if TYPE_CHECKING:
    from pinbench.sdk.registry import Registry
    from pinbench.studies.spec import Study
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
        before, in turn; how many ran, were skipped as done, failed and were refused.
        ``allow_code``: cells may run their models' processing code (as ``run --allow-code``).
        Behind a server URL the study (its systems a cluster's agents) is posted to the server,
        which runs it (its own code policy applies), and followed until the server is done
        with it; ``stop`` stops following (the server runs on)."""
        from dataclasses import asdict

        from pinbench.studies.execute import run_study
        from pinbench.studies.spec import load_study

        study, source = load_study(where)
        if self.registry.url is not None:
            if allow_code:
                from pinbench.errors import UserError

                raise UserError(
                    "--allow-code: a server runs processing code only as its operator allows "
                    "(pinbench serve --allow-code); give it to the server, not the study"
                )
            definition = study.to_data() | ({"runner": runner} if runner else {})
            return self._run_there(definition, source, say or (lambda _: None), stop)
        ws = self.registry._local("study run")
        said = say or (lambda _: None)
        ran = run_study(
            ws, study, source, say=said, runner=runner, stop=stop, allow_code=allow_code
        )
        return asdict(ran)

    def _run_there(
        self, definition: dict[str, Any], source: str, say: Say, stop: Stop | None
    ) -> dict[str, Any]:
        """POST the study to the server, then follow its matrix, saying each cell that ends."""
        import re
        import time

        remote = self.registry.server()
        named = re.sub(r"[^A-Za-z0-9_.@/-]", "-", source).lstrip("_.@/-")[:100] or "posted"
        body = {"definition": definition, "source": named}
        started = remote.json("POST", "/api/v1/studies", json=body)
        name, todo = started["name"], set(started["to_run"])
        counts = {"ran": 0, "skipped": started["cells"] - len(todo), "failed": 0, "refused": 0}
        counts["unfinished"] = 0
        said: dict[str, tuple[Any, ...]] = {}
        path = f"/api/v1/studies/{quote(name, safe='')}"
        while True:
            shown = remote.json("GET", path)
            cells = shown["cells"]
            for n, cell in enumerate(cells, 1):
                state, key, reason = cell["state"], cell["key"], cell["reason"]
                ended = state in ("done", "failed", "refused")
                waiting = state == "planned" and bool(reason)  # its agent gone, say
                now = (state, cell["run"], reason)
                if key in todo and (ended or waiting) and said.get(key) != now:
                    said[key] = now  # each change said: a cell lost with its agent runs again
                    run = f" run {cell['run'][:8]}" if cell["run"] else ""
                    why = f" {reason}" if reason and state != "done" else ""
                    say(f"[{n}/{len(cells)}] {_label(cell)}: {state}{run}{why}")
            if not shown.get("active"):
                final = [c["state"] for c in cells if c["key"] in todo]
                counts["ran"] = final.count("done")
                counts["failed"], counts["refused"] = final.count("failed"), final.count("refused")
                unfinished = len(final) - counts["ran"] - counts["failed"] - counts["refused"]
                if unfinished:  # the server stopped running it (it drained, or restarted)
                    say(f"study {name}: the server stopped running it with {unfinished} cells "
                        "not finished: post it again to resume")  # fmt: skip
                    counts["unfinished"] = unfinished
                break
            if stop is not None and stop.is_set():
                say(f"stopped following study {name}: the server runs it on")
                break
            time.sleep(FOLLOW_S)
        return {"name": name, **counts}

    def parse(self, definition: object, *, source: str) -> Study:
        """A study's definition (as a study file holds it) checked as ``study run`` checks a
        file; ``source``, what it came from as recorded, is letters, digits and _.@/-."""
        from pinbench.errors import UserError
        from pinbench.studies.spec import LABEL, parse_study

        if not LABEL.match(source):
            raise UserError(f"source {source[:40]!r}: letters, digits and _.@/- only")
        return parse_study(definition, source=source)

    def requests(self, name: str, *, files: bool = False) -> builtins.list[dict[str, Any]]:
        """Each cell of the study ``name`` (a built-in study, or with ``files`` a study file) in
        order, with the request ``study run`` locks for it: its ``model``, ``framework``,
        ``scenario`` (the study's name for it), ``system`` and ``request``. Read from the
        definition alone: nothing is recorded or asked of a server."""
        from pinbench.studies.cells import cells
        from pinbench.studies.spec import load_study

        study, source = load_study(name, files=files)
        return [
            {
                "model": c.entry.model,
                "framework": c.entry.framework,
                "scenario": c.scenario,
                "system": c.system.name,
                "request": c.request,
            }
            for c in cells(study, source=source)
        ]

    def list(self) -> builtins.list[dict[str, Any]]:
        """Every recorded study, newest first, with its cells counted by state."""
        from pinbench.studies.store import list_studies

        rows: builtins.list[dict[str, Any]] = self.registry.either(
            lambda remote: remote.pages("/api/v1/studies", {}, lambda s: str(s["name"])),
            list_studies,
        )
        return rows

    def show(self, name: str, *, files: bool = True) -> dict[str, Any]:
        """The study's matrix: every cell with its state, lockfile, run and figures. A study
        not run yet (a built-in study's name, or with ``files`` a study file) lists its cells
        as planned. A server passes ``files=False``: a caller's name never opens a file."""
        from pinbench.studies.errors import StudyNotFound

        def here(ws: Any) -> dict[str, Any]:
            from pinbench.db.schema import SchemaNotCurrent
            from pinbench.studies.matrix import planned_matrix, study_matrix
            from pinbench.studies.spec import load_study

            try:
                return study_matrix(ws, name)
            except StudyNotFound:
                if not _file_or_builtin(name, files=files):
                    raise
            except SchemaNotCurrent as exc:  # a home not made yet: nothing ran here
                if exc.current is not None or not _file_or_builtin(name, files=files):
                    raise
                return planned_matrix(*load_study(name, files=files))
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


FOLLOW_S = 1.0


def _label(cell: dict[str, Any]) -> str:
    """A cell of a study's matrix as ``study run`` names it (``studies.cells.Cell.label``)."""
    batch = f" batch {cell['batch_size']}" if cell["batch_size"] != 1 else ""
    return f"{cell['model']} {cell['framework']} {cell['scenario']}{batch} on {cell['system']}"


def _file_or_builtin(name: str, *, files: bool) -> bool:
    """Whether ``name`` is a built-in study's name, or (``files``) a file that exists."""
    from pathlib import Path

    from pinbench.studies.spec import BUILTIN, NAME

    if NAME.match(name) and (BUILTIN / f"{name}.yaml").exists():
        return True
    return files and Path(name).exists()
